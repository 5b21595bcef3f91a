"""The run: sources -> plan -> partition -> apply -> verify -> report, against one target.

This module only sequences the stages; each stage lives in its own package.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from applier.apply import apply_model
from applier.apply.agent import AgentJob, route_streams
from applier.apply.connection import connect
from applier.apply.constraints import add_constraints
from applier.apply.install import install, load_snapshot
from applier.errors import ApplierError, InputError
from applier.partition.strategies import partition, with_rounds
from applier.settings import Config
from applier.sources.dataset import ChangeSet, generate, read_changes
from applier.targets.odbc import Target
from applier.verify.diff import UNKNOWN, Verdict, verify
from applier.verify.oracle import digested, oracle, oracle_digest, replicated
from applier.verify.target import read_target

Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass
class RunResult:
    verdict: Verdict
    summary: dict[str, Any]
    phases: dict[str, float] = field(default_factory=dict)
    failed: str | None = None

    @property
    def exit_code(self) -> int:
        if self.failed or self.verdict.verdict == UNKNOWN:
            return 2
        return 0 if self.verdict.verdict == "converged" else 1


def load_changes(
    spark: SparkSession, config: Config, changes: str | Path | None, snapshot: str | Path | None
) -> ChangeSet:
    if changes is None:
        return generate(spark, config)
    return read_changes(spark, config, changes, snapshot)


def _poll_progress(
    target: Target, subscription: str, total: int, progress: Progress, stop: threading.Event
) -> None:
    """Rounds committed, read from the progress table (the agent's own watermark)."""
    try:
        dialect = target.dialect
        conn = connect(target.connection_string, dialect, 1000)
    except Exception:  # noqa: BLE001 - progress display is best effort
        return
    try:
        cur = conn.cursor()
        sql = (
            f"SELECT max({dialect.quote('last_round')}) FROM {dialect.progress_table()} "
            f"WHERE {dialect.quote('subscription')} = ?"
        )
        while not stop.wait(0.5):
            try:
                v = cur.execute(sql, subscription).fetchone()[0]
                conn.commit()
                progress("apply", 0 if v is None else int(v) + 1, total)
            except Exception:  # noqa: BLE001
                return
    finally:
        conn.close()


def summarize(
    events: DataFrame, job: AgentJob, commands: int, transactions: int, apply_seconds: float
) -> dict[str, Any]:
    # Two jobs over the events: the tallies, then the few log and stream rows.
    outcomes: dict[str, int] = {}
    conflicts: dict[str, int] = {}
    rounds: dict[str, int] = {}
    tallies = (
        events.where("kind IN ('command', 'batch', 'conflict', 'round')")
        .groupBy("kind", "outcome", "class")
        .agg(F.sum(F.when(F.col("kind") == "batch", F.col("n")).otherwise(F.lit(1))).alias("count"))
        .collect()
    )
    for r in tallies:
        kind, count = r["kind"], int(r["count"])
        if kind in ("command", "batch"):
            outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + count
        elif kind == "conflict":
            conflicts[r["class"]] = conflicts.get(r["class"], 0) + count
        else:
            rounds[r["outcome"]] = rounds.get(r["outcome"], 0) + count
    few = events.where("kind IN ('log', 'stream')").collect()
    logs = [
        r["message"] + f" (round {r['round']}: {r['class']})"
        for r in sorted(
            (r for r in few if r["kind"] == "log"), key=lambda r: (r["round"] is not None, r["round"] or 0)
        )[:50]
    ]
    streams = [
        {
            "stream": r["stream"],
            "commands": r["n"],
            "seconds": round(r["seconds"], 3),
            **json.loads(r["message"]),
        }
        for r in sorted((r for r in few if r["kind"] == "stream"), key=lambda r: r["stream"])
    ]
    by_class = {
        c: conflicts.get(c, 0)
        for c in ("row_not_found", "duplicate_key", "lock_timeout", "deadlock", "foreign_key", "other")
    }
    by_class.update({k: v for k, v in conflicts.items() if k not in by_class})
    applied = outcomes.get("applied", 0) + outcomes.get("reapplied", 0)
    return {
        "commands": commands,
        "transactions": transactions,
        "rounds": job.rounds,
        "rounds_parallel": rounds.get("parallel", 0),
        "resets": rounds.get("reset", 0) + rounds.get("fatal", 0),
        "reset_log": logs,
        "conflicts": by_class,
        "outcomes": outcomes,
        "skipped": outcomes.get("skipped", 0),
        "deferred": outcomes.get("deferred", 0),
        "applied": applied,
        "streams": job.streams,
        "stream_stats": streams,
        "apply_seconds": round(apply_seconds, 3),
        "throughput_cmds_per_s": round(commands / apply_seconds, 1) if apply_seconds > 0 else None,
        "fatal": rounds.get("fatal", 0) > 0,
    }


def run(
    spark: SparkSession,
    config: Config,
    target: Target,
    *,
    changes: str | Path | None = None,
    snapshot: str | Path | None = None,
    work_dir: str | Path | None = None,
    custom_sql: Sequence[Path] = (),
    progress: Progress | None = None,
    on_phase: Callable[[str], None] | None = None,
    resume: bool = False,
) -> RunResult:
    """One run. ``resume``: the subscriber already holds an earlier run of the same stream and
    subscription (crashed or stopped): keep its tables and progress rows, and let every stream
    skip what its progress row shows committed — nothing lost, nothing applied twice."""
    from applier.sources.hazards import effective_config

    if changes is None:
        config = effective_config(config)
    progress = progress or (lambda *_: None)
    say = on_phase or (lambda _: None)
    rs = config.run
    phases: dict[str, float] = {}
    own_dir = work_dir is None
    wd = Path(tempfile.mkdtemp(prefix="applier-work-")) if own_dir else Path(work_dir)  # type: ignore[arg-type]
    wd.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    try:
        say("reading changes" if changes else f"generating {config.workload.kind} workload")
        cs = load_changes(spark, config, changes, snapshot)
        if changes is not None and cs.changes.where(F.col("op").isin("DDL", "SQL", "PROC")).limit(1).count():
            raise InputError(
                f"{changes}: schema change (DDL), statement (SQL) and procedure (PROC) events are applied "
                "per subscription: "
                "add a [[subscriptions]] section (run_subscriptions)"
            )
        if resume:
            say("resuming from the progress table")
            loaded = 0
        else:
            say("installing tables and procedures")
            install(target, config.articles, rs.subscription, custom_sql=custom_sql, set_apply=rs.set_apply)
            loaded = load_snapshot(cs.snapshot, target, config.articles)
            add_constraints(target, config.articles)
        phases["prepare"] = time.perf_counter() - t

        t = time.perf_counter()
        say(f"partitioning ({rs.partition}, {rs.streams} streams)")
        known = (cs.stats.first_xact, cs.stats.transactions) if cs.stats else None
        indexed, n_rounds = with_rounds(cs.changes, rs.commit_batch_size, known)
        # Laid out per stream task (the shuffle) here, so that the apply phase only applies.
        planned = route_streams(
            partition(indexed, rs.partition, rs.streams, config.articles), rs.streams, config.articles
        )
        from applier.sparkenv import cache_level

        planned = planned.persist(cache_level(None if changes is not None else config.workload.commands))
        if cs.stats is not None:
            commands, transactions = planned.count(), cs.stats.transactions
            if commands != cs.stats.commands:  # the oracle reads `planned` then: nothing may be lost
                raise ApplierError(f"planned {commands} commands of the {cs.stats.commands} generated")
        else:
            row = planned.agg(F.count("*").alias("c"), F.countDistinct("xact_seqno").alias("x")).collect()[0]
            commands, transactions = int(row["c"]), int(row["x"])
        phases["plan"] = time.perf_counter() - t

        if rs.set_apply and not target.dialect.SET_APPLY:
            say(f"set-based apply is not available for {target.dialect_name}: applying row by row")
        job = AgentJob(
            target.connection_string,
            target.dialect_name,
            config.articles,
            rs.subscription,
            rs.streams,
            n_rounds,
            rs.lock_timeout_ms,
            rs.error_policy,
            set_apply=rs.set_apply,
        )
        say(f"applying {commands} commands in {n_rounds} rounds on {rs.streams} streams")
        stop = threading.Event()
        poller = threading.Thread(
            target=_poll_progress, args=(target, rs.subscription, n_rounds, progress, stop), daemon=True
        )
        poller.start()
        t = time.perf_counter()
        try:
            events = apply_model(rs.model)(spark, planned, job, str(wd / "events"))
        finally:
            stop.set()
            poller.join(timeout=5)
        apply_seconds = time.perf_counter() - t
        progress("apply", n_rounds, n_rounds)
        phases["apply"] = apply_seconds

        t = time.perf_counter()
        summary = summarize(events, job, commands, transactions, apply_seconds)
        summary["snapshot_rows"] = loaded
        summary["source"] = cs.origin
        summary["target"] = target.description
        say("verifying")
        try:
            # A generated stream is not cached: its commands are read back from `planned`
            # (cached, its count checked above); anything else from the stream as read.
            source = planned if cs.stats is not None else cs.changes
            commands_in = replicated(source, config.articles)
            expected = oracle(commands_in, cs.snapshot)
            found = read_target(spark, target, config.articles)
            digests = (oracle_digest(commands_in, cs.snapshot), digested(found))
            verdict = verify(expected, found, planned, events, digests=digests)
        except Exception as e:  # noqa: BLE001 - a checker that crashes says unknown, never passes
            if isinstance(e, ApplierError):
                raise
            verdict = Verdict(UNKNOWN, reason=f"verification failed: {type(e).__name__}: {e}")
        phases["verify"] = time.perf_counter() - t
        planned.unpersist()
        cs.unpersist()
        failed = "the single connection hit an error the policy does not skip" if summary["fatal"] else None
        return RunResult(verdict, summary, phases, failed)
    finally:
        if own_dir:
            shutil.rmtree(wd, ignore_errors=True)


# -- several subscriptions (Replication Server semantics) --------------------------------
@dataclass
class SubscriptionResult:
    """One subscription's run: its RunResult plus what distribute and the barriers did."""

    name: str
    target: str
    result: RunResult
    routing: dict[str, int] = field(default_factory=dict)  # "U>D": commands turned into deletes ...
    statements: list[dict[str, Any]] = field(default_factory=list)
    schema_changes: list[dict[str, Any]] = field(default_factory=list)
    procedures: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "subscription": self.name,
            "target": self.target,
            "verdict": self.result.verdict.to_json(),
            "exit_code": self.result.exit_code,
            "failed": self.result.failed,
            "routing": self.routing,
            "statements": self.statements,
            "schema_changes": self.schema_changes,
            "procedures": self.procedures,
            "summary": self.result.summary,
        }


