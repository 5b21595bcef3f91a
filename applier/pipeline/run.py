"""The run loop: sources -> for each subscription: distribute -> prepare -> segments -> verify.

A plain run (no ``[[subscriptions]]``) is one full-copy subscription named after
``[run] subscription``; a stream without schema changes or statements is one segment. This
module only sequences the stages; each stage lives in its own package.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from applier import failpoints, leftovers
from applier.apply.summary import summarize
from applier.config import Config, Subscription
from applier.distribute.routing import filter_rows, route, sub_articles
from applier.errors import ApplierError, stop_of
from applier.pipeline import cost
from applier.pipeline.barriers import Plan, forget_segments, plan_barriers
from applier.pipeline.identity import RunIdentity, run_identity
from applier.pipeline.prepare import prepare, record, resumed
from applier.pipeline.schedule import conflict_rows, event_files, schedule_rows
from applier.pipeline.segments import Applied, Settings, apply_segments
from applier.pipeline.streamjob import commands_of, explained, size_hint, stream_job, timed, union
from applier.records.events import Schemas, StreamEvent, stream_events
from applier.records.schema import EVENT_OPS
from applier.results import ApplySummary, Check, RunResult, SubscriptionResult
from applier.sources.dataset import ChangeSet, generate, read_changes
from applier.sources.files import Inputs, check_inputs
from applier.sources.formats import Options, suffixes_of
from applier.sources.hazards import effective_config
from applier.sources.lengths import check_utf16_lengths
from applier.sparkenv import without_aqe
from applier.targets.endpoint import Endpoint
from applier.targets.progress import (
    APPLIED,
    APPLYING,
    STARTED,
    Baseline,
    RunRecord,
)
from applier.verify import scope
from applier.verify.diff import verify
from applier.verify.oracle import digest_diff, latest_rows, oracle, replicated
from applier.verify.target import failure_reason, read_target

Say = Callable[[str], None]
Progress = Callable[[str, int, int], None]  # (stage, done, total)
FATAL = "the single connection hit an error the policy does not skip"

# A run says why its rounds reset (one Spark job) when more than this share of them did.
EXPLAINED_SHARE = 0.5
# ... and at least this many of them: the explanation is a Spark job of four shuffles (~1 s of
# a warm 1,000-command run of 2 rounds, twice the rest of its verify); a run of a round or two
# is a correctness test, where `applier streams --explain` says the same on demand
EXPLAINED_RESETS = 3
KEYS_NO = "the stream changes the schema or carries statements or procedures: rows no key names change"
STOPPED = "the run stopped: transient errors on the single connection outlasted the retry policy ({})"


def _stopped_why(summary: ApplySummary) -> str:
    """Why a run stopped early: transient errors past the retries, or the error (and its
    command) that failed the single connection."""
    if summary.stopped is not None:
        return STOPPED.format(summary.stopped)
    return f"{FATAL}: {summary.failure}" if summary.failure else FATAL


log = logging.getLogger("applier.pipeline")


def subscriptions(config: Config) -> tuple[Subscription, ...]:
    """The run's subscriptions: ``[[subscriptions]]``, or one full copy named after
    ``[run] subscription`` (a plain run)."""
    return config.subscriptions or (Subscription(config.run.subscription),)


def load_stream(
    spark: SparkSession,
    config: Config,
    changes: str | Path | None,
    snapshot: str | Path | None,
    capture: Options | None = None,
    inputs: Inputs | None = None,
) -> ChangeSet:
    if not reads_input(changes, capture):
        return generate(spark, config)
    return read_changes(spark, config, changes, snapshot, capture, inputs)


def reads_input(changes: str | Path | None, capture: Options | None) -> bool:
    """Whether the run reads its stream (a change path, or a capture's own source) rather
    than generating it."""
    return changes is not None or (capture is not None and capture.source is not None)


def run(
    spark: SparkSession,
    config: Config,
    endpoints: Mapping[str, Endpoint],
    *,
    changes: str | Path | None = None,
    snapshot: str | Path | None = None,
    work_dir: str | Path | None = None,
    custom_sql: Sequence[Path] = (),
    resume: bool = False,
    progress: Progress | None = None,
    on_phase: Say | None = None,
    capture: Options | None = None,
    explain_resets: bool = True,
    inputs: Inputs | None = None,
) -> RunResult:
    """Apply one stream to every subscription (``endpoints``: its subscriber database, by
    subscription name) and verify each against the oracle, filtered its way.

    ``resume``: the subscribers already hold an earlier run of the same stream (crashed or
    stopped): keep their tables and progress rows, and let every stream skip what its progress
    row shows committed: nothing lost, nothing applied twice.

    ``capture``: the format of ``changes`` (Debezium, wal2json, SQL Server CDC...) and how to
    read it; None or format canonical: applier's own change files.

    ``explain_resets``: a subscription whose rounds mostly reset says why (``EXPLAINED_SHARE``,
    at least ``EXPLAINED_RESETS`` of them;
    one Spark job, phase ``explain``).

    ``inputs``: the driver's scan of ``changes`` and ``snapshot`` (``check_paths``'s; None: made
    here): the stream is read and the run's identity digested from it, each file opened once."""
    reading = reads_input(changes, capture)
    if not reading:
        config = effective_config(config)  # a hazard workload brings its own articles
    elif inputs is None:
        inputs = check_inputs(changes, snapshot, (), suffixes_of(capture))
    say = on_phase or (lambda _: None)
    subs = subscriptions(config)
    missing = [s.name for s in subs if s.name not in endpoints]
    if missing:
        raise ApplierError(f"no subscriber database for subscription(s) {missing}")
    # A resume is checked before the stream is read (another run is refused at once); a new run
    # is recorded as started once its input is validated, before anything is installed.
    base = Schemas.build({a.name: a for a in config.articles}, [])
    arts = {s.name: sub_articles(base, s, {}) for s in subs}
    idents = {
        s.name: run_identity(
            config,
            s,
            arts[s.name],
            changes,
            snapshot,
            s.streams or config.run.streams,
            capture,
            inputs,
        )
        for s in subs
    }
    # The runs resumed; a subscriber that holds neither a record of the run nor its tables (one
    # stopped before it recorded its start) starts it from the beginning.
    held: dict[str, RunRecord] = {}
    for s in subs if resume else ():
        found = resumed(endpoints[s.name], s.name, idents[s.name], arts[s.name])
        if found is not None:
            held[s.name] = found
        else:
            say(f"--resume: no run of {s.name!r} nor its tables here: starting from the beginning")
    own_dir = work_dir is None
    wd = leftovers.owned_dir("applier-work-") if work_dir is None else Path(work_dir)
    wd.mkdir(parents=True, exist_ok=True)
    meter = cost.meter_for(spark)
    try:
        with cost.metering(meter):
            say("reading changes" if reading else f"generating {config.workload.kind} workload")
            with cost.phase("prepare") as read:
                cs = load_stream(spark, config, changes, snapshot, capture, inputs)
                by_name = {a.name: a for a in config.articles}
                schemas = cs.schemas or Schemas.build(by_name, [])
                if reading:  # lengths as a SQL Server subscriber counts them (generated text fits)
                    utf16 = frozenset().union(*(endpoints[s.name].dialect.UTF16_LENGTHS for s in subs))
                    check_utf16_lengths(cs.changes, cs.snapshot, cs.origin, schemas, utf16)
                # Schema changes, statements and procedures: few, collected once (row commands
                # never are). A generated stream has none.
                # Their payloads are decoded here, once for every subscription.
                events: list[StreamEvent] = []
                if reading and cs.events is not None:  # decoded by the validation
                    events = list(cs.events)
                elif reading:
                    rows = cs.changes.where(F.col("op").isin(*EVENT_OPS)).orderBy("lsn").collect()
                    events = list(stream_events(rows, cs.schemas))
            read_seconds = read.seconds
            for s in subs:
                if s.name in held:
                    continue
                record(endpoints[s.name], s.name, idents[s.name], STARTED, None)
            out = []
            for sub in subs:
                # the subscription's phases, counted by the same clocks as the run's cost
                phases = {"prepare": read_seconds, "plan": 0.0, "apply": 0.0, "verify": 0.0}
                with cost.tally(phases):
                    done = _subscription(
                        spark=spark,
                        config=config,
                        cs=cs,
                        schemas=schemas,
                        events=events,
                        sub=sub,
                        endpoint=endpoints[sub.name],
                        wd=wd,
                        custom_sql=custom_sql,
                        ident=idents[sub.name],
                        held=held.get(sub.name),
                        say=say,
                        progress=progress or (lambda *_: None),
                        phases=phases,
                        explain_resets=explain_resets,
                    )
                out.append(done)
                read_seconds = 0.0  # the stream is read once, for the first subscription
            cs.unpersist()
            settings = config.to_dict()
            if cs.notes:
                settings["input"] = dict(cs.notes)
            return RunResult(
                tuple(out),
                settings,
                implicit=not config.subscriptions,
                cost={k: c.to_dict() for k, c in meter.costs().items()},
            )
    finally:
        if own_dir:
            shutil.rmtree(wd, ignore_errors=True)


