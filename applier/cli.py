"""Command line: ``applier run`` (default), ``applier generate``, ``applier procs``.

Exit codes of run: 0 converged, 1 diverged, 2 unknown or the run failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from pathlib import Path
from typing import Any

from applier.errors import ApplierError, ConfigError
from applier.settings import WORKLOADS, Config, ErrorPolicy, RunSettings, Workload, demo_config, load_config


def _add_settings(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config", "--articles", dest="config", help="TOML/YAML file with [run], [workload], [[articles]]"
    )
    g = p.add_argument_group("workload (generated change stream)")
    g.add_argument("--workload", choices=list(WORKLOADS))
    g.add_argument("--initial-rows", type=int)
    g.add_argument("--transactions", type=int)
    g.add_argument("--commands-per-transaction", type=int)
    g.add_argument("--key-update-share", type=float)
    g.add_argument("--chain-length", type=int)
    g.add_argument("--seed", type=int)


def _add_run(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("apply")
    g.add_argument("--streams", "-n", type=int, help="subscription streams N (1..64)")
    g.add_argument("--commit-batch-size", type=int, help="transactions per round (default 100)")
    g.add_argument("--partition", choices=["key-hash", "single", "round-robin", "writeset"])
    g.add_argument("--model", choices=["agent", "independent"], help="apply model (default agent)")
    g.add_argument("--lock-timeout-ms", type=int)
    g.add_argument(
        "--set-apply",
        action="store_true",
        default=None,
        help="set-based apply: runs of one operation per article in one statement (generated procedures)",
    )
    g.add_argument("--error-policy", help="strict | skip:<codes> | continue-on-data-consistency-errors")
    g.add_argument("--subscription")


def _config(a: argparse.Namespace) -> Config:
    cfg = load_config(a.config) if a.config else demo_config()
    w: dict[str, Any] = {}
    for f, attr in (
        ("kind", "workload"),
        ("initial_rows", "initial_rows"),
        ("transactions", "transactions"),
        ("commands_per_transaction", "commands_per_transaction"),
        ("key_update_share", "key_update_share"),
        ("chain_length", "chain_length"),
        ("seed", "seed"),
    ):
        v = getattr(a, attr, None)
        if v is not None:
            w[f] = v
    r: dict[str, Any] = {}
    for f in (
        "streams",
        "commit_batch_size",
        "partition",
        "model",
        "lock_timeout_ms",
        "subscription",
        "set_apply",
    ):
        v = getattr(a, f, None)
        if v is not None:
            r[f] = v
    if getattr(a, "error_policy", None):
        r["error_policy"] = ErrorPolicy.parse(a.error_policy)
    workload: Workload = dataclasses.replace(cfg.workload, **w)
    from applier.settings import validate_workload

    validate_workload(workload)
    run: RunSettings = dataclasses.replace(cfg.run, **r)
    return cfg.replace(workload=workload, run=run)


def cmd_run(a: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from applier import pipeline
    from applier.report.console import print_summary, report_dict, write_json
    from applier.sparkenv import spark_session
    from applier.targets import open_target

    console = Console(stderr=False)
    config = _config(a)
    if config.subscriptions:  # [[subscriptions]]: one subscriber database each
        return _run_subscriptions(a, config, console)
    with open_target(a.target, keep=a.keep) as target:
        console.print(f"target: {target.description}")
        spark = spark_session(config.run.streams)
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=a.quiet,
        ) as bar:
            task = bar.add_task("apply rounds", total=None)

            def progress(stage: str, done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            def phase(text: str) -> None:
                if not a.quiet:
                    console.print(f"[dim]- {text}[/]")

            result = pipeline.run(
                spark,
                config,
                target,
                changes=a.changes,
                snapshot=a.snapshot,
                work_dir=a.work_dir,
                custom_sql=[Path(p) for p in a.custom_sql or []],
                progress=progress,
                on_phase=phase,
                resume=a.resume,
            )
        report = report_dict(result, config, target.description)
        print_summary(report, console)
        if a.report:
            console.print(f"report: {write_json(report, a.report)}")
        return result.exit_code


def _run_subscriptions(a: argparse.Namespace, config: Config, console: Any) -> int:
    """Several subscriptions: the embedded target gets one database per subscription (its
    ``database``, default its name); a subscription with ``target`` uses that connection
    string; any other --target needs a ``target`` on every subscription."""
    import contextlib

    from applier import pipeline
    from applier.report.console import print_summary, report_dict, write_json
    from applier.sparkenv import spark_session
    from applier.targets.odbc import Target, preflight, redact

    spec = (a.target or "embedded").strip()
    need = [s.name for s in config.subscriptions if s.target is None]
    if need and spec != "embedded":
        raise ConfigError(
            f"subscriptions {need} need a target: set `target` on each, or use --target embedded"
        )
    with contextlib.ExitStack() as stack:
        targets: dict[str, Target] = {}
        pg = None
        if need:
            from applier.targets.embedded import EmbeddedPostgres

            pg = EmbeddedPostgres(keep=a.keep).start()
            stack.callback(pg.stop)
        for s in config.subscriptions:
            if s.target is not None:
                targets[s.name] = preflight(s.target, f"{s.name}: {redact(s.target)}")
            else:
                assert pg is not None
                db = s.database or s.name
                targets[s.name] = preflight(pg.create_database(db), f"{s.name}: embedded database {db}")
        spark = spark_session(max([config.run.streams] + [s.streams or 0 for s in config.subscriptions]))
        result = pipeline.run_subscriptions(
            spark,
            config,
            targets,
            changes=a.changes,
            snapshot=a.snapshot,
            work_dir=a.work_dir,
            on_phase=None if a.quiet else (lambda t: console.print(f"[dim]- {t}[/]")),
            custom_sql=[Path(p) for p in a.custom_sql or []],
        )
        for sub in result.subscriptions:
            console.print(f"[bold]subscription {sub.name}[/] routing {sub.routing or 'nothing'}")
            for st in sub.statements:
                console.print(
                    f"  rs_sqldml lsn {st['lsn']} {st['operator']} {st['category']} {st['rs_rowcount']} rows: "
                    f"{st['sent_as']}{' (fallback)' if st['fallback'] else ''} - {st['reason']}"
                )
            for pr in sub.procedures:
                console.print(
                    f"  applied procedure lsn {pr['lsn']} {pr['procedure']}: sent as {pr['sent_as']}"
                )
            for ch in sub.schema_changes:
                console.print(
                    f"  schema change lsn {ch['lsn']} {ch['article']} -> version {ch['version']}: {ch['change']}"
                )
            print_summary(report_dict(sub.result, config, sub.target), console)
        if a.report:
            out = {
                "subscriptions": [s.to_json() for s in result.subscriptions],
                "exit_code": result.exit_code,
            }
            console.print(f"report: {write_json(out, a.report)}")
        if pg is not None and a.keep:
            console.print(f"embedded PostgreSQL left running (--keep): {pg.odbc_connection_string()}")
        return result.exit_code


def cmd_generate(a: argparse.Namespace) -> int:
    from applier.sources.dataset import generate, write_changes
    from applier.sparkenv import spark_session

    config = _config(a)
    spark = spark_session(2)
    cs = generate(spark, config)
    ch, sn = write_changes(cs, a.out, a.format)
    n = cs.changes.count()
    print(f"wrote {n} commands to {ch} and the initial snapshot to {sn}")
    return 0


def cmd_procs(a: argparse.Namespace) -> int:
    """One install script per article and dialect, as sp_scriptpublicationcustomprocs writes
    them: the generated procedures of every operation applied by a default procedure, and a
    comment for the others (custom procedures are the user's, SQL statements need none but
    the dialect's support objects, NONE is not replicated)."""
    from applier.articles import Syntax
    from applier.dialects import DIALECTS
    from applier.dialects.base import OPS

    config = load_config(a.config) if a.config else demo_config()
    dialect = DIALECTS[a.dialect]()
    sep = "\ngo\n" if a.dialect == "tsql" else "\n"
    end = "" if a.dialect == "tsql" else ";"
    scripts: list[tuple[str, str]] = []
    for art in config.articles:
        how = ", ".join(f"{OPS[op]} {art.delivery(op).syntax.value}" for op in "IUD")
        parts = [f"-- article {art.name} ({how}); {dialect.name} install script generated by applier"]
        if any(art.delivery(op).syntax == Syntax.SQL for op in "IUD"):
            parts += [s.rstrip() + end for s in dialect.support_sql()]
        for op in "IUD":
            d = art.delivery(op)
            sql = dialect.procedure_sql(art, op)
            if sql:
                parts.append(sql.rstrip() + end)
            elif d.procedure:
                parts.append(
                    f"-- {OPS[op]}: custom procedure {d.procedure} ({d.syntax.value} syntax) is not generated; "
                    "install it with --custom-sql"
                )
            elif d.syntax == Syntax.SQL:
                parts.append(f"-- {OPS[op]}: applied as SQL statements, no procedure")
            else:
                parts.append(f"-- {OPS[op]}: NONE, not replicated")
        scripts.append((art.name, sep.join(parts) + sep))
    if a.out:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        for name, text in scripts:
            (out / f"{name}.{a.dialect}.sql").write_text(text, encoding="utf-8")
        print(f"wrote {len(scripts)} script(s) to {out}")
    else:
        sys.stdout.write("\n".join(text for _, text in scripts))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="applier", description="Multi-connection apply tester for replication subscribers"
    )
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="command")
    r = sub.add_parser("run", help="apply a change stream with N streams and verify the subscriber (default)")
    _add_settings(r)
    _add_run(r)
    r.add_argument(
        "--target", help="embedded (default) | mssql | postgres-container | an ODBC connection string"
    )
    r.add_argument(
        "--changes", help="canonical change file or directory (JSON Lines or Parquet); default: generate"
    )
    r.add_argument("--snapshot", help="initial snapshot (JSON Lines of {article, image}) for --changes")
    r.add_argument(
        "--custom-sql", action="append", help="SQL file of custom procedures to install (repeatable)"
    )
    r.add_argument("--report", help="write the JSON report here")
    r.add_argument("--work-dir", help="where intermediate files go (default: a temporary directory)")
    r.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run of the same stream on --target from its progress table",
    )
    r.add_argument(
        "--keep", action="store_true", help="leave the embedded PostgreSQL running and print how to reach it"
    )
    r.add_argument("--quiet", "-q", action="store_true")
    r.set_defaults(func=cmd_run)
    g = sub.add_parser("generate", help="write a generated change stream as canonical files")
    _add_settings(g)
    g.add_argument("--out", required=True)
    g.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl")
    g.set_defaults(func=cmd_generate)
    pr = sub.add_parser("procs", help="print or write the apply procedure scripts")
    pr.add_argument("--dialect", choices=["tsql", "postgres"], default="tsql")
    pr.add_argument("--config", "--articles", dest="config")
    pr.add_argument("--out", help="folder: one script per article")
    pr.set_defaults(func=cmd_procs)
    _register_extra(sub)
    return p


# Commands that live with their stage: each module has register(subparsers) adding its
# sub-command with set_defaults(func=...). Listed explicitly; a missing module is skipped.
EXTRA_COMMANDS = ("applier.lint.command", "applier.matrix.command", "applier.bench.command")


def _register_extra(sub: Any) -> list[str]:
    import importlib

    names = []
    for mod in EXTRA_COMMANDS:
        try:
            m = importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name and mod.startswith(e.name):
                continue
            raise
        names.append(m.register(sub))
    return names


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    known = ("run", "generate", "procs", "lint", "matrix", "bench", "-h", "--help", "-v", "--verbose")
    if not argv or argv[0] not in known:
        argv = ["run", *argv]
    a = parser().parse_args(argv)
    if a.command is None:
        a = parser().parse_args(["run", *argv])
    logging.basicConfig(
        level=logging.INFO if a.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(a.func(a))
    except ApplierError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
