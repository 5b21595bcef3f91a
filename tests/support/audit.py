"""What exactly-once looks like in an audit trigger's table: the kill-and-resume tests
(tests/faults/test_kill_resume.py on PostgreSQL, tests/tsql/test_faults.py on Babelfish) install a
trigger recording every committed row change as (operation, key) and compare it with the
generated stream's own."""

from __future__ import annotations

import json
from collections import Counter

from applier.sources import hazards
from applier.sources.generator import LANES, generate_lane


def expected_changes(cfg) -> Counter[tuple[str, int]]:  # type: ignore[no-untyped-def]
    """The (operation, key) of every row change the stream of ``cfg``'s workload makes,
    snapshot included: what an audit trigger on a subscriber that applied it exactly once holds."""
    lanes = hazards.generate_lane if cfg.workload.kind in hazards.HAZARDS else generate_lane
    out: Counter[tuple[str, int]] = Counter()
    for lane in range(LANES):
        for kind, r in lanes(cfg.articles, cfg.workload, lane):
            if kind == "snapshot":
                out["I", json.loads(r[2])["id"]] += 1
                continue
            op, before, after = r[4], r[6], r[7]
            image = json.loads(after if op in "IU" else before)
            out[op, image["id"]] += 1
    return out
