"""The public API: :func:`run` a configuration against a target, get a :class:`RunResult`.

The CLI, ``applier matrix``, ``applier bench`` and the pytest plugin call this and nothing
below it::

    import applier

    config = applier.load_config("articles.toml")
    result = applier.run(config, target=applier.Target.embedded())
    print(result.verdict, result.conflicts)
    assert result.exit_code == 0, result.divergent

``target`` is a :class:`Target` (started here and stopped after if it was not started), an
ODBC connection string or ``"embedded"`` / ``"postgres-container"`` / ``"mssql"``, or an
:class:`Endpoint` already reached (a database of a target started elsewhere).
``Target.embedded(listen="0.0.0.0")`` (or :func:`listening`) is reached by executors on other
hosts: SCRAM-SHA-256 with a generated password, redacted wherever it could be shown.

The Spark session a run starts is :mod:`applier.api.session`'s; the paths it checks before
anything starts, :mod:`applier.api.paths`'.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from applier import pipeline
from applier.api.paths import check_paths, writable
from applier.api.session import Starting, needed_slots, new_session, spark_note, spark_of
from applier.apply.pace import round_size
from applier.apply.rendezvous import Observer, observed
from applier.config import Config, check_config, load_config
from applier.config.thresholds import parse as parse_threshold
from applier.errors import ConfigError, InputError, stop_of
from applier.pipeline.rundir import finish_run_dir, prepare_run_dir
from applier.report.files import write_reports
from applier.report.json import run_report, unfinished_report
from applier.results import RunResult, Verdict
from applier.sources.files import Inputs
from applier.sources.formats import FORMATS, Options
from applier.sparkenv.session import spark_session
from applier.sparkenv.slots import check_local_master, check_slots, choose_master, under_spark_submit
from applier.targets import Endpoint, Target, preflight

__all__ = [
    "Config",
    "Converted",
    "Endpoint",
    "Options",
    "RunResult",
    "Target",
    "Verdict",
    "convert",
    "generate",
    "load_config",
    "procedure_scripts",
    "run",
]


def endpoints(config: Config, target: Target | Endpoint) -> dict[str, Endpoint]:
    """Every subscription's subscriber database: a plain run uses the target's own database;
    each of ``[[subscriptions]]`` its ``target`` connection string, else a database of its own
    (``database``, default its name) created on the target."""
    if not config.subscriptions:
        sub = pipeline.subscriptions(config)[0]
        return {sub.name: target if isinstance(target, Endpoint) else target.endpoint()}
    out: dict[str, Endpoint] = {}
    for s in config.subscriptions:
        if s.target is not None:
            out[s.name] = preflight(s.target, s.name)
        elif isinstance(target, Endpoint):
            raise ConfigError(
                f"subscription {s.name!r} needs a database of its own: set `target` on it, or give a "
                "target applier can create databases on (embedded)"
            )
        else:
            out[s.name] = target.subscriber(s.database or s.name)
    return out


def listening(target: Target, address: str) -> Target:
    """The embedded ``target`` listening on ``address`` too (``applier run --listen``): an
    address of this host or 0.0.0.0, so that Spark executors on other hosts reach it; beyond
    loopback only with SCRAM-SHA-256 and a password generated at start."""
    from applier.targets.embedded import EmbeddedPostgres, is_loopback

    if not isinstance(target, EmbeddedPostgres):
        raise ConfigError(
            f"--listen: only the embedded target listens; {target.description} is reached as it is"
        )
    is_loopback(address)  # a name that does not resolve is refused before anything starts
    return dataclasses.replace(target, listen=address)


def run(
    config: Config,
    target: Target | Endpoint | str | None = None,
    *,
    changes: str | Path | None = None,
    snapshot: str | Path | None = None,
    custom_sql: Sequence[str | Path] = (),
    report: str | Path | None = None,
    work_dir: str | Path | None = None,
    resume: bool = False,
    spark: SparkSession | Starting | None = None,
    on_phase: Callable[[str], None] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    out_dir: str | Path | None = None,
    junit: str | Path | None = None,
    html: str | Path | None = None,
    changes_format: str = "canonical",
    capture: Options | None = None,
    master: str | None = None,
    spark_conf: Mapping[str, str] | None = None,
    slot_wait: float | None = None,
    explain_resets: bool = True,
    observer: Observer | None = None,
    inputs: Inputs | None = None,
) -> RunResult:
    """Apply the configured stream (generated, or read from ``changes``) to every subscriber
    with N streams and verify each. ``report`` / ``junit`` / ``html``: also write the JSON
    report, its JUnit XML, its HTML page there (paths in ``RunResult.files``); a run that ends
    before its verdict (an error, a signal) still writes them: verdict unknown, and why.
    ``spark``: a session to use (default: ``local[N]``, or the one spark-submit started).
    ``out_dir``: the run's folder (:mod:`applier.pipeline.rundir`): its configuration,
    inputs, report, schedule and outcome, for replay, shrink and export.
    ``changes_format`` / ``capture``: captured traffic (``debezium``, ``maxwell``, ``wal2json``,
    ``wal2json2``, ``mssql-cdc``) and how to read it (:class:`applier.sources.formats.Options`);
    SQL Server CDC may be read from its source database (``capture.source``, no ``changes``).
    ``master`` / ``spark_conf`` / ``slot_wait``: the Spark master, properties and executor
    wait of a new session, over the configuration's ``[spark]`` (:func:`applier.api.session.spark_of`); a run
    needing more task slots than the session has is refused before anything is set up.
    ``explain_resets``: when most rounds reset, say why and what would run in parallel (a Spark
    job; the repro tools' tries, which read only their outcome, do without).
    ``observer``: told of every round as the streams apply it (live metrics:
    :mod:`applier.apply.observe`). A configuration's ``[load]`` paces the apply and its
    thresholds are checked on the result (a broken one: exit code 1). ``inputs``: the
    caller's scan of ``changes`` and ``snapshot`` (:func:`applier.api.paths.check_paths`'s),
    so that the run does not open them again."""
    started = time.time()
    reached: list[str] = []
    capture = capture_options(changes_format, capture)

    def phase(text: str) -> None:
        reached.append(text)
        if on_phase is not None:
            on_phase(text)

    try:
        config = paced(check_config(config), changes, capture)
        config = config.replace(spark=spark_of(config, master, spark_conf, slot_wait))
        if not isinstance(spark, SparkSession) and not under_spark_submit():
            # a local[K] too small: refused before any JVM starts
            check_local_master(choose_master(config.spark.master, "master"), needed_slots(config))
        inputs = check_paths(changes, snapshot, custom_sql, report, work_dir, capture=capture, scanned=inputs)
        for key, path in (("junit", junit), ("html", html)):
            if path is not None:
                writable(Path(path), key, False)
        if out_dir is not None:
            writable(Path(out_dir), "out_dir", True)
            custom_sql = prepare_run_dir(out_dir, config, changes, snapshot, custom_sql, capture)
            report = report if report is not None else Path(out_dir) / "report.json"
        with observed(observer) if observer is not None else contextlib.nullcontext():
            result = _run(
                config,
                target,
                changes,
                snapshot,
                custom_sql,
                work_dir,
                resume,
                spark,
                phase,
                progress,
                capture,
                explain_resets,
                inputs=inputs,
            )
        result = dataclasses.replace(result, thresholds=checked_thresholds(config, result))
    except BaseException as e:
        # A run that ends before its verdict (an error, a signal) still leaves its reports.
        write_unfinished(
            e, config, started, reached[-1] if reached else None, json=report, junit=junit, html=html
        )
        raise
    result = dataclasses.replace(result, started=started, seconds=time.time() - started)
    files = write_reports(run_report(result), json=report, junit=junit, html=html)
    if out_dir is not None:
        files.update(finish_run_dir(out_dir, result))
    return dataclasses.replace(result, files={**result.files, **files})


def paced(config: Config, changes: str | Path | None = None, capture: Options | None = None) -> Config:
    """``config`` as its ``[load]`` runs it: at a rate, rounds of the transactions due within
    ``batch_interval`` (CommitBatchSize caps them); a generated workload of ``duration``
    holds rate x duration transactions. Refused where pacing cannot hold."""
    ld = config.load
    for t in ld.thresholds:
        th = parse_threshold(t, "[load] thresholds")
        if th.paced and not ld.paced:
            raise ConfigError(
                f"threshold {t!r} reads the apply lag or the rate: pace the run (--rate TPS, or --pace source)"
            )
    if not ld.paced:
        return config
    if config.run.model != "agent":
        raise ConfigError(
            f"a paced run applies with the agent model, not {config.run.model!r} (--model agent)"
        )
    if config.run.schedule != "free":
        raise ConfigError(
            "a paced run lets the streams race (schedule free): a controlled schedule takes turns"
        )
    if ld.duration is not None and (changes is not None or (capture is not None and capture.source)):
        raise ConfigError(
            "--duration sizes a generated workload; a change file has its own length (use --rate)"
        )
    if ld.pace == "source":
        # rounds are cut on the capture's clock when the stream is read (applier.pipeline.run):
        # CommitBatchSize stays their cap
        if changes is None and not (capture is not None and capture.source):
            raise ConfigError("--pace source replays a capture: give it (--changes FILE --format FORMAT)")
        if ld.speed <= 0:
            raise ConfigError(f"--speed must be above 0, got {ld.speed:g}")
        return config
    assert ld.rate is not None
    run = dataclasses.replace(
        config.run, commit_batch_size=round_size(ld.rate, ld.batch_interval, config.run.commit_batch_size)
    )
    work = config.workload
    if ld.duration is not None:
        work = dataclasses.replace(work, transactions=max(1, round(ld.rate * ld.duration)))
    return config.replace(run=run, workload=work)


def checked_thresholds(config: Config, result: RunResult) -> tuple[dict[str, Any], ...]:
    """Each of the configuration's thresholds against the run's figures."""
    metrics = result.metrics
    rate = config.load.rate
    if rate is None:  # a replay at the capture's pace: its own mean rate (scaled) is the target
        rates = [s.summary.load.get("source_rate") for s in result.subscriptions if s.summary.load]
        rate = min((float(r) for r in rates if r), default=None)
    return tuple(parse_threshold(t).check(metrics, rate) for t in config.load.thresholds)


def write_unfinished(
    e: BaseException,
    config: Config | None,
    started: float,
    phase: str | None,
    *,
    json: str | Path | None = None,
    junit: str | Path | None = None,
    html: str | Path | None = None,
) -> dict[str, str]:
    """The reports of a run that ended before its verdict: unknown, why, the phase reached.
    Never raises (the error that ended the run is what the caller reports)."""
    if json is None and junit is None and html is None:
        return {}
    stop = stop_of(e)
    code, why = (128 + stop.signum, str(stop)) if stop else (2, str(e) or type(e).__name__)
    settings = config.to_dict() if isinstance(config, Config) else None
    doc = unfinished_report(settings, why, code, started=started, seconds=time.time() - started, phase=phase)
    try:
        return write_reports(doc, json=json, junit=junit, html=html)
    except Exception:  # noqa: BLE001 - a report path that cannot be written: the run's error is the news
        return {}


def _run(
    config: Config,
    target: Target | Endpoint | str | None,
    changes: str | Path | None,
    snapshot: str | Path | None,
    custom_sql: Sequence[str | Path],
    work_dir: str | Path | None,
    resume: bool,
    spark: SparkSession | Starting | None,
    on_phase: Callable[[str], None] | None,
    progress: Callable[[str, int, int], None] | None,
    capture: Options | None = None,
    explain_resets: bool = True,
    *,
    inputs: Inputs | None = None,
) -> RunResult:
    with contextlib.ExitStack() as stack:
        if target is None or isinstance(target, str):
            target = Target.parse(target)
        slots = needed_slots(config)
        starting: Starting | None = spark if isinstance(spark, Starting) else None
        session: SparkSession | None = None if isinstance(spark, Starting) else spark
        if session is None:
            note = spark_note(config.spark)
            if note is not None:
                logging.getLogger(__name__).warning(note)
            # Spark's JVM starts while the target does (each ~1.5-2.5 s): the target in this
            # thread, which keeps its signal handlers; the session in another.
            starting = starting or new_session(config, slots, changes, capture)
        if isinstance(target, Target) and not target.started:
            stack.enter_context(target)
        ends = endpoints(config, target)
        if starting is not None:
            session = starting.result()
        assert session is not None
        # Before anything is generated or installed: N streams need N task slots at once.
        check_slots(session, slots, config.spark.slot_wait)
        result = pipeline.run(
            session,
            config,
            ends,
            changes=changes,
            snapshot=snapshot,
            work_dir=work_dir,
            custom_sql=[Path(p) for p in custom_sql],
            resume=resume,
            progress=progress,
            on_phase=on_phase,
            capture=capture,
            explain_resets=explain_resets,
            inputs=inputs,
        )
    return result


def capture_options(changes_format: str = "canonical", capture: Options | None = None) -> Options:
    """The capture options of a run or a conversion: ``capture`` with ``changes_format`` (when
    not canonical) as its format; InputError for an unknown format."""
    opts = capture if capture is not None else Options()
    if changes_format != "canonical":
        opts = dataclasses.replace(opts, format=changes_format)
    if opts.format not in FORMATS:
        raise InputError(f"unknown change format {opts.format!r} (known: {', '.join(FORMATS)})")
    return opts


@dataclasses.dataclass(frozen=True)
class Converted:
    """What ``applier convert`` wrote and read: the canonical changes and snapshot folders, the
    transactions and commands, the duplicate deliveries dropped, and the wall time."""

    changes: Path
    snapshot: Path
    transactions: int
    commands: int
    duplicates: int
    seconds: float


def convert(
    config: Config,
    changes: str | Path | None,
    out: str | Path,
    changes_format: str = "canonical",
    capture: Options | None = None,
    spark: SparkSession | None = None,
    snapshot: str | Path | None = None,
) -> Converted:
    """Read captured traffic (or canonical files) as a run would, every record validated, and
    write the canonical change files (JSON Lines; each command with its ``source`` position).
    ``snapshot``: the tables at the capture's start (``applier capture --snapshot``), written
    beside them; the capture's unchanged TOASTed values may come from its rows."""
    from applier.sources.dataset import read_changes, write_changes

    t = time.perf_counter()
    capture = capture_options(changes_format, capture)
    config = check_config(config)
    inputs = check_paths(changes, snapshot, (), None, None, capture=capture)
    cs = read_changes(spark or spark_session(2), config, changes, snapshot, capture, inputs)
    try:
        ch, sn = write_changes(cs, out)
        if cs.notes:
            n = cs.notes
            return Converted(
                ch, sn, n["transactions"], n["changes"], n["duplicates_dropped"], time.perf_counter() - t
            )
        counted = cs.changes.agg(F.countDistinct("xact_seqno").alias("t"), F.count("*").alias("n")).collect()[
            0
        ]
        return Converted(ch, sn, int(counted["t"]), int(counted["n"]), 0, time.perf_counter() - t)
    finally:
        cs.unpersist()


