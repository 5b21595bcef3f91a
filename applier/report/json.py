"""The JSON report of a run: one flat object for a plain run, one per subscriber otherwise."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from applier.results import RunResult, SubscriptionResult


def subscription_report(sub: SubscriptionResult, settings: Mapping[str, Any]) -> dict[str, Any]:
    """One subscriber: verdict and why, what the apply did, what differs and who is to blame."""
    s, c = sub.summary, sub.check
    return {
        "subscription": sub.name,
        "verdict": sub.verdict.value,
        "reason": sub.failed if s.stopped is not None else c.reason or sub.failed,
        "commands": s.commands,
        "transactions": s.transactions,
        "rounds": s.rounds,
        "rounds_parallel": s.rounds_parallel,
        "resets": s.resets,
        "reset_log": list(s.reset_log),
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
    }


def run_report(result: RunResult) -> dict[str, Any]:
    """A plain run's report is its one subscriber's; with [[subscriptions]], one per subscriber
    under ``subscriptions``, with the merged verdict and exit code."""
    if result.implicit and len(result.subscriptions) == 1:
        return subscription_report(result.subscriptions[0], result.settings)
    return {
        "verdict": result.verdict.value,
        "exit_code": result.exit_code,
        "subscriptions": [subscription_report(s, result.settings) for s in result.subscriptions],
    }


def unfinished_report(settings: Mapping[str, Any], reason: str, exit_code: int) -> dict[str, Any]:
    """The report of a run that ended before its verdict: unknown, and why."""
    return {
        "verdict": "unknown",
        "reason": reason,
        "exit_code": exit_code,
        "subscriptions": [],
        "settings": dict(settings),
    }


def write_json(report: Mapping[str, Any], path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    return p
