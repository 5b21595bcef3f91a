"""The apply stage's summary of one subscriber, tallied from its events in two Spark jobs."""

from __future__ import annotations

import json

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from applier.results import CONFLICT_CLASSES, ApplySummary

RESET_LOG_SHOWN = 50  # reset lines kept in the summary (the events keep every one)


def summarize(
    events: DataFrame,
    *,
    rounds: int,
    streams: int,
    commands: int,
    transactions: int,
    apply_seconds: float,
    segments: int = 1,
    snapshot_rows: int = 0,
    source: str = "",
) -> ApplySummary:
    """Outcomes, conflicts and rounds counted over the events; the reset log and the per-stream
    figures from the few ``log`` and ``stream`` events."""
    outcomes: dict[str, int] = {}
    conflicts: dict[str, int] = {}
    by_round: dict[str, int] = {}
    tallies = (
        events.where("kind IN ('command', 'batch', 'conflict', 'round')")
        .groupBy("kind", "outcome", "class")
        .agg(F.sum(F.when(F.col("kind") == "batch", F.col("n")).otherwise(F.lit(1))).alias("count"))
        .collect()
    )
    for r in tallies:
        kind, count = r["kind"], int(r["count"])
        if kind in ("command", "batch"):
            outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + count
        elif kind == "conflict":
            conflicts[r["class"]] = conflicts.get(r["class"], 0) + count
        else:
            by_round[r["outcome"]] = by_round.get(r["outcome"], 0) + count
    few = events.where("kind IN ('log', 'stream')").collect()
    logs = tuple(
        r["message"] + f" (round {r['round']}: {r['class']})"
        for r in sorted(
            (r for r in few if r["kind"] == "log"), key=lambda r: (r["round"] is not None, r["round"] or 0)
        )[:RESET_LOG_SHOWN]
    )
    stream_stats = tuple(
        {
            "stream": r["stream"],
            "commands": r["n"],
            "seconds": round(r["seconds"], 3),
            **json.loads(r["message"]),
        }
        for r in sorted((r for r in few if r["kind"] == "stream"), key=lambda r: r["stream"])
    )
    by_class = {c: conflicts.get(c, 0) for c in CONFLICT_CLASSES}
    by_class.update({k: v for k, v in conflicts.items() if k not in by_class})
    return ApplySummary(
        commands=commands,
        transactions=transactions,
        rounds=rounds,
        rounds_parallel=by_round.get("parallel", 0),
        resets=by_round.get("reset", 0) + by_round.get("fatal", 0),
        reset_log=logs,
        conflicts=by_class,
        outcomes=outcomes,
        streams=streams,
        stream_stats=stream_stats,
        apply_seconds=round(apply_seconds, 3),
        fatal=by_round.get("fatal", 0) > 0,
        stopped=next((r["message"] for r in few if r["kind"] == "log" and r["outcome"] == "stopped"), None),
        segments=segments,
        snapshot_rows=snapshot_rows,
        source=source,
    )