def generate(
    config: Config, out: str | Path, fmt: str = "jsonl", spark: SparkSession | None = None
) -> tuple[Path, Path, int]:
    """Write the configured generated stream as canonical change files: (changes folder,
    snapshot folder, commands written)."""
    from applier.sources.dataset import generate as generate_stream
    from applier.sources.dataset import write_changes
    from applier.sources.hazards import effective_config

    cs = generate_stream(spark or spark_session(2), effective_config(check_config(config)))
    changes, snap = write_changes(cs, out, fmt)
    return changes, snap, cs.changes.count()


def procedure_scripts(
    config: Config, dialect: str, template: str | None = None, proc_schema: str | None = None
) -> list[tuple[str, str]]:
    """(article, install script) per article, as ``sp_scriptpublicationcustomprocs`` writes them:
    the generated procedures of every operation applied by a default procedure, and a comment
    for the others (custom procedures are the user's, SQL statements need none but the
    dialect's support objects, NONE is not replicated). ``template`` ("2016" or "legacy") and
    ``proc_schema`` override the configuration's ``run.proc_template`` / ``run.proc_schema``."""
    from applier.articles import Syntax
    from applier.dialects import DIALECTS
    from applier.dialects.procedures import OPS

    if template is not None or proc_schema is not None:
        run = dataclasses.replace(
            config.run,
            proc_template=template or config.run.proc_template,
            proc_schema=proc_schema or config.run.proc_schema,
        )
        config = config.replace(run=run)
    d = DIALECTS[dialect]()
    scripts: list[tuple[str, str]] = []
    for art in config.articles:
        how = ", ".join(f"{OPS[op]} {art.delivery(op).syntax.value}" for op in "IUD")
        parts = [(f"-- article {art.name} ({how}); {d.name} install script generated by applier", False)]
        if any(art.delivery(op).syntax == Syntax.SQL for op in "IUD"):
            parts += [(s, True) for s in d.support_sql()]
        for op in "IUD":
            dl = art.delivery(op)
            sql = d.procedure_sql(art, op)
            if sql:
                parts.append((sql, True))
            elif dl.procedure:
                comment = f"custom procedure {dl.procedure} ({dl.syntax.value} syntax) is not generated; install it with --custom-sql"
                parts.append((f"-- {OPS[op]}: {comment}", False))
            elif dl.syntax == Syntax.SQL:
                parts.append((f"-- {OPS[op]}: applied as SQL statements, no procedure", False))
            else:
                parts.append((f"-- {OPS[op]}: NONE, not replicated", False))
        scripts.append((art.name, d.script(parts)))
    return scripts
