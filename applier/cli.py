"""Command line: ``applier run`` (default), ``generate``, ``procs``, ``schema``, ``clean``, and the commands
that live with their stage (``lint``, ``matrix``, ``bench``, ``articles``, ``capture``). Everything goes through the
public API (:mod:`applier.api`).

Exit codes of run: 0 converged, 1 diverged, 2 unknown or the run failed, 130 stopped by SIGINT
(Ctrl-C), 143 stopped by SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn

from applier.articles import PROC_TEMPLATES
from applier.config import VERIFY_MODES, WORKLOADS, Config, demo_config, load_config, with_overrides
from applier.errors import ApplierError, ConfigError, Stopped, TargetError, close_names, did_you_mean, stop_of
from applier.loadtest.options import add_load, with_load
from applier.sources.formats import FORMATS, Options

_WORKLOAD_FLAGS = (
    ("kind", "workload"),
    ("initial_rows", "initial_rows"),
    ("transactions", "transactions"),
    ("commands_per_transaction", "commands_per_transaction"),
    ("key_update_share", "key_update_share"),
    ("chain_length", "chain_length"),
    ("seed", "seed"),
)
_RUN_FLAGS = (
    "streams",
    "commit_batch_size",
    "partition",
    "model",
    "lock_timeout_ms",
    "subscription",
    "set_apply",
    "error_policy",
    "retry_attempts",
    "schedule",
    "schedule_seed",
    "schedule_strategy",
    "pct_depth",
    "schedule_file",
    "verify",
)


def _add_settings(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        "--articles",
        dest="config",
        help="TOML/YAML/JSON file with [run], [workload], [[articles]]",
    )
    g = p.add_argument_group("workload (generated change stream)")
    g.add_argument(
        "--workload", choices=list(WORKLOADS), help="what the generated stream does (default key-chains)"
    )
    g.add_argument("--initial-rows", type=int, help="rows of the initial snapshot")
    g.add_argument("--transactions", type=int, help="transactions to generate")
    g.add_argument("--commands-per-transaction", type=int, help="commands per generated transaction")
    g.add_argument("--key-update-share", type=float, help="share of updates that change the key (0..1)")
    g.add_argument("--chain-length", type=int, help="key-chains: updates per key chain")
    g.add_argument("--seed", type=int, help="seed of the generated stream (same seed, same stream)")


def _add_capture(p: argparse.ArgumentParser, dialect: bool = True) -> None:
    """Where the articles and the changes come from: a DDL script, captured traffic (and how
    many of their bad records an error prints)."""
    p.add_argument(
        "--errors",
        choices=("first", "all"),
        default="first",
        help="first (default): an invalid input's first bad record and how many more, in two lines; "
        "all: every bad record, one a line",
    )
    g = p.add_argument_group("captured traffic and articles (bring your own subscriber)")
    g.add_argument(
        "--format",
        dest="changes_format",
        choices=list(FORMATS),
        default="canonical",
        help="the format of --changes: canonical (default), debezium, maxwell, wal2json (format "
        "version 1), wal2json2, mssql-cdc (a change table as CSV or Parquet, or --source)",
    )
    g.add_argument(
        "--fold-key-changes",
        action="store_true",
        help="debezium: a key change delivered as delete + create is applied as one key update "
        "(the 20598 hazard of a key update)",
    )
    g.add_argument(
        "--source", help="mssql-cdc: ODBC connection string of the database to read the change table from"
    )
    g.add_argument("--capture-instance", help="mssql-cdc with --source: the capture instance (cdc.<name>_CT)")
    g.add_argument("--ddl", help="articles from this DDL script (CREATE TABLE ...) instead of the config's")
    if dialect:
        g.add_argument(
            "--dialect",
            choices=["tsql", "postgres"],
            default="tsql",
            help="the DDL's dialect (default tsql)",
        )
    g.add_argument("--tables", help="with --ddl: only these tables (schema.table, comma separated)")


def _capture(a: argparse.Namespace) -> Options:
    return Options(
        format=getattr(a, "changes_format", "canonical"),
        fold_key_changes=bool(getattr(a, "fold_key_changes", False)),
        source=getattr(a, "source", None),
        capture_instance=getattr(a, "capture_instance", None),
    )


def _add_run(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("apply")
    g.add_argument("--streams", "-n", type=int, help="subscription streams N (1..64)")
    g.add_argument("--commit-batch-size", type=int, help="transactions per round (default 100)")
    g.add_argument(
        "--partition",
        choices=["key-hash", "single", "round-robin", "writeset"],
        help="how commands are split into streams (default key-hash)",
    )
    g.add_argument("--model", choices=["agent", "independent"], help="apply model (default agent)")
    g.add_argument("--lock-timeout-ms", type=int, help="lock wait before a stream gives up (default 2000)")
    g.add_argument(
        "--set-apply",
        action="store_true",
        default=None,
        help="set-based apply: runs of one operation per article in one statement (generated procedures)",
    )
    g.add_argument("--error-policy", help="strict | skip:<codes> | continue-on-data-consistency-errors")
    g.add_argument("--retry-attempts", type=int, help="tries of a transient error on the single connection")
    g.add_argument("--subscription", help="the subscription's name in the progress table (default applier)")
    g.add_argument(
        "--verify",
        choices=list(VERIFY_MODES),
        help="how the subscriber is read back: auto (default: the keys the stream touched and a digest of "
        "the rest, where that reads less), touched, or full (every row)",
    )
    g = p.add_argument_group("schedule (how the streams interleave)")
    g.add_argument(
        "--schedule",
        choices=["free", "controlled"],
        help="free: the connections race (default); controlled: the streams take turns call by call "
        "under a seeded scheduler (one seed, one interleaving, one outcome)",
    )
    g.add_argument("--schedule-seed", type=int, help="seed of the controlled schedule")
    g.add_argument(
        "--schedule-strategy",
        choices=["pct", "random", "recorded"],
        help="who goes next: pct (default), random, recorded (follow --schedule-file)",
    )
    g.add_argument("--pct-depth", type=int, help="PCT bug depth d (d - 1 priority change points; default 3)")
    g.add_argument(
        "--schedule-file", help="a recorded schedule.jsonl to follow (implies --schedule-strategy recorded)"
    )


def _add_spark(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("spark (where the streams run; under spark-submit its own settings rule)")
    g.add_argument(
        "--master",
        metavar="URL",
        help="Spark master: local[K], spark://host:7077, yarn, k8s://... (default: [spark] master, "
        "$MASTER / $SPARK_MASTER, else local[max(streams, cores)])",
    )
    g.add_argument(
        "--conf",
        dest="spark_conf",
        metavar="KEY=VALUE",
        action="append",
        help="a Spark property, e.g. spark.executor.memory=2g (repeatable; over [spark] conf)",
    )
    g.add_argument(
        "--slot-wait",
        type=float,
        metavar="SECONDS",
        help="how long a cluster's executors may take to offer the N task slots N streams need (default 30)",
    )


def _spark(a: argparse.Namespace, config: Config, console: Any) -> Config:
    """The configuration with --master / --conf / --slot-wait over its [spark], checked; under
    spark-submit they and [spark] are not applied, which one console line says."""
    import applier.api
    from applier.config.model import SparkSettings
    from applier.report.console import print_whole
    from applier.sparkenv import check_local_master, choose_master, under_spark_submit

    props: dict[str, str] = {}
    for item in getattr(a, "spark_conf", None) or []:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"--conf {item}: expected KEY=VALUE, e.g. spark.executor.memory=2g")
        props[key.strip()] = value
    master, wait = getattr(a, "master", None), getattr(a, "slot_wait", None)
    try:
        spark = applier.api.spark_of(config, master, props, wait, source="command line")
    except ConfigError as e:
        names = {
            "spark.master": "--master",
            "spark.conf.": "--conf ",
            "spark.conf": "--conf",
            "spark.slot_wait": "--slot-wait",
        }
        text = str(e)
        for key, flag in names.items():
            text = text.replace(f"command line: {key}", flag)
        raise ConfigError(text) from None
    note = applier.api.spark_note(spark)
    if note is not None:
        print_whole(console, note)
        spark = SparkSettings(slot_wait=spark.slot_wait)
    elif not under_spark_submit():
        chosen = choose_master(spark.master, "--master" if master else "[spark] master")
        # An explicit local[K] too small for the streams: refused before the target starts.
        check_local_master(chosen, applier.api.needed_slots(config))
        if chosen.url is not None:
            print_whole(console, f"spark: {chosen.url} ({chosen.source})")
    return config.replace(spark=spark)


def _config(a: argparse.Namespace) -> Config:
    """The configuration file (or the demo's), with the command line's settings over it,
    validated as one; an error names the option (``--streams: ...``)."""
    cfg = load_config(a.config) if a.config else demo_config()
    if getattr(a, "ddl", None):
        cfg = _with_ddl(cfg, a)
    workload = {f: v for f, attr in _WORKLOAD_FLAGS if (v := getattr(a, attr, None)) is not None}
    run = {f: v for f in _RUN_FLAGS if (v := getattr(a, f, None)) is not None}
    if "schedule_file" in run:  # following a recorded schedule is a controlled run
        run.setdefault("schedule_strategy", "recorded")
        run.setdefault("schedule", "controlled")
    if workload or run:
        try:
            cfg = with_overrides(cfg, run=run, workload=workload, source="command line")
        except ConfigError as e:
            raise ConfigError(_named_options(str(e))) from None
    return with_load(cfg, a)


def _with_ddl(cfg: Config, a: argparse.Namespace) -> Config:
    """The configuration with the DDL script's articles (what was not carried printed, one a line)."""
    from applier.catalog.files import with_ddl_articles

    tables = [t.strip() for t in a.tables.split(",") if t.strip()] if getattr(a, "tables", None) else None
    config, found = with_ddl_articles(cfg, a.ddl, getattr(a, "dialect", None) or "tsql", tables)
    for line in (*found.problems, *found.notes):
        print(f"applier: {line}", file=sys.stderr)
    return config


def _named_options(message: str) -> str:
    """``command line: run.streams: ...`` -> ``--streams: ...`` (the option the user typed)."""
    keys = {f"run.{f}": f for f in _RUN_FLAGS} | {f"workload.{f}": attr for f, attr in _WORKLOAD_FLAGS}
    out = []
    for line in message.splitlines():
        head, _, rest = line.partition(": ")
        key, _, text = rest.partition(": ")
        if head == "command line" and key in keys:
            line = f"--{keys[key].replace('_', '-')}: {text}"
        out.append(line)
    return "\n".join(out)


_VERBOSE_HELP = "applier's log, Spark's log and tracebacks on the console"


class _UsageError(Exception):
    """A command line argparse refuses: one line naming the option, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line (not the whole usage) and come back to
    :func:`main` (which returns 2) instead of exiting the process."""

    def error(self, message: str) -> NoReturn:
        hint = _suggestion(message, self)
        raise _UsageError(f"{self.prog}: error: {message}{hint}\n(`{self.prog} --help` lists the options)")


def _suggestion(message: str, p: argparse.ArgumentParser) -> str:
    """`; did you mean --streams?` for a misspelt option or choice."""
    import re

    m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if m:
        hint = did_you_mean(m.group(1), re.findall(r"'?([\w.\-]+)'?", m.group(2)))
        return f"; {hint}" if hint else ""
    m = re.search(r"unrecognized arguments: (.*)", message)
    if m:
        options = [o for act in p._actions for o in act.option_strings if o.startswith("--")]
        for sub in p._subparsers._group_actions if p._subparsers else ():
            for cmd in getattr(sub, "choices", {}).values():
                options += [o for act in cmd._actions for o in act.option_strings if o.startswith("--")]
        hints = []
        for word in m.group(1).split():
            flag = word.split("=", 1)[0]
            if flag.startswith("--"):
                close = close_names(flag, sorted(set(options)))
                if close:
                    hints.append(f"{flag} -> {close[0]}")
        return f"; did you mean {', '.join(hints)}?" if hints else ""
    return ""


def cmd_run(a: argparse.Namespace) -> int:
    import time

    from rich.console import Console

    import applier
    from applier.report.live import Doing

    a.doing = Doing()  # what the run is doing: the line a stop prints says what it interrupted
    console = Console(stderr=False)
    started = time.time()
    config: Config | None = None
    try:
        config = _config(a)
        config = _spark(a, config, console)
        from applier.capture.meta import warnings_of

        for w in warnings_of(a.changes):  # what `applier capture` said of these files (FILE.meta)
            print(f"warning: {w}", file=sys.stderr)
        try:
            target = applier.Target.parse(a.target, keep=a.keep)
        except ApplierError as e:
            if a.target is None:  # $APPLIER_TARGET: the message names it
                raise
            raise type(e)(f"--target: {e}") from None
        if a.listen is not None:
            target = applier.api.listening(target, a.listen)
        # Every path checked before the target starts and anything is applied.
        applier.api.check_paths(
            a.changes,
            a.snapshot,
            a.custom_sql or [],
            a.report,
            a.work_dir,
            names=_OUTPUT_OPTIONS,
            capture=_capture(a),
        )
    except BaseException as e:
        # Even a run refused before it starts leaves its reports (verdict unknown, and why).
        applier.api.write_unfinished(e, config, started, None, json=a.report, junit=a.junit, html=a.html)
        raise
    try:
        return _run_on(a, config, target, console)
    except TargetError as e:
        raise _target_named(a, config, e) from None


def _run_on(a: argparse.Namespace, config: Config, target: Any, console: Any) -> int:
    import applier
    import applier.api
    from applier.loadtest.live import live_metrics
    from applier.report.console import print_run, print_whole
    from applier.report.live import LiveProgress

    # Spark's JVM starts while the target does (the target keeps this thread: its signals)
    early = applier.api.start_spark(config, a.changes, _capture(a))
    with target, live_metrics(config, a, console) as metrics:
        print_whole(console, f"target: {target.description}")
        with LiveProgress(console, quiet=a.quiet, doing=a.doing) as live:
            result = applier.run(
                config,
                target,
                changes=a.changes,
                snapshot=a.snapshot,
                custom_sql=a.custom_sql or [],
                report=a.report,
                work_dir=a.work_dir,
                capture=_capture(a),
                resume=a.resume,
                progress=live.progress,
                on_phase=live.phase,
                out_dir=a.out,
                junit=a.junit,
                html=a.html,
                spark=early,
                observer=metrics,
            )
        print_run(result, console, in_all=_since_start(), profile=a.profile)
        print_where(console, result.files, _spark_log_kept(), target)
        return result.exit_code


def print_where(console: Any, files: Mapping[str, Any], log: Path | None, target: Any) -> None:
    """Where a run's outputs are, and how to reach a target it left running: each line whole,
    to copy (report.console.print_whole)."""
    from applier.report.console import print_whole

    for key in ("json", "junit", "html"):
        if key in files:
            print_whole(console, f"{_FILE_NAMES[key]}: {files[key]}")
    if log is not None:
        print_whole(console, f"Spark log: {log}")
    if target.keep:
        reach = getattr(target, "how_to_reach", target.connection_string)()  # --listen: redacted
        print_whole(console, f"{target.description} left running (--keep): {reach}")


def _since_start() -> float | None:
    """Seconds since this process started (the interpreter's start included)."""
    import time

    import psutil

    try:
        return max(0.0, time.time() - float(psutil.Process().create_time()))
    except psutil.Error:
        return None


def _spark_log_kept() -> Path | None:
    from applier.sparkenv import spark_log

    log = spark_log()
    return (
        log if log is not None and log.exists() and not log.parent.name.startswith("applier-spark-") else None
    )


def _log_to(a: argparse.Namespace) -> Path | None:
    """Where a quiet run keeps Spark's log: its --out folder, else beside its first report
    file; None: nowhere kept (a temporary file)."""
    if getattr(a, "out", None) and a.command == "run":
        return Path(a.out) / "spark.log"
    for key in ("report", "junit", "html"):
        if getattr(a, key, None):
            return Path(getattr(a, key)).absolute().parent / "spark.log"
    return None


def _target_named(a: argparse.Namespace, config: Config, e: TargetError) -> TargetError:
    """A target error of a run whose only target is --target names the option."""
    if a.target is None or any(s.target for s in config.subscriptions) or "--target" in str(e):
        return e
    return TargetError(f"--target: {e}")


_OUTPUT_OPTIONS = {"report": "--report", "work_dir": "--work-dir", "out_dir": "--out"}
_FILE_NAMES = {"json": "report", "junit": "JUnit XML", "html": "HTML report"}


def cmd_generate(a: argparse.Namespace) -> int:
    import applier.api

    config = _config(a)
    applier.api.check_paths(None, None, (), None, a.out, names={"report": "--report", "work_dir": "--out"})
    ch, sn, n = applier.api.generate(config, a.out, a.format)
    print(f"wrote {n} commands to {ch} and the initial snapshot to {sn}")
    return 0


def cmd_convert(a: argparse.Namespace) -> int:
    import applier.api

    config = _config(a)
    applier.api.check_paths(None, None, (), None, a.out, names={"report": "--report", "work_dir": "--out"})
    done = applier.api.convert(config, a.changes, a.out, capture=_capture(a), snapshot=a.snapshot)
    dup = f", {done.duplicates} duplicate deliveries dropped" if done.duplicates else ""
    rate = done.commands / done.seconds if done.seconds > 0 else 0.0
    print(
        f"converted {done.commands} commands in {done.transactions} transactions{dup} "
        f"in {done.seconds:.1f} s ({rate:,.0f} commands/s) to {done.changes}"
    )
    return 0


def cmd_procs(a: argparse.Namespace) -> int:
    """One install script per article and dialect, as sp_scriptpublicationcustomprocs writes them."""
    import applier.api

    config = load_config(a.config) if a.config else demo_config()
    scripts = applier.api.procedure_scripts(config, a.dialect, template=a.template, proc_schema=a.proc_schema)
    if a.out:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        for name, text in scripts:
            (out / f"{name}.{a.dialect}.sql").write_text(text, encoding="utf-8")
        print(f"wrote {len(scripts)} script(s) to {out}")
    else:
        sys.stdout.write("\n".join(text for _, text in scripts))
    return 0


def cmd_schema(a: argparse.Namespace) -> int:
    """The configuration file's JSON Schema, for editors."""
    import json

    from applier.config import json_schema

    text = json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
    if a.out:
        Path(a.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def cmd_clean(a: argparse.Namespace) -> int:
    """Remove what runs killed with kill -9 left behind: their embedded clusters (stopped
    first), work and Spark folders. A live run's folders are never touched."""
    from applier import leftovers

    removed = leftovers.clean(a.dir)
    for folder in removed:
        print(f"removed {folder}")
    print(f"{len(removed)} folder(s) of dead runs removed")
    return 0


EXIT_CODES = """exit codes:
  0    converged: every subscriber holds the publisher's rows
  1    diverged: a subscriber differs (the report names the keys and their commands)
  2    unknown, or the run could not start or finish (bad input, an unreachable target, a
       check that could not decide); the reasons are on stderr and in the report
  130  stopped by SIGINT (Ctrl-C), 143 by SIGTERM: the open transactions rolled back (the
       line says what was interrupted: generating, loading the snapshot, applying round K...)

Spark's own log goes to spark.log in the run's folder (--out, else beside the report); -v
shows it, and applier's own log, on the console."""


def _version() -> str:
    from applier.report.json import versions

    v = versions()
    return f"applier {v['applier']} (Spark {v['spark']}, pyodbc {v['pyodbc']}, Python {v['python']})"


def parser(command: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser. ``command``: the one sub-command the arguments name, where known: the
    commands that live with their stage are then registered only if it is theirs (importing
    them all cost ~0.3 s of every ``applier run``); None: every command (help, an unknown one)."""
    p = _Parser(
        prog="applier",
        description="Multi-connection apply tester for replication subscribers",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-v", "--verbose", action="store_true", help=_VERBOSE_HELP)
    p.add_argument("--version", action="version", version=_version(), help="print the versions and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    r = sub.add_parser(
        "run",
        help="apply a change stream with N streams and verify the subscriber (default)",
        description="Apply a change stream with N streams and verify the subscriber.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_settings(r)
    _add_run(r)
    add_load(r)
    _add_spark(r)
    r.add_argument(
        "--target",
        help="embedded (default) | babelfish | mssql | postgres-container | an ODBC connection string",
    )
    r.add_argument(
        "--changes", help="canonical change file or directory (JSON Lines or Parquet); default: generate"
    )
    r.add_argument("--snapshot", help="initial snapshot (JSON Lines of {article, image}) for --changes")
    r.add_argument(
        "--custom-sql", action="append", help="SQL file of custom procedures to install (repeatable)"
    )
    r.add_argument("--report", help="write the JSON report here")
    r.add_argument("--junit", metavar="FILE", help="write the JUnit XML here (a testsuite per subscription)")
    r.add_argument(
        "--html", metavar="FILE", help="write the HTML report here (one self-contained file: timeline, blame)"
    )
    r.add_argument("--work-dir", help="where intermediate files go (default: a temporary directory)")
    r.add_argument(
        "--out",
        help="the run's folder: configuration, inputs, report, schedule.jsonl and outcome.json "
        "(for applier replay, shrink and export)",
    )
    r.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run of the same stream on --target from its progress table",
    )
    r.add_argument(
        "--keep", action="store_true", help="leave the embedded PostgreSQL running and print how to reach it"
    )
    r.add_argument(
        "--listen",
        metavar="ADDRESS",
        help="the embedded PostgreSQL also listens on ADDRESS (an IP of this host, or 0.0.0.0) for "
        "executors on other hosts: SCRAM-SHA-256 with a generated password, never shown",
    )
    r.add_argument("--quiet", "-q", action="store_true", help="no progress, only the summary")
    r.add_argument(
        "--profile",
        action="store_true",
        help="print where the run's time went: per phase its seconds, Spark jobs, stages, tasks and "
        "the seconds Python workers spent starting (the report's cost)",
    )
    r.set_defaults(func=cmd_run)
    _add_capture(r)
    cv = sub.add_parser(
        "convert",
        help="read captured traffic (Debezium, wal2json, SQL Server CDC...) and write canonical change files",
        description="Read captured change traffic as a run would (every record validated, nothing "
        "written when one is bad) and write canonical JSON Lines change files, each command with "
        "its source position.",
    )
    cv.add_argument(
        "--config", "--articles", dest="config", help="the articles' configuration (default: the demo's)"
    )
    cv.add_argument("--changes", help="the capture: a file or a folder of them")
    cv.add_argument("--out", required=True, help="folder for the canonical changes and the snapshot")
    cv.add_argument(
        "--snapshot",
        help="the tables at the capture's start (applier capture --snapshot): written to the folder, and "
        "where an update's unchanged TOASTed values come from when no earlier change has the row",
    )
    _add_capture(cv)
    cv.set_defaults(func=cmd_convert)
    g = sub.add_parser("generate", help="write a generated change stream as canonical files")
    _add_settings(g)
    g.add_argument("--out", required=True, help="folder for the changes and the snapshot")
    g.add_argument(
        "--format", choices=["jsonl", "parquet"], default="jsonl", help="file format (default jsonl)"
    )
    g.set_defaults(func=cmd_generate)
    pr = sub.add_parser("procs", help="print or write the apply procedure scripts")
    pr.add_argument(
        "--dialect",
        choices=["tsql", "postgres", "babelfish"],
        default="tsql",
        help="T-SQL as SQL Server writes it (default), PL/pgSQL, or T-SQL as Babelfish takes it",
    )
    pr.add_argument(
        "--config", "--articles", dest="config", help="the articles' configuration (default: the demo's)"
    )
    pr.add_argument("--out", help="folder: one script per article")
    pr.add_argument(
        "--template",
        choices=list(PROC_TEMPLATES),
        help="procedure text: 2016 (as SQL Server 2016+ generates it; default) or legacy (the documented older form)",
    )
    pr.add_argument(
        "--proc-schema",
        help="schema of the procedures (default: the subscriber's default schema, as SQL Server creates them)",
    )
    pr.set_defaults(func=cmd_procs)
    sc = sub.add_parser("schema", help="print (or write) the configuration file's JSON Schema")
    sc.add_argument("--out", help="write it to this file")
    sc.set_defaults(func=cmd_schema)
    cl = sub.add_parser("clean", help="remove the clusters and folders that killed runs left behind")
    cl.add_argument("--dir", help="where to look (default: the temporary directory)")
    cl.set_defaults(func=cmd_clean)
    _register_extra(sub, command)
    for each in sub.choices.values():  # `applier run -v` as well as `applier -v run`
        if not any("-v" in act.option_strings for act in each._actions):
            each.add_argument(
                "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=_VERBOSE_HELP
            )
    return p


# the commands that live with their stage, by the module that registers them
_EXTRA = {
    "applier.lint.command": ("lint",),
    "applier.matrix.command": ("matrix",),
    "applier.bench.command": ("bench",),
    "applier.catalog.command": ("articles",),
    "applier.capture.command": ("capture",),
    "applier.explain.command": ("streams",),
    "applier.repro.command": ("explore", "shrink", "export", "replay"),
    "applier.loadtest.command": ("compare", "capacity"),
}


def _register_extra(sub: Any, command: str | None = None) -> list[str]:
    """The commands that live with their stage: each has register(subparsers) adding its
    sub-command with set_defaults(func=...); only ``command``'s where it is given."""
    import importlib

    names: list[str] = []
    for module, commands in _EXTRA.items():
        if command is not None and command not in commands:
            continue
        m = importlib.import_module(module)
        if module == "applier.explain.command":
            names.append(m.register(sub, _add_settings, _add_run, _add_capture, _config, _capture))
        elif module in ("applier.repro.command", "applier.loadtest.command"):
            names += m.register(sub, _add_settings, _add_run, _config)
        else:
            names.append(m.register(sub))
    return names


_NO_SPARK = (
    "procs",
    "schema",
    "clean",
    "lint",
    "articles",
    "capture",
    "compare",
)  # commands that never start Spark
_REPRO = ("explore", "shrink", "export", "replay")  # applier.repro
COMMANDS = (
    "run",
    "convert",
    "streams",
    "articles",
    "capture",
    "generate",
    "procs",
    "schema",
    "clean",
    "lint",
    "matrix",
    "bench",
    *_REPRO,
    "compare",
    "capacity",
)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    lead = 0  # `applier -v --streams 4` is `applier -v run --streams 4`
    while lead < len(argv) and argv[lead] in ("-v", "--verbose"):
        lead += 1
    rest = argv[lead:]
    if rest and not rest[0].startswith("-") and rest[0] not in COMMANDS:
        # `run` takes no positional argument: a first word is a command, unknown or misspelt
        hint = did_you_mean(rest[0], COMMANDS)
        print(
            f"applier: error: unknown command {rest[0]!r}{'; ' + hint if hint else ''} "
            "(`applier --help` lists the commands)",
            file=sys.stderr,
        )
        return 2
    if not rest or rest[0] not in (*COMMANDS, "-h", "--help", "--version"):
        argv = [*argv[:lead], "run", *rest]
    named = argv[lead] if lead < len(argv) and argv[lead] in COMMANDS else None
    try:
        a = parser(named).parse_args(argv)
        if a.command is None:
            a = parser("run").parse_args(["run", *argv])
    except _UsageError as e:
        print(e, file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO if a.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if a.command not in _NO_SPARK:
        from applier.sparkenv import configure_log

        configure_log(a.verbose, _log_to(a))
    received: list[int] = []
    previous = {}
    if threading.current_thread() is threading.main_thread():  # only there may handlers be set
        previous = {sig: signal.signal(sig, _stopper(received)) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = int(a.func(a))
    except BaseException as e:
        stop = stop_of(e)
        if stop is None and not received:
            if isinstance(e, ApplierError):
                # a command without --errors prints every line, as it has nothing to ask it with
                for line in error_lines(e, getattr(a, "errors", "all") == "all"):
                    print(line, file=sys.stderr)
                return 2
            if a.verbose or not isinstance(e, Exception):
                raise
            first = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), "")
            print(f"error: {type(e).__name__}: {first[:500]}", file=sys.stderr)
            print("(an unexpected error: run with -v for the traceback)", file=sys.stderr)
            return 2
        if a.verbose:
            traceback.print_exc()
        return _stopped(stop.signum if stop else received[0], a)
    finally:
        for sig, h in previous.items():  # main() may run inside another program (a test)
            signal.signal(sig, h)
    # A signal that a step caught on its way (inside a C call it arrives as a SystemError)
    # still stops the run: its result is not the run's.
    return _stopped(received[0], a) if received else code


def error_lines(e: ApplierError, every: bool = False) -> list[str]:
    """What the console shows of an error: at most two lines (the first problem, and how many
    more), or with ``every`` (``--errors all``) every bad record, one a line."""
    lines = f"error: {e}".splitlines() or ["error:"]
    if every:
        return [lines[0], *(f"  {d}" for d in e.details[1:])] if e.details else lines
    if len(lines) <= 2:
        return lines
    more = len(lines) - 1  # a configuration's problems: one a line
    return [lines[0], f"  and {more} more line{'s' if more > 1 else ''} (--errors all prints every one)"]


def _stopped(signum: int, a: argparse.Namespace) -> int:
    """Unwound through every `with` and `finally`: the open transactions rolled back with their
    connections, the embedded cluster and the temporary folders removed. A run says what was
    interrupted (``stopped by SIGTERM while applying round 12 of 40: ...``)."""
    name = signal.Signals(signum).name
    doing = f" {a.doing.interrupted()}" if getattr(a, "doing", None) is not None else ""
    print(f"stopped by {name}{doing}", file=sys.stderr)
    return 128 + signum


def _stopper(received: list[int]) -> Callable[[int, object], None]:
    """The SIGINT/SIGTERM handler: stop Spark's work, then unwind. A local Spark's JVM (this
    process's child) is killed: its stream tasks stop mid-call, their connections close and the
    subscriber rolls the open round back, and no task prints its cancellation. Under
    spark-submit the jobs are cancelled."""

    def stop(signum: int, frame: object) -> None:
        received.append(signum)
        logging.disable(logging.CRITICAL)  # py4j logs the dead gateway's errors; _stopped says it
        if "pyspark" in sys.modules:
            from pyspark import SparkContext

            sc = SparkContext._active_spark_context
            proc = getattr(getattr(sc, "_gateway", None), "proc", None)
            with contextlib.suppress(Exception):
                if proc is not None:
                    # PySpark's accumulator server would print the dead JVM's EOF as a traceback.
                    server = getattr(sc, "_accumulatorServer", None)
                    if server is not None:
                        server.handle_error = lambda request, address: None
                    proc.kill()
                elif sc is not None:
                    sc.cancelAllJobs()
        if len(received) == 1:
            raise Stopped(signum, signal.Signals(signum).name)

    return stop


if __name__ == "__main__":
    sys.exit(main())
