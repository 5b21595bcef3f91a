"""The apply stage's summary of one subscriber, from its events' digest (one Spark job:
:mod:`applier.apply.digest`)."""

from __future__ import annotations

import json
from typing import Any, cast

from pyspark.sql import DataFrame

from applier.apply.digest import TIMELINE_ROUNDS, EventDigest, digest_events
from applier.apply.pace import Pace, lag_report
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
    digest: EventDigest | None = None,
    pace: Pace | None = None,
) -> ApplySummary:
    """Outcomes, conflicts and rounds counted over the events; the reset log and the per-stream
    figures from the few ``log`` and ``stream`` events. ``digest``: the events' digest, if the
    caller has it (one Spark job: :func:`applier.apply.digest.digest_events`)."""
    d = digest if digest is not None else digest_events(events)
    outcomes: dict[str, int] = {}
    conflicts: dict[str, int] = {}
    by_round: dict[str, int] = {}
    for (kind, outcome, cls), count in d.tallies.items():
        # keys as the events hold them (a NULL stays None, as before the digest)
        o, c = cast(str, outcome), cast(str, cls)
        if kind in ("command", "batch"):
            outcomes[o] = outcomes.get(o, 0) + count
        elif kind == "conflict":
            conflicts[c] = conflicts.get(c, 0) + count
        else:
            by_round[o] = by_round.get(o, 0) + count
    few = d.of("log", "stream")
    log_rows = sorted(
        (r for r in few if r["kind"] == "log"), key=lambda r: (r["round"] is not None, r["round"] or 0)
    )[:RESET_LOG_SHOWN]
    logs = reset_log(d, log_rows, streams)
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
        failure=next((r["message"] for r in few if r["kind"] == "log" and r["outcome"] == "failed"), None),
        segments=segments,
        snapshot_rows=snapshot_rows,
        source=source,
        timeline=timeline(d, streams, rounds),
        load=load_figures(d, pace, transactions, commands),
    )


def load_figures(d: EventDigest, pace: Pace | None, transactions: int, commands: int) -> dict[str, Any]:
    """A paced run's figures: the target rate, what was reached over the paced window (the
    agreed start to the last commit), and the apply lag (:func:`applier.apply.pace.lag_report`);
    {} for a run that was not paced."""
    if pace is None:
        return {}
    lag = lag_report(d.of("lag"))
    window = lag["seconds"]
    out: dict[str, Any] = {}
    if pace.due is not None:  # replayed at the capture's own commit times (--pace source)
        out = {
            "pace": "source",
            "speed": pace.speed,
            "source_seconds": round(pace.due[-1], 4) if pace.due else 0.0,
            "source_rate": round(len(pace.due) / pace.due[-1], 2) if pace.due and pace.due[-1] > 0 else None,
            "schedule": schedule_kept(d, pace, lag["start"]),
        }
    return {
        "rate": pace.rate,
        "round_size": pace.round_size,
        **out,
        "window_seconds": window,
        "throughput": round(transactions / window, 2) if window > 0 else None,
        "commands_per_s": round(commands / window, 1) if window > 0 else None,
        "lag": lag,
    }