@dataclass
class MultiRunResult:
    subscriptions: list[SubscriptionResult]

    @property
    def exit_code(self) -> int:
        return max((s.result.exit_code for s in self.subscriptions), default=0)

    def by_name(self, name: str) -> SubscriptionResult:
        return next(s for s in self.subscriptions if s.name == name)


def run_subscriptions(
    spark: SparkSession,
    config: Config,
    targets: dict[str, Target],
    *,
    changes: str | Path | None = None,
    snapshot: str | Path | None = None,
    work_dir: str | Path | None = None,
    on_phase: Callable[[str], None] | None = None,
    custom_sql: Sequence[Path] = (),
) -> MultiRunResult:
    """Distribute one stream to every subscription of ``config.subscriptions`` (each with its
    own subscriber database in ``targets``, by subscription name) and apply it in segments cut
    at schema changes and statements; verify each against the oracle filtered its way."""
    from applier.apply.events import EVENT_SCHEMA
    from applier.apply.segments import apply_segments
    from applier.distribute.routing import filter_rows, route, sub_articles
    from applier.settings import Subscription
    from applier.sources.events import Schemas
    from applier.verify.oracle import subscription_oracle

    say = on_phase or (lambda _: None)
    rs = config.run
    subs = config.subscriptions or (Subscription(rs.subscription),)
    missing = [s.name for s in subs if s.name not in targets]
    if missing:
        raise ApplierError(f"no subscriber database for subscription(s) {missing}")
    own_dir = work_dir is None
    wd = Path(tempfile.mkdtemp(prefix="applier-work-")) if own_dir else Path(work_dir)  # type: ignore[arg-type]
    wd.mkdir(parents=True, exist_ok=True)
    try:
        say("reading changes" if changes else f"generating {config.workload.kind} workload")
        cs = load_changes(spark, config, changes, snapshot)
        by_name = {a.name: a for a in config.articles}
        schemas = cs.schemas or Schemas.build(by_name, [])
        names = tuple(by_name)
        # Schema changes and statements: few, collected once (row commands never are).
        stream_events = cs.changes.where(F.col("op").isin("DDL", "SQL", "PROC")).orderBy("lsn").collect()
        has_sql = any(r["op"] in ("SQL", "PROC") for r in stream_events)
        out = []
        for sub in subs:
            target = targets[sub.name]
            phases: dict[str, float] = {}
            t = time.perf_counter()
            say(f"{sub.name}: distributing")
            routed = route(cs.changes, schemas, sub, has_sql).persist(StorageLevel.MEMORY_AND_DISK)
            routing = {
                f"{r['source_op']}>{r['op']}": int(r["count"])
                for r in routed.where(F.col("op").isin("I", "U", "D"))
                .groupBy("source_op", "op")
                .count()
                .collect()
            }
            first = sub_articles(schemas, sub, {})
            say(f"{sub.name}: installing tables and procedures")
            install(target, first, sub.name, custom_sql=custom_sql)
            snap = filter_rows(cs.snapshot.withColumn("schema_version", F.lit(1)), schemas, sub, final=False)
            loaded = load_snapshot(snap, target, first)
            phases["prepare"] = time.perf_counter() - t
            streams = sub.streams or rs.streams
            seg = apply_segments(
                spark, routed, schemas, sub, target, rs, streams, wd, sub.full_copy(names), say, stream_events
            )
            phases["apply"] = seg.apply_seconds
            events = seg.events if seg.events is not None else spark.createDataFrame([], EVENT_SCHEMA)
            job = AgentJob(
                target.connection_string,
                target.dialect_name,
                first,
                sub.name,
                streams,
                seg.rounds,
                rs.lock_timeout_ms,
                rs.error_policy,
            )
            summary = summarize(events, job, seg.commands, seg.transactions, seg.apply_seconds)
            summary.update(
                snapshot_rows=loaded,
                source=cs.origin,
                target=target.description,
                segments=seg.segments,
            )
            t = time.perf_counter()
            say(f"{sub.name}: verifying")
            final = sub_articles(schemas, sub, {n: len(v) for n, v in schemas.versions.items()})
            try:
                expected = subscription_oracle(cs.changes, cs.snapshot, schemas, sub)
                found = read_target(spark, target, final)
                verdict = verify(expected, found, routed.where(F.col("op").isin("I", "U", "D")), events)
            except Exception as e:  # noqa: BLE001 - a checker that crashes says unknown, never passes
                if isinstance(e, ApplierError):
                    raise
                verdict = Verdict(UNKNOWN, reason=f"verification failed: {type(e).__name__}: {e}")
            phases["verify"] = time.perf_counter() - t
            routed.unpersist()
            fatal = seg.fatal or bool(summary["fatal"])
            failed = "the single connection hit an error the policy does not skip" if fatal else None
            out.append(
                SubscriptionResult(
                    sub.name,
                    target.description,
                    RunResult(verdict, summary, phases, failed),
                    routing,
                    seg.statements,
                    seg.schema_changes,
                    seg.procedures,
                )
            )
        cs.unpersist()
        return MultiRunResult(out)
    finally:
        if own_dir:
            shutil.rmtree(wd, ignore_errors=True)