def _subscription(
    *,  # fifteen arguments: by name
    spark: SparkSession,
    config: Config,
    cs: ChangeSet,
    schemas: Schemas,
    events: list[StreamEvent],
    sub: Subscription,
    endpoint: Endpoint,
    wd: Path,
    custom_sql: Sequence[Path],
    ident: RunIdentity,
    held: RunRecord | None,
    say: Say,
    progress: Progress,
    phases: dict[str, float],  # the tally its phases add their seconds to (cost.tally)
    explain_resets: bool = True,
) -> SubscriptionResult:
    rs = config.run
    names = tuple(a.name for a in config.articles)
    full_copy = sub.full_copy(names)
    # A full copy of a stream without events and schema changes receives every command as it
    # is: nothing to route, and the plan may read counts it already knows.
    whole = full_copy and not events and cs.schemas is None
    with cost.phase("prepare"):
        if whole:
            routed, routing = cs.changes, {}
        else:
            say(f"{sub.name}: distributing")
            has_sql = any(e.op in ("SQL", "PROC") for e in events)
            routed = route(cs.changes, schemas, sub, has_sql).persist(StorageLevel.MEMORY_AND_DISK)
            routing = {
                f"{r['source_op']}>{r['op']}": int(r["count"])
                for r in routed.where(F.col("op").isin("I", "U", "D"))
                .groupBy("source_op", "op")
                .count()
                .collect()
            }
        first = sub_articles(schemas, sub, {})
        set_apply = rs.set_apply and cs.schemas is None
        if rs.set_apply and not set_apply:
            say(f"{sub.name}: set-based apply is off: the stream changes the schema (applying row by row)")
        if set_apply and not endpoint.dialect.SET_APPLY:
            say(f"set-based apply is not available for {endpoint.dialect_name}: applying row by row")
        snap = (
            cs.snapshot
            if whole
            else filter_rows(cs.snapshot.withColumn("schema_version", F.lit(1)), schemas, sub, final=False)
        )
        # verify in proportion to the change: the stream's keys, and a digest of the rest taken
        # after the load (applier.verify.scope), where that reads less than the whole subscriber
        commands = commands_of(config, cs, ident)
        keys_why = None if not events and cs.schemas is None else KEYS_NO

        def baselines(rows: int) -> list[Baseline]:  # the snapshot's rows are known once loaded
            if scope.plan(rs.verify, keys_why, rows, commands) is not None:
                return []
            return scope.take_baselines(
                spark, endpoint, first, replicated(cs.changes, first), rs.verify, commands
            )

        loaded = prepare(
            endpoint,
            sub,
            first,
            ident,
            snap,
            custom_sql,
            set_apply,
            full_copy,
            held,
            say,
            label=not whole,
            snapshot_rows=cs.snapshot_rows,
            baselines=baselines,
            range_rows=rs.snapshot_range_rows,
        )

    with cost.phase("plan"):
        plan = Plan() if whole else plan_barriers(routed, events, sub, full_copy)
    job = stream_job(config, sub, endpoint, first, set_apply=set_apply, segmented=bool(plan.barriers))
    # the earlier run applied some of the stream here: its progress rows, and its barriers' (every
    # schema change, statement and procedure commits its own with its effect), say what
    resuming = held is not None and held.phase in (APPLYING, APPLIED)
    st = Settings(
        sub.name,
        rs.commit_batch_size,
        rs.partition,
        rs.model,
        job,
        resuming,
        size_hint=size_hint(config, cs, ident, routing),
        timed=timed(config, cs),
    )
    known = cs.stats if whole else None
    if plan.barriers and not resuming:  # rows an older run of the subscription left
        forget_segments(endpoint, sub.name, plan)
    record(endpoint, sub.name, ident, APPLYING, loaded)
    applied = apply_segments(spark, routed, schemas, sub, st, plan, wd, say, progress, known)
    if not applied.fatal:
        record(endpoint, sub.name, ident, APPLIED, loaded)
        failpoints.reach("apply.done")

    # The planned stream kept for verify (a cache, or the feed files it reads) is freed whatever
    # verify and the explanation do; a kill -9 leaves the files to the next run (clear_feeds).
    try:
        with cost.phase("verify"):
            ev = union(spark, applied.events)
            digest = applied.digest
            summary = summarize(
                ev,
                rounds=applied.rounds,
                streams=job.streams,
                commands=applied.commands,
                transactions=applied.transactions,
                apply_seconds=applied.apply_seconds,
                segments=applied.segments,
                snapshot_rows=loaded,
                source=cs.origin,
                digest=digest,
                pace=applied.pace or job.pace,
            )
            say("verifying" if whole else f"{sub.name}: verifying")
            final = sub_articles(schemas, sub, {n: len(v) for n, v in schemas.versions.items()})
            failpoints.reach("verify.start")
            try:
                whole_why = scope.plan(rs.verify, keys_why, loaded or 0, commands)
                sc = scope.scope_of(endpoint, sub.name, final, rs.verify, whole_why)
                with without_aqe(spark, rows=applied.commands + (loaded or 0)):
                    check = _verify(spark, cs, schemas, sub, endpoint, final, whole, routed, applied, ev, sc)
                check = scope.finish(check, sc)
                scope.release(endpoint, sub.name, final, sc)
            except ApplierError:
                raise
            except Exception as e:  # noqa: BLE001 - a checker that crashes says unknown, never passes
                if stop_of(e) is not None:
                    raise  # a signal that landed inside a C call: the run stops, it did not check
                # The reason is one line (the summary's verdict cell, the report); the traceback
                # goes to applier's log (on the console with -v).
                check = Check.unknown(failure_reason(e))
                log.info("%s: verify: %s", sub.name, check.reason, exc_info=True)
        planned = applied.planned  # one segment's (a run with barriers starts its rounds again at each)
        many = summary.resets > EXPLAINED_SHARE * summary.rounds and summary.resets >= EXPLAINED_RESETS
        if explain_resets and many and job.streams > 1 and planned is not None:
            with cost.phase("explain"), without_aqe(spark, rows=applied.commands):
                summary = explained(planned, config.run, first, summary, digest, applied.transactions)
    finally:
        applied.release()
    if not whole:
        routed.unpersist()
    fatal = applied.fatal or summary.fatal
    with cost.phase("report"):
        schedule = schedule_rows(
            ev,
            work=wd / f"schedule-{sub.name.replace('/', '_')}",
            digest=digest,
            files=event_files(applied.event_dirs),
        )
        conflicts = tuple(conflict_rows(ev, digest))
    return SubscriptionResult(
        sub.name,
        endpoint.description,
        check,
        summary,
        phases,
        _stopped_why(summary) if fatal else None,
        routing,
        tuple(plan.statements),
        tuple(applied.schema_changes),
        tuple(plan.procedures),
        schedule,
        conflicts,
    )


