"""``applier matrix``: one row per workload x strategy x model x policy, console and JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from applier.config import HAZARD_WORKLOADS, PARTITIONS


def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def register(sub: Any) -> str:
    p = sub.add_parser(
        "matrix", help="run hazard workloads x partition strategies x apply models x error policies"
    )
    p.add_argument(
        "--workloads",
        type=_csv,
        default=list(HAZARD_WORKLOADS),
        help=f"comma-separated (default: all hazards: {','.join(HAZARD_WORKLOADS)})",
    )
    p.add_argument(
        "--partitions",
        type=_csv,
        default=["key-hash", "round-robin", "writeset"],
        help=f"comma-separated of {','.join(PARTITIONS)}",
    )
    p.add_argument(
        "--models",
        type=_csv,
        default=["agent", "independent"],
        help="comma-separated (default agent,independent)",
    )
    p.add_argument(
        "--policies",
        type=_csv,
        default=["strict", "continue-on-data-consistency-errors"],
        help="comma-separated error policies (default strict,continue-on-data-consistency-errors)",
    )
    p.add_argument(
        "--streams", "-n", type=int, default=4, help="subscription streams of every cell (default 4)"
    )
    p.add_argument("--transactions", type=int, default=320, help="transactions per cell (default 320)")
    p.add_argument("--seed", type=int, default=42, help="seed of every cell's stream (default 42)")
    p.add_argument("--lock-timeout-ms", type=int, default=300, help="lock wait of every cell (default 300)")
    p.add_argument(
        "--target",
        help="embedded (default) | babelfish | an ODBC connection string | mssql | postgres-container",
    )
    p.add_argument("--report", help="write the rows as JSON here")
    p.add_argument(
        "--html",
        metavar="FILE",
        help="write the table as one self-contained HTML file here (verdicts coloured)",
    )
    p.add_argument("--junit", metavar="FILE", help="write the JUnit XML here (a testcase per cell)")
    p.set_defaults(func=cmd_matrix)
    return "matrix"


def cmd_matrix(a: argparse.Namespace) -> int:
    import dataclasses

    from rich.console import Console
    from rich.table import Table

    import applier
    import applier.api.paths
    from applier.config import MODELS, WORKLOADS, ErrorPolicy, RunSettings, demo_config
    from applier.errors import ConfigError
    from applier.matrix import cells, run_matrix
    from applier.report.console import print_whole

    for name, given, known in (
        ("workload", a.workloads, WORKLOADS),
        ("partition", a.partitions, PARTITIONS),
        ("model", a.models, MODELS),
    ):
        bad = [g for g in given if g not in known]
        if bad:
            raise ConfigError(f"unknown {name}(s) {bad} (known: {', '.join(known)})")
    for pol in a.policies:
        ErrorPolicy.parse(pol)
    for option, path in (("--report", a.report), ("--html", a.html), ("--junit", a.junit)):
        # refused before the first cell runs, not after the last
        applier.api.paths.check_paths(
            None, None, (), path, None, names={"report": option, "work_dir": "--work-dir"}
        )
    console = Console()
    base = demo_config()
    base = base.replace(run=dataclasses.replace(RunSettings(), lock_timeout_ms=a.lock_timeout_ms))
    grid = cells(a.workloads, a.partitions, a.models, a.policies)
    with applier.Target.parse(a.target) as target:
        print_whole(console, f"matrix: {len(grid)} cells on {target.description}, {a.streams} streams")

        def show(row: dict[str, Any]) -> None:
            console.print(
                f"[dim]{row['workload']} / {row['partition']} / {row['model']} / {row['policy']}: "
                f"{row['verdict']}[/]"
            )

        rows = run_matrix(
            base,
            target,
            grid,
            streams=a.streams,
            transactions=a.transactions,
            seed=a.seed,
            on_row=show,
        )
    t = Table(title="hazard matrix")
    for col in (
        "workload",
        "partition",
        "model",
        "policy",
        "conflicts",
        "resets",
        "deferred",
        "skipped",
        "verdict",
        "divergent",
        "cmds/s",
    ):
        t.add_column(col)
    # an n/a cell (a strategy the model does not support) is dim: "[]n/a[/]" is a rich markup error
    style = {"converged": "green", "diverged": "red", "unknown": "yellow"}
    for r in rows:
        conflicts = ", ".join(f"{k} {v}" for k, v in (r.get("conflicts") or {}).items()) or "-"
        tp = r.get("throughput_cmds_per_s")
        t.add_row(
            r["workload"],
            r["partition"],
            r["model"],
            r["policy"].replace("continue-on-data-consistency-errors", "continue-on-dce"),
            conflicts,
            str(r.get("resets", "-")),
            str(r.get("deferred", "-")),
            str(r.get("skipped", "-")),
            f"[{style.get(r['verdict'], 'dim')}]{r['verdict']}[/]",
            str(r.get("divergent_rows", "-")),
            f"{tp:,.0f}" if tp else "-",
        )
    console.print(t)
    doc = {"rows": rows, "streams": a.streams, "transactions": a.transactions}
    if a.report:
        Path(a.report).parent.mkdir(parents=True, exist_ok=True)
        Path(a.report).write_text(json.dumps(doc, indent=2) + "\n")
        print_whole(console, f"report: {a.report}")
    if a.html or a.junit:
        from applier.report.files import write_reports

        files = write_reports(doc, junit=a.junit, html=a.html, kind="matrix")
        for key, name in (("junit", "JUnit XML"), ("html", "HTML report")):
            if key in files:
                print_whole(console, f"{name}: {files[key]}")
    # Diverged cells are what the matrix is for; a cell that could not decide fails it.
    return 1 if any(r["verdict"] == applier.Verdict.UNKNOWN.value for r in rows) else 0
