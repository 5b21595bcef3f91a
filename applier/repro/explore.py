"""``applier explore``: K seeded controlled schedules of one stream, until one fails.

Try i runs the configured stream (generated, or the change files) with ``schedule =
"controlled"``, ``schedule_seed`` = first seed + i and the chosen strategy (PCT by default:
probabilistic concurrency testing, Burckhardt et al., ASPLOS 2010), under the model, partition
and error policy the configuration says. Every try installs its tables anew and loads the
snapshot again (``applier.api.run`` does both), so no try sees another's rows. The first try
that does not converge (diverged, unknown, or an unexpected error) stops the exploration: its
seed is printed and its run folder kept (``OUT/seed-<S>``) for ``applier replay``, ``shrink``
and ``export``; the folders of the tries that converged are removed. ``OUT/explore.json``
lists every try.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from applier.config import Config
from applier.repro.runner import ERROR, Attempt, Warm, attempt, with_schedule


@dataclass(frozen=True)
class Try:
    index: int
    seed: int
    verdict: str
    seconds: float
    snapshot_rows: int | None
    error: str | None = None
    divergent: int = 0
    conflicts: int = 0


@dataclass
class Exploration:
    strategy: str
    budget: int
    tries: list[Try] = field(default_factory=list)
    found: Try | None = None
    run_dir: Path | None = None
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "budget": self.budget,
            "tries": [asdict(t) for t in self.tries],
            "found": asdict(self.found) if self.found else None,
            "run_dir": str(self.run_dir) if self.run_dir else None,
            "seconds": round(self.seconds, 2),
        }


def _snapshot_rows(a: Attempt) -> int | None:
    if a.result is None:
        return None
    return int(sum(s.summary.snapshot_rows for s in a.result.subscriptions))


def explore(
    config: Config,
    target: Any,
    *,
    budget: int,
    out: str | Path,
    strategy: str = "pct",
    first_seed: int = 0,
    pct_depth: int | None = None,
    changes: str | Path | None = None,
    snapshot: str | Path | None = None,
    custom_sql: Sequence[str | Path] = (),
    spark: Any = None,
    on_try: Callable[[Try], None] | None = None,
) -> Exploration:
    """Run up to ``budget`` seeded schedules; stop at the first that does not converge."""
    from applier.errors import ApplierError, ConfigError

    if budget < 1:
        raise ConfigError(f"--budget: at least 1 try, got {budget}")
    if strategy not in ("pct", "random"):
        raise ConfigError(f"--strategy: pct or random, not {strategy!r}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    run: dict[str, Any] = {"schedule": "controlled", "schedule_strategy": strategy, "schedule_file": None}
    if pct_depth is not None:
        run["pct_depth"] = pct_depth
    base = with_schedule(config, **run)
    ex = Exploration(strategy, budget)
    t0 = time.perf_counter()
    loaded: int | None = None
    warm = Warm(target)  # every try on the tables the one before emptied (or installed anew)
    for i in range(budget):
        seed = first_seed + i
        run_dir = out / f"seed-{seed}"
        if run_dir.exists():
            shutil.rmtree(run_dir)
        a = attempt(
            with_schedule(base, schedule_seed=seed),
            warm,
            changes=changes,
            snapshot=snapshot,
            custom_sql=custom_sql,
            out_dir=run_dir,
            spark=spark,
        )
        rows = _snapshot_rows(a)
        t = Try(
            i,
            seed,
            a.verdict,
            round(a.seconds, 2),
            rows,
            a.outcome.get("error"),
            len(a.outcome.get("divergent") or ()),
            len(a.outcome.get("conflicts") or ()),
        )
        ex.tries.append(t)
        if on_try is not None:
            on_try(t)
        if a.verdict == ERROR:  # the folder has no outcome: say what the try raised
            (run_dir / "outcome.json").write_text(json.dumps(a.outcome, indent=2) + "\n", encoding="utf-8")
        if a.failed:
            ex.found, ex.run_dir = t, run_dir
            break
        # Every try starts from the snapshot: each loads it into empty tables.
        if loaded is not None and rows is not None and rows != loaded:
            raise ApplierError(f"try {i} (seed {seed}) loaded {rows} snapshot rows, the first try {loaded}")
        loaded = rows if loaded is None else loaded
        shutil.rmtree(run_dir, ignore_errors=True)
    ex.seconds = time.perf_counter() - t0
    (out / "explore.json").write_text(json.dumps(ex.to_json(), indent=2) + "\n", encoding="utf-8")
    return ex