def _verify(
    spark: SparkSession,
    cs: ChangeSet,
    schemas: Schemas,
    sub: Subscription,
    endpoint: Endpoint,
    final: tuple[Any, ...],
    whole: bool,
    routed: DataFrame,
    applied: Applied,
    events: DataFrame,
    sc: scope.Scope,
) -> Check:
    """The subscriber against the oracle. A full copy of one schema version compares digests
    first (the images are read only to explain a divergence); a filtered subscription compares
    the oracle filtered by its where clauses, cut to its columns, at the last versions. An
    article read by the stream's keys (``sc``) is compared on them alone."""
    found = read_target(spark, endpoint, final, touched=sc.touched)
    snapshot = sc.cut_snapshot(cs.snapshot)
    skipped = sum(
        n for (kind, o, _), n in applied.digest.tallies.items() if (kind, o) == ("command", "skipped")
    )
    if whole:
        # A generated stream is not cached: its commands are read back from the planned stream
        # (cached, its count checked); anything else from the stream as read.
        source = applied.planned if applied.planned is not None and cs.stats is not None else cs.changes
        commands_in = replicated(source, final)
        digests = digest_diff(commands_in, snapshot, found)
        blame = applied.planned if applied.planned is not None else cs.changes
        # the images' oracle is made only to explain a divergence
        return verify(
            lambda: oracle(commands_in, snapshot), found, blame, events, digests=digests, skipped=skipped
        )
    commands_in = replicated(cs.changes, final)
    expected = filter_rows(latest_rows(commands_in, snapshot), schemas, sub)
    return verify(expected, found, routed.where(F.col("op").isin("I", "U", "D")), events, skipped=skipped)
