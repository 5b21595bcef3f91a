"""Three seeded ordering bugs, each found by applier explore within a budget of 200 schedules
on a stream of at least 1,000 transactions, shrunk to at most 3 transactions, exported, and the
exported pytest test failing while the bug is there and passing once it is fixed:

1. a custom update procedure without the zero-row check, under key chains (agent model,
   key-hash): a link applied on another stream than the link it follows updates nothing;
2. a subscriber trigger that reads another row (independent model, key-hash): an order line
   whose order another stream has not committed yet is dropped;
3. the reorder hazard under the independent model with round-robin partitioning: the older
   of two updates of one row wins; the fix is key-hash partitioning.

Minutes each (every try and every shrink step is a whole run), so under ``make test-faults``.
The figures (tries, shrink runs, seconds) are printed and, with ``REPRO_FIGURES=file``, saved.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from applier.repro.explore import explore
from applier.repro.export import export
from applier.repro.shrink import shrink
from tests.support.repro_streams import DATA, config, orders_stream, run_pytest

# Each bug is a few dozen runs (each a whole run's Spark jobs) on 2 cores (5-9 min here with other jobs
# running): beyond the suite's 10-minute default, not beyond 40.
pytestmark = [pytest.mark.integration, pytest.mark.faults, pytest.mark.timeout(2400)]


def _replace_custom(out: Path, fixed: str) -> None:
    (custom,) = (out / "custom").glob("*.sql")
    shutil.copyfile(DATA / fixed, custom)


def _key_hash(out: Path) -> None:
    cfg = json.loads((out / "config.json").read_text())
    cfg["run"]["partition"] = "key-hash"
    (out / "config.json").write_text(json.dumps(cfg, indent=2))


@dataclass(frozen=True)
class Bug:
    config: str
    custom_sql: str | None
    fix: Callable[[Path], None]
    orders: int = 0  # > 0: the order stream of bug 2, that many orders (two transactions each)


BUGS = {
    "custom-procedure": Bug(
        "key_chain", "key_chain_update.sql", lambda out: _replace_custom(out, "key_chain_update_fixed.sql")
    ),
    "trigger": Bug(
        "orders",
        "order_lines_trigger.sql",
        lambda out: _replace_custom(out, "order_lines_trigger_fixed.sql"),
        500,
    ),
    "reorder": Bug("reorder", None, _key_hash),
}


def _save(name: str, figures: dict[str, Any]) -> None:
    print(f"\n{name}: {json.dumps(figures)}")
    path = os.environ.get("REPRO_FIGURES")
    if path:
        p = Path(path)
        saved = json.loads(p.read_text()) if p.exists() else {}
        saved[name] = figures
        p.write_text(json.dumps(saved, indent=2) + "\n")


@pytest.mark.parametrize("name", list(BUGS))
def test_seeded_bug_is_found_shrunk_and_exported(name, spark, target, tmp_path):
    bug = BUGS[name]
    changes = orders_stream(tmp_path / "stream", bug.orders) if bug.orders else None
    custom = [DATA / bug.custom_sql] if bug.custom_sql else []
    t = time.perf_counter()
    ex = explore(
        config(bug.config),
        target,
        budget=200,
        out=tmp_path / "explore",
        changes=changes,
        custom_sql=custom,
        spark=spark,
    )
    explore_s = time.perf_counter() - t
    assert ex.found is not None, f"no failing schedule in {len(ex.tries)} tries"
    assert ex.run_dir is not None
    report = json.loads((ex.run_dir / "report.json").read_text())
    assert report["transactions"] >= 1000
    assert ex.found.verdict == "diverged" and ex.found.divergent >= 1

    s = shrink(ex.run_dir, target, out=tmp_path / "shrunk", spark=spark)
    assert s.reproduced and s.minimal["transactions"] <= 3, s.to_json()

    x = export(s.run_dir, tmp_path / "export")
    before = run_pytest(x.out / "test_repro.py")
    assert before.returncode == 1 and "the subscriber did not converge" in before.stdout, before.stdout[
        -3000:
    ]
    bug.fix(x.out)
    after = run_pytest(x.out / "test_repro.py")
    assert after.returncode == 0, after.stdout[-3000:]

    _save(
        name,
        {
            "transactions": report["transactions"],
            "commands": report["commands"],
            "tries": len(ex.tries),
            "found_seed": ex.found.seed,
            "explore_seconds": round(explore_s, 1),
            "divergent_rows": report["divergent_rows"],
            "shrink_runs": s.runs,
            "shrink_seconds": round(s.seconds, 1),
            "shrink_phases": {p.name: [p.before, p.after, p.runs, round(p.seconds, 1)] for p in s.phases},
            "minimal": s.minimal,
            "exported_test_seconds": [_seconds(before.stdout), _seconds(after.stdout)],
        },
    )


def _seconds(out: str) -> float | None:
    m = re.search(r"in ([0-9.]+)s", out)
    return float(m.group(1)) if m else None
