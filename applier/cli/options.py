"""The command line's shared options: the argument groups of the commands that run or read a
change stream (the workload, the capture, the apply, Spark) and the configuration they make:
the configuration file with the command line's settings over it, validated as one. The
commands that live with their stage receive these functions from :func:`applier.cli.parser`
(their layer is below the CLI's)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from applier.config import VERIFY_MODES, WORKLOADS, Config, demo_config, load_config, with_overrides
from applier.errors import ConfigError
from applier.loadtest.options import with_load
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


def add_settings(p: argparse.ArgumentParser) -> None:
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


def add_capture(p: argparse.ArgumentParser, dialect: bool = True) -> None:
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


def capture_of(a: argparse.Namespace) -> Options:
    return Options(
        format=getattr(a, "changes_format", "canonical"),
        fold_key_changes=bool(getattr(a, "fold_key_changes", False)),
        source=getattr(a, "source", None),
        capture_instance=getattr(a, "capture_instance", None),
    )


def add_run(p: argparse.ArgumentParser) -> None:
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


def add_spark(p: argparse.ArgumentParser) -> None:
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


def with_spark(a: argparse.Namespace, config: Config, console: Any) -> Config:
    """The configuration with --master / --conf / --slot-wait over its [spark], checked; under
    spark-submit they and [spark] are not applied, which one console line says."""
    import applier.api.session
    from applier.config.model import SparkSettings
    from applier.report.console import print_whole
    from applier.sparkenv.slots import check_local_master, choose_master, under_spark_submit

    props: dict[str, str] = {}
    for item in getattr(a, "spark_conf", None) or []:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"--conf {item}: expected KEY=VALUE, e.g. spark.executor.memory=2g")
        props[key.strip()] = value
    master, wait = getattr(a, "master", None), getattr(a, "slot_wait", None)
    try:
        spark = applier.api.session.spark_of(config, master, props, wait, source="command line")
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
    note = applier.api.session.spark_note(spark)
    if note is not None:
        print_whole(console, note)
        spark = SparkSettings(slot_wait=spark.slot_wait)
    elif not under_spark_submit():
        chosen = choose_master(spark.master, "--master" if master else "[spark] master")
        # An explicit local[K] too small for the streams: refused before the target starts.
        check_local_master(chosen, applier.api.session.needed_slots(config))
        if chosen.url is not None:
            print_whole(console, f"spark: {chosen.url} ({chosen.source})")
    return config.replace(spark=spark)


def config_of(a: argparse.Namespace) -> Config:
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
