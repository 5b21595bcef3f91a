"""The JSON report of a run: one flat object for a plain run, one per subscriber otherwise.

Every report opens with the same envelope: ``schema_version`` (of this format: 2 added the
envelope, the reset log as fields, the timeline and the per-article counts), the versions of
applier, Spark, pyodbc and Python, when the run started and how long it took. The JUnit XML
and the HTML report are rendered from this document.
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from applier.results import RunResult, SubscriptionResult

SCHEMA_VERSION = 2


def versions() -> dict[str, str | None]:
    """applier's, Spark's, pyodbc's and Python's versions (from the installed packages)."""
    out: dict[str, str | None] = {}
    for name, dist in (("applier", "applier"), ("spark", "pyspark"), ("pyodbc", "pyodbc")):
        try:
            out[name] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[name] = None
    out["python"] = platform.python_version()
    return out


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def envelope(started: float | None, seconds: float | None) -> dict[str, Any]:
    """The fields every report opens with."""
    return {
        "schema_version": SCHEMA_VERSION,
        "versions": versions(),
        "started_at": _iso(started) if started is not None else None,
        "finished_at": _iso(started + seconds) if started is not None and seconds is not None else None,
        "seconds": round(seconds, 3) if seconds is not None else None,
    }


def subscription_report(sub: SubscriptionResult, settings: Mapping[str, Any]) -> dict[str, Any]:
    """One subscriber: verdict and why, what the apply did, what differs and who is to blame."""
    s, c = sub.summary, sub.check
    return {
        "subscription": sub.name,
        "verdict": sub.verdict.value,
        "reason": sub.failed if s.stopped is not None else c.reason or sub.failed,
        # why the apply stopped before the end (None: it ran to the end, whatever the check said)
        "apply_stopped": sub.failed,
        "commands": s.commands,
        "transactions": s.transactions,
        "rounds": s.rounds,
        "rounds_parallel": s.rounds_parallel,
        "resets": s.resets,
        "reset_log": [dict(x) for x in s.reset_log],
        # why most rounds reset, and what would run in parallel (None: they did not)
        "parallelism": None if s.parallelism is None else s.parallelism.to_json(),
        "conflicts": dict(s.conflicts),
        "outcomes": dict(s.outcomes),
        "skipped": s.skipped,
        "deferred": s.deferred,
        "skips": dict(c.skips),
        "divergent_rows": c.divergent_rows,
        "divergence": dict(c.counts),
        "divergent": [d.to_json() for d in c.divergent],
        "rows_expected": c.rows_expected,
        "rows_found": c.rows_found,
        "throughput_cmds_per_s": s.throughput,
        "apply_seconds": s.apply_seconds,
        "phases_seconds": {k: round(x, 3) for k, x in sub.phases.items()},
        "streams": [dict(x) for x in s.stream_stats],
        "segments": s.segments,
        "source": s.source,
        "snapshot_rows": s.snapshot_rows,
        "target": sub.target,
        "routing": dict(sub.routing),
        "statements": [dict(x) for x in sub.statements],
        "schema_changes": [dict(x) for x in sub.schema_changes],
        "procedures": [dict(x) for x in sub.procedures],
        "settings": dict(settings),
        "exit_code": sub.exit_code,
        "by_article": {k: dict(v) for k, v in c.by_article.items()},
        "verify": dict(c.verify),
        "timeline": {k: v for k, v in s.timeline.items() if k != "throughput"},
        "throughput_series": s.timeline.get("throughput"),
        "load": dict(s.load),
    }


def run_report(result: RunResult) -> dict[str, Any]:
    """A plain run's report is its one subscriber's; with [[subscriptions]], one per subscriber
    under ``subscriptions``, with the merged verdict and exit code."""
    head = {**envelope(result.started, result.seconds), "cost": {k: dict(v) for k, v in result.cost.items()}}
    if result.thresholds:
        head["thresholds"] = [dict(t) for t in result.thresholds]
    if result.implicit and len(result.subscriptions) == 1:
        # a broken threshold fails a converged run
        return {
            **head,
            **subscription_report(result.subscriptions[0], result.settings),
            "exit_code": result.exit_code,
        }
    return {
        **head,
        "verdict": result.verdict.value,
        "exit_code": result.exit_code,
        "subscriptions": [subscription_report(s, result.settings) for s in result.subscriptions],
    }


def unfinished_report(
    settings: Mapping[str, Any] | None,
    reason: str,
    exit_code: int,
    *,
    started: float | None = None,
    seconds: float | None = None,
    phase: str | None = None,
) -> dict[str, Any]:
    """The report of a run that ended before its verdict: unknown, why, and the last phase it
    had reached (None: it failed before starting, e.g. on its configuration)."""
    return {
        **envelope(started, seconds),
        "verdict": "unknown",
        "reason": reason,
        "phase": phase,
        "exit_code": exit_code,
        "subscriptions": [],
        "settings": dict(settings or {}),
    }


def write_json(report: Mapping[str, Any], path: str | Path) -> Path:
    """Written whole or not at all (a temporary file renamed over it)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    tmp.replace(p)
    return p


def reset_line(entry: Mapping[str, Any]) -> str:
    """The agent's line for a reset: its message, the round and who met what."""
    if entry.get("round") is None:
        return str(entry.get("message"))
    who = ", ".join(f"stream {x['stream']} {x['class']}" for x in entry.get("streams") or ()) or ", ".join(
        entry.get("classes") or ()
    )
    return f"{entry['message']} (round {entry['round']}: {who})"


def verify_line(v: Mapping[str, Any] | None) -> str:
    """Which verify ran, on one line (the console's and the HTML's summary, a JUnit property):
    its mode, the rows read back, the articles read by the stream's keys (the rows outside them
    checked by a digest) and the ones read whole, with why."""
    if not v:
        return "-"
    arts: Mapping[str, Mapping[str, Any]] = v.get("articles") or {}
    keyed = {a: x for a, x in arts.items() if x.get("read") == "keys"}
    whole = {a: x for a, x in arts.items() if x.get("read") != "keys"}
    parts = []
    if keyed:
        keys = sum(int(x.get("touched_keys") or 0) for x in keyed.values())
        rest = sum(int(x.get("rest_rows") or 0) for x in keyed.values())
        what = "every article" if not whole else ", ".join(sorted(keyed))
        parts.append(
            f"{what} by the stream's {keys:,} keys, the {rest:,} rows outside them unchanged (digest)"
        )
    if whole:
        what = "every article" if not keyed else ", ".join(sorted(whole))
        whys = sorted({str(x["why"]) for x in whole.values() if x.get("why")})
        parts.append(f"{what} whole" + (f" ({'; '.join(whys)})" if whys else ""))
    return f"{v.get('mode')}: {int(v.get('rows_read') or 0):,} rows read; " + "; ".join(parts)


def rounds_line(report: Mapping[str, Any], run: Mapping[str, Any]) -> str:
    """The rounds of a subscription's report, in words: how many ran on every stream (the agent
    model), or, for the independent model (which has no barrier, so no round is "parallel"),
    that the streams committed on their own and how many commands were deferred to one
    connection. ``run``: the report's ``settings.run``."""
    rounds, streams = report.get("rounds", 0), run.get("streams", "?")
    if run.get("model") == "independent":
        deferred = (report.get("outcomes") or {}).get("deferred", 0)
        return (
            f"{rounds:,} commit batches, no barrier between the {streams} streams (independent); "
            f"{deferred:,} commands deferred to one connection"
        )
    return f"{rounds:,} ({report.get('rounds_parallel', 0):,} on {streams} streams)"
