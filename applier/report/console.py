"""Console summary of a run (rich): per subscriber, the table, the resets, the blame."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from applier.report.json import reset_line, rounds_line, subscription_report, verify_line
from applier.results import RunResult

_STYLE = {"converged": "bold green", "diverged": "bold red", "unknown": "bold yellow"}


def print_whole(console: Console, text: str) -> None:
    """A line a user may copy (a connection string, a path), printed whole: rich would fold it at
    the console's width (80 columns: --keep's connection string took two lines) and a copy would
    take the break with it; a terminal's own soft wrap copies as one line. Never read as markup
    either (a path may hold [brackets])."""
    console.print(text, soft_wrap=True, highlight=False, markup=False)


def print_run(
    result: RunResult,
    console: Console | None = None,
    show: int = 5,
    *,
    in_all: float | None = None,
    profile: bool = False,
) -> None:
    """Every subscriber's summary; for [[subscriptions]] with what distribute did first.
    ``in_all``: the seconds since the command started (Spark's and the target's start
    included), printed after the summaries; ``profile``: the run's cost model too."""
    c = console or Console()
    for sub in result.subscriptions:
        if not result.implicit:
            c.print(f"[bold]subscription {sub.name}[/] routing {dict(sub.routing) or 'nothing'}")
            for st in sub.statements:
                c.print(
                    f"  rs_sqldml lsn {st['lsn']} {st['operator']} {st['category']} {st['rs_rowcount']} rows: "
                    f"{st['sent_as']}{' (fallback)' if st['fallback'] else ''} - {st['reason']}"
                )
            for pr in sub.procedures:
                c.print(f"  applied procedure lsn {pr['lsn']} {pr['procedure']}: sent as {pr['sent_as']}")
            for ch in sub.schema_changes:
                c.print(
                    f"  schema change lsn {ch['lsn']} {ch['article']} -> version {ch['version']}: {ch['change']}"
                )
        print_summary(subscription_report(sub, result.settings), c, show)
        if sub.summary.load:
            print_load(sub.summary.load, c)
    if result.thresholds:
        print_thresholds(result.thresholds, c)
    if profile:
        print_cost(result.cost, c)
    if in_all is not None:
        run = f"; the run {result.seconds:.1f} s" if result.seconds is not None else ""
        c.print(f"in all: {in_all:.1f} s from the command's start{run}", highlight=False)


def print_load(load: Mapping[str, Any], console: Console | None = None) -> None:
    """A paced run: the target rate against what was reached, and the apply lag's percentiles
    overall and per stream."""
    c = console or Console()
    lag = load.get("lag") or {}
    rate = load.get("rate")
    if load.get("pace") == "source":
        speed = load.get("speed") or 1
        head = f"paced at the capture's commit times (x{speed:g}: {load.get('source_seconds') or 0:,.1f} s"
        head += f", {load.get('source_rate') or 0:,.1f} tps)"
        sizes = f"rounds of up to {load.get('round_size')} transactions"
        kept = (load.get("schedule") or {}).get("start_after_due")
        if kept:
            sizes += f", started {kept['p50']:.3f} s (p50) / {kept['max']:.3f} s (max) after due"
    else:
        head = f"paced at {rate:,.1f} tps" if rate else "paced"
        sizes = f"rounds of {load.get('round_size')} transactions"
    c.print(f"{head}: reached {load.get('throughput') or 0:,.1f} tps, {sizes}", highlight=False)
    t = Table(title="apply lag (seconds)", title_justify="left")
    names = ("p50", "p90", "p99", "p999", "max")
    for name in ("", "transactions", *names):
        t.add_column(name.replace("p999", "p99.9"), justify="left" if not name else "right")

    def row(label: str, n: Any, pc: Mapping[str, Any]) -> None:
        t.add_row(
            label, f"{n:,}" if n is not None else "", *(f"{pc[k]:.4f}" if k in pc else "-" for k in names)
        )

    row("all", lag.get("transactions"), lag.get("percentiles") or {})
    for stream, pc in (lag.get("per_stream") or {}).items():
        row(f"stream {stream}", None, pc)
    c.print(t)


def print_thresholds(checked: Any, console: Console | None = None) -> None:
    """Each threshold: held or broken, with the value measured."""
    c = console or Console()
    for th in checked:
        value = th.get("value")
        shown = "not measured" if value is None else f"{value:,.4g}"
        why = f" ({th['why']})" if th.get("why") else ""
        if th["held"]:
            c.print(f"[green]threshold held[/]: {th['threshold']} (measured {shown})", highlight=False)
        else:
            c.print(
                f"[bold red]threshold broken[/]: {th['threshold']} (measured {shown}){why}", highlight=False
            )