def schedule_kept(d: EventDigest, pace: Pace, start: float) -> dict[str, Any]:
    """How closely the rounds started on their schedule: each round's start (stream 0's) after
    its due time (its last transaction's), in seconds, over the rounds the digest keeps (the
    first TIMELINE_ROUNDS). A round never starts early; late is the apply falling behind."""
    starts: dict[int, float] = {}
    for r in d.of("round"):
        if r["t_exec"] is not None and r["round"] is not None:
            starts[int(r["round"])] = min(float(r["t_exec"]), starts.get(int(r["round"]), float("inf")))
    delays = sorted(t - (start + pace.round_due(rnd)) for rnd, t in starts.items())
    if not delays:
        return {"rounds": 0}
    return {
        "rounds": len(delays),
        "start_after_due": {
            "min": round(delays[0], 6),
            "p50": round(delays[len(delays) // 2], 6),
            "p99": round(delays[min(len(delays) - 1, int(len(delays) * 0.99))], 6),
            "max": round(delays[-1], 6),
        },
    }


def reset_log(digest: EventDigest, log_rows: list[Any], streams: int) -> tuple[dict[str, Any], ...]:
    """One entry per reset (or other line of the apply's log): its round, the classes that
    caused it and which stream met which (the round's conflicts), and the agent's message."""
    rounds = {r["round"] for r in log_rows if r["round"] is not None}
    by_round: dict[int, list[dict[str, Any]]] = {}
    for c in digest.of("conflict"):
        if c["outcome"] is None and c["round"] in rounds:
            by_round.setdefault(c["round"], []).append(
                {"stream": c["stream"], "class": c["class"], "lsn": c["lsn"]}
            )
    out = []
    for r in log_rows:
        classes = [c for c in (r["class"] or "").split(",") if c]
        out.append(
            {
                "round": r["round"],
                "streams_from": streams if r["round"] is not None else None,
                "classes": classes,
                "streams": sorted(
                    by_round.get(r["round"], []), key=lambda x: (x["stream"] or 0, x["lsn"] or 0)
                ),
                "message": r["message"],
                "outcome": r["outcome"],
            }
        )
    return tuple(out)


SERIES_POINTS = 200  # points of the commands/s series at most


def timeline(digest: EventDigest, streams: int, rounds: int) -> dict[str, Any]:
    """What the HTML report draws: the rounds (parallel, reset, fatal) with their wall times,
    every stream's share of each (committed, conflict, rolled back, re-applied on the single
    connection), and the commands committed per second over the apply (from the shares that
    committed, at their commit). Times are seconds since the apply started (``t0``, epoch
    seconds). From the events' digest: no Spark job of its own."""
    shares: list[dict[str, Any]] = digest.of("share", "round")
    if not any(r["kind"] == "share" for r in shares):
        # The independent model: one segment per (stream, round, outcome) of the commands' own
        # times (its rounds are the plan's, its transactions commit one by one).
        shares = [
            {
                "kind": "share",
                "stream": stream,
                "round": rnd,
                "outcome": outcome,
                "class": cls,
                "n": n,
                "t_exec": lo,
                "t_commit": hi,
            }
            for (stream, rnd, outcome), (lo, hi, n, cls) in digest.segments.items()
        ]
    if not shares:
        return {}
    t0 = min(r["t_exec"] for r in shares)
    end = max((r["t_commit"] or r["t_exec"]) for r in shares)

    def rel(t: float | None) -> float | None:
        return None if t is None else round(t - t0, 4)

    rounds_out = sorted(
        (
            {
                "round": r["round"],
                "kind": r["outcome"],
                "start": rel(r["t_exec"]),
                "end": rel(r["t_commit"]),
                "classes": [c for c in (r["class"] or "").split(",") if c],
            }
            for r in shares
            if r["kind"] == "round" and r["round"] is not None
        ),
        key=lambda x: (x["round"], x["start"] or 0.0),
    )
    segments = sorted(
        (
            {
                "stream": r["stream"],
                "round": r["round"],
                "outcome": {"applied": "committed"}.get(r["outcome"], r["outcome"]),
                "class": r["class"],
                "start": rel(r["t_exec"]),
                "end": rel(r["t_commit"] or r["t_exec"]),
                "commands": int(r["n"] or 0),
            }
            for r in shares
            if r["kind"] == "share"
        ),
        key=lambda x: (x["start"] or 0.0, x["stream"] or 0),
    )
    span = max(end - t0, 1e-3)
    bucket = max(round(span / SERIES_POINTS, 3), 0.05)
    counts: dict[int, int] = {}
    for seg in segments:
        if seg["outcome"] in ("committed", "reapplied") and seg["end"] is not None:
            b = int(seg["end"] // bucket)
            counts[b] = counts.get(b, 0) + seg["commands"]
    points = [
        [round(b * bucket, 3), round(counts.get(b, 0) / bucket, 1)] for b in range(int(span / bucket) + 1)
    ]
    return {
        "t0": t0,
        "streams": streams,
        "seconds": round(span, 3),
        "rounds": rounds_out,
        "segments": segments,
        "truncated": rounds > TIMELINE_ROUNDS,
        "throughput": {"bucket_seconds": bucket, "points": points},
    }
