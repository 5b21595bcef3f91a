"""``applier replay RUN_DIR``: the same stream, partition and schedule on a fresh subscriber.

The run folder's configuration and inputs are applied again (tables created anew, the
snapshot loaded again), following the run's recorded ``schedule.jsonl`` (a controlled
schedule, strategy ``recorded``); a folder without one is run with its own schedule settings.
The outcome (verdict, conflicts, divergent keys) is compared with the recorded
``outcome.json``: the same (exit 0), or what differs (exit 1).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from applier.errors import InputError
from applier.leftovers import owned_dir
from applier.repro.case import read_run_dir
from applier.repro.runner import Attempt, attempt, differences, follow


@dataclass(frozen=True)
class Replayed:
    recorded: Mapping[str, Any]
    attempt: Attempt
    differences: tuple[str, ...]
    run_dir: Path | None  # the replay's own run folder (None: not kept)

    @property
    def same(self) -> bool:
        return not self.differences


def replay(run_dir: str | Path, target: Any, *, out: str | Path | None = None, spark: Any = None) -> Replayed:
    folder = read_run_dir(run_dir)
    if folder.outcome is None:
        raise InputError(f"{folder.path}: no outcome.json (the run did not finish); nothing to compare")
    config = follow(folder.config, folder.schedule) if folder.schedule is not None else folder.config
    keep = out is not None
    work = None if out is not None else owned_dir("applier-work-replay-")  # applier clean: after a kill -9
    where = Path(out) if out is not None else Path(str(work)) / "run"
    try:
        got = attempt(
            config,
            target,
            changes=folder.changes,
            snapshot=folder.snapshot,
            custom_sql=folder.custom_sql,
            out_dir=where,
            spark=spark,
        )
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
    return Replayed(
        folder.outcome, got, tuple(differences(folder.outcome, got.outcome)), where if keep else None
    )