CPU_SIDES = (("driver", "driver"), ("jvm", "JVM"), ("jit", "JIT"), ("workers", "workers"))


def print_cost(cost: Mapping[str, Mapping[str, Any]], console: Console | None = None) -> None:
    """The cost model (applier.pipeline.cost): per phase its seconds, Spark jobs, stages, tasks,
    the seconds Python workers spent starting and the CPU seconds of each side (the driver's
    Python, the JVM, its JIT compilers among it, the Python workers; - where not measured: a
    cluster)."""
    c = console or Console()
    t = Table(
        title="where the run's time went (--profile)",
        title_justify="left",
        caption="seconds; start: the Python workers' start; CPU seconds of the driver (Python), the JVM "
        "(its JIT compilers among it) and the Python workers; -: not measured (a cluster)",
        caption_justify="left",
        box=box.SIMPLE_HEAD,  # no column rules: ten columns in 80 characters
        pad_edge=False,
        padding=(0, 1),
        collapse_padding=True,
    )
    heads = ("phase", "seconds", "jobs", "stages", "tasks", "start", *(h for _, h in CPU_SIDES))
    for name in heads:
        t.add_column(name, justify="left" if name == "phase" else "right", no_wrap=True)
    total: dict[str, Any] = {"seconds": 0.0, "jobs": 0, "stages": 0, "tasks": 0}
    measured: dict[str, float | None] = {"worker_start_seconds": None, **{k: None for k, _ in CPU_SIDES}}

    def opt(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    for phase, x in cost.items():
        cpu = x.get("cpu_seconds") or {}
        got = {"worker_start_seconds": x.get("worker_start_seconds"), **{k: cpu.get(k) for k, _ in CPU_SIDES}}
        t.add_row(
            phase,
            f"{x['seconds']:.2f}",
            str(x["jobs"]),
            str(x["stages"]),
            str(x["tasks"]),
            *(opt(v) for v in got.values()),
        )
        for k in ("seconds", "jobs", "stages", "tasks"):
            total[k] += x[k]
        for k, v in got.items():
            if v is not None:
                measured[k] = (measured[k] or 0.0) + v
    t.add_row(
        "all",
        f"{total['seconds']:.2f}",
        str(total["jobs"]),
        str(total["stages"]),
        str(total["tasks"]),
        *(opt(v) for v in measured.values()),
        style="bold",
    )
    c.print(t)


def print_summary(report: Mapping[str, Any], console: Console | None = None, show: int = 5) -> None:
    c = console or Console()
    for entry in report["reset_log"][:10]:
        c.print(f"[yellow]{reset_line(entry)}[/]", soft_wrap=True, highlight=False)
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
    captured = report["settings"].get("input")
    if captured and captured.get("format") != "canonical":
        dup = captured.get("duplicates_dropped", 0)
        folded = ", key changes folded" if captured.get("fold_key_changes") else ""
        filled = captured.get("unchanged_filled", 0)
        unchanged = f", {filled} updates' unchanged values taken from earlier images" if filled else ""
        t.add_row(
            "input",
            f"{captured['format']}: {captured['changes']} changes in {captured['transactions']} "
            f"transactions, {dup} duplicate deliveries dropped{folded}{unchanged}",
        )
    t.add_row("commands / transactions", f"{report['commands']} / {report['transactions']}")
    t.add_row("rounds", rounds_line(report, st))
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
    par = report.get("parallelism")
    if par:  # most rounds reset: why, and what would run in parallel
        t.add_row("why they reset", par["reason"])
        if par["advice"]:
            t.add_row("to run in parallel", "\n".join(par["advice"]))
    tp = report["throughput_cmds_per_s"]
    t.add_row("apply throughput", f"{tp:,.0f} commands/s ({report['apply_seconds']:.2f} s)" if tp else "-")
    phases = report.get("phases_seconds") or {}
    if phases:
        t.add_row("phases", ", ".join(f"{k} {v:.1f} s" for k, v in phases.items()))
    t.add_row("rows expected / found", f"{report['rows_expected']} / {report['rows_found']}")
    if report.get("verify"):
        t.add_row("read back", verify_line(report["verify"]))
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
