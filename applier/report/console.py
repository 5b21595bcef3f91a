"""Console summary (rich) and the JSON report of a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from applier.pipeline import RunResult
from applier.settings import Config

_STYLE = {"converged": "bold green", "diverged": "bold red", "unknown": "bold yellow"}


def report_dict(result: RunResult, config: Config, target: str) -> dict[str, Any]:
    s = result.summary
    v = result.verdict
    return {
        "verdict": v.verdict,
        "reason": v.reason or result.failed,
        "commands": s["commands"],
        "transactions": s["transactions"],
        "rounds": s["rounds"],
        "rounds_parallel": s["rounds_parallel"],
        "resets": s["resets"],
        "reset_log": s["reset_log"],
        "conflicts": s["conflicts"],
        "outcomes": s["outcomes"],
        "skipped": s["skipped"],
        "deferred": s.get("deferred", 0),
        "skips": v.skips,
        "divergent_rows": v.divergent_rows,
        "divergence": v.counts,
        "divergent": v.divergent,
        "rows_expected": v.rows_expected,
        "rows_found": v.rows_found,
        "throughput_cmds_per_s": s["throughput_cmds_per_s"],
        "apply_seconds": s["apply_seconds"],
        "phases_seconds": {k: round(x, 3) for k, x in result.phases.items()},
        "streams": s["stream_stats"],
        "source": s.get("source"),
        "snapshot_rows": s.get("snapshot_rows"),
        "target": target,
        "settings": config.to_dict(),
        "exit_code": result.exit_code,
    }


def write_json(report: dict[str, Any], path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    return p


def print_summary(report: dict[str, Any], console: Console | None = None, show: int = 5) -> None:
    c = console or Console()
    for line in report["reset_log"][:10]:
        c.print(f"[yellow]{line}[/]", soft_wrap=True)
    if len(report["reset_log"]) > 10:
        c.print(f"[yellow]... {len(report['reset_log']) - 10} more resets[/]")
    t = Table(title="applier run", show_header=False, title_justify="left")
    t.add_column("what", style="bold")
    t.add_column("value")
    st = report["settings"]["run"]
    t.add_row("target", str(report["target"]))
    t.add_row("source", str(report["source"]))
    t.add_row(
        "model / partition",
        f"{st['model']} / {st['partition']}, {st['streams']} streams, "
        f"commit batch {st['commit_batch_size']} transactions, policy {st['error_policy']}",
    )
    t.add_row("commands / transactions", f"{report['commands']} / {report['transactions']}")
    t.add_row("rounds", f"{report['rounds']} ({report['rounds_parallel']} on {st['streams']} streams)")
    t.add_row("resets to one stream", str(report["resets"]))
    conflicts = ", ".join(f"{k} {v}" for k, v in report["conflicts"].items() if v) or "none"
    t.add_row("conflicts", conflicts)
    if report["skipped"]:
        lost = (report.get("skips") or {}).get("rows_lost")
        t.add_row(
            "skipped commands",
            str(report["skipped"]) + (f" (divergent rows they caused: {lost})" if lost is not None else ""),
        )
    if report.get("deferred"):
        t.add_row("deferred commands", str(report["deferred"]))
    tp = report["throughput_cmds_per_s"]
    t.add_row("apply throughput", f"{tp:,.0f} commands/s ({report['apply_seconds']:.2f} s)" if tp else "-")
    t.add_row("rows expected / found", f"{report['rows_expected']} / {report['rows_found']}")
    div = report["divergence"]
    t.add_row(
        "divergent rows",
        f"{report['divergent_rows']}"
        + (
            f" (missing {div.get('missing', 0)}, extra {div.get('extra', 0)}, different {div.get('different', 0)})"
            if report["divergent_rows"]
            else ""
        ),
    )
    verdict = report["verdict"]
    t.add_row(
        "verdict",
        f"[{_STYLE.get(verdict, '')}]{verdict.upper()}[/]"
        + (f" - {report['reason']}" if report.get("reason") else ""),
    )
    c.print(t)
    for d in report["divergent"][:show]:
        c.print(
            f"[red]{d['kind']}[/] {d['article']} key {d['key']}"
            + (f" columns {d['columns']}" if d["columns"] else "")
        )
        if d.get("inverted"):
            c.print(f"    [bold]inverted pair[/]: {d['inverted']['why']}", soft_wrap=True)
        for cmd in d["commands"]:
            c.print(
                f"    lsn {cmd['lsn']} xact {cmd['xact_seqno']} {cmd['op']} "
                f"{cmd['key_before']} -> {cmd['key_after']} stream {cmd.get('stream')} "
                f"round {cmd.get('round')}: {cmd.get('outcome') or '?'}"
            )
