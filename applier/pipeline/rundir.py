"""A run's folder (``applier run --out RUN_DIR``): what replay, shrink and export start from.

config.json     the configuration (config.to_dict(); targets read ***)
inputs.json     {"changes", "snapshot": absolute paths or null, "custom_sql": [copies below],
                "capture": {"format", "fold_key_changes", "capture_instance"} for captured traffic}
custom/         copies of the custom SQL scripts, in order
report.json     the JSON report (a run that ends early: verdict unknown and why)
schedule.jsonl  the steps every stream took, in the order they ran (applier.pipeline.schedule);
                with several subscriptions, schedule-<name>.jsonl each
outcome.json    {"verdict", "conflicts": [[lsn, stream, class]], "divergent": [[article, key]]}:
                what a replay compares
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from applier.config import Config
from applier.pipeline.schedule import write_schedule
from applier.results import RunResult


def prepare_run_dir(
    out: str | Path,
    config: Config,
    changes: str | Path | None,
    snapshot: str | Path | None,
    custom_sql: Sequence[str | Path],
    capture: Any = None,
) -> list[Path]:
    """Write the run's configuration and inputs before it starts; the custom SQL copies (in order)."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(
        json.dumps(config.to_dict(), indent=2, default=str) + "\n", encoding="utf-8"
    )
    copies: list[Path] = []
    if custom_sql:
        (d / "custom").mkdir(exist_ok=True)
    for i, src in enumerate(custom_sql):
        dst = d / "custom" / f"{i:02d}-{Path(src).name}"
        if Path(src).resolve() != dst.resolve():
            shutil.copyfile(src, dst)
        copies.append(dst)
    inputs: dict[str, Any] = {
        "changes": str(Path(changes).resolve()) if changes is not None else None,
        "snapshot": str(Path(snapshot).resolve()) if snapshot is not None else None,
        "custom_sql": [str(p.relative_to(d)) for p in copies],
    }
    if capture is not None and capture.format != "canonical":
        # how the changes are read (an ODBC source is not kept: its string may hold secrets)
        inputs["capture"] = {
            "format": capture.format,
            "fold_key_changes": capture.fold_key_changes,
            "capture_instance": capture.capture_instance,
        }
    (d / "inputs.json").write_text(json.dumps(inputs, indent=2) + "\n", encoding="utf-8")
    return copies


def outcome(result: RunResult) -> dict[str, Any]:
    """What a replay must get again: the verdict, every conflict, the divergent keys."""
    return {
        "verdict": result.verdict.value,
        "conflicts": sorted(
            ([lsn, stream, cls] for s in result.subscriptions for lsn, stream, cls in s.conflict_events),
            key=lambda c: (c[0] if c[0] is not None else -1, c[1] if c[1] is not None else -1, c[2] or ""),
        ),
        "divergent": sorted(
            ([d.article, list(d.key)] for _, d in result.divergent), key=lambda x: json.dumps(x, default=str)
        ),
    }


def finish_run_dir(out: str | Path, result: RunResult) -> Mapping[str, str]:
    """Write the schedule(s) and the outcome; the files written, by name."""
    d = Path(out)
    files: dict[str, str] = {}
    subs = result.subscriptions
    for s in subs:
        name = "schedule.jsonl" if len(subs) == 1 else f"schedule-{s.name.replace('/', '_')}.jsonl"
        files[name] = str(write_schedule(s.schedule, d / name))
    path = d / "outcome.json"
    path.write_text(json.dumps(outcome(result), indent=2, default=str) + "\n", encoding="utf-8")
    files["outcome"] = str(path)
    return files
