"""What one subscription's streams are given: their job (the settings every stream task
needs, a load test's pace), the stream's size hint, and why most rounds reset when they did
(the dependency analysis, from the planned stream the run holds)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping

from pyspark.sql import DataFrame, SparkSession

from applier.apply.digest import EventDigest
from applier.apply.events import EVENT_SCHEMA
from applier.apply.gate import ScheduleSpec, order_of
from applier.apply.job import StreamJob
from applier.apply.pace import Pace
from applier.apply.rendezvous import observing
from applier.articles import Article
from applier.config import Config, RunSettings, Subscription
from applier.errors import ConfigError, stop_of
from applier.partition.dependencies import dependencies, touches
from applier.partition.figures import explain, figures
from applier.partition.strategies import Timed
from applier.pipeline import cost
from applier.pipeline.identity import RunIdentity
from applier.pipeline.schedule import read_schedule
from applier.results import ApplySummary
from applier.sources.dataset import ChangeSet
from applier.targets.connection import REAPPLY
from applier.targets.endpoint import Endpoint
from applier.verify.target import failure_reason

Say = Callable[[str], None]
log = logging.getLogger(__name__)
RESET_ROUNDS = 10_000  # reset rounds the explanation checks one by one at most


def explained(
    planned: DataFrame,
    rs: RunSettings,
    articles: tuple[Article, ...],
    summary: ApplySummary,
    digest: EventDigest,
    transactions: int,
) -> ApplySummary:
    """The summary with why most of its rounds reset and what would let the traffic run in
    parallel (:mod:`applier.partition.dependencies`: the analysis ``applier streams --explain``
    shows), from the planned stream as it was applied (cached: one Spark job). An analysis that
    fails leaves the summary as it was: the run's verdict does not hang on it."""
    # the reset rounds, from their log lines (every one is in the digest); past RESET_ROUNDS the
    # analysis does not name which of them hold a dependency (a list that long in a query)
    resets = {r["round"] for r in digest.of("log") if r["outcome"] is None and r["round"] is not None}
    try:
        fig = figures(
            dependencies(touches(planned, articles)),
            rs.commit_batch_size,
            transactions,
            sorted(resets) if len(resets) == summary.resets <= RESET_ROUNDS else None,
        )
    except Exception as e:  # noqa: BLE001 - an explanation that fails explains nothing, and says so in the log
        if stop_of(e) is not None:
            raise
        log.warning("could not explain the resets: %s", failure_reason(e))
        log.info("the resets' explanation failed", exc_info=True)
        return summary
    par = explain(
        fig,
        rounds=summary.rounds,
        resets=summary.resets,
        strategy=rs.partition,
        model=rs.model,
        commit_batch_size=rs.commit_batch_size,
    )
    return dataclasses.replace(summary, parallelism=par)


def timed(config: Config, cs: ChangeSet) -> Timed | None:
    """A replay at the capture's pace (``--pace source``): its commit times, speed and round
    interval; None for any other run."""
    ld = config.load
    if ld.pace != "source":
        return None
    if cs.commit_times is None:
        raise ConfigError(
            f"{cs.origin}: --pace source replays a capture at its commit times, and this stream "
            "has none (read a capture with --format wal2json, wal2json2, debezium, maxwell or "
            "mssql-cdc; pace a canonical or generated stream with --rate)"
        )
    return Timed(cs.commit_times, ld.speed, ld.batch_interval)


def size_hint(config: Config, cs: ChangeSet, ident: RunIdentity, routing: Mapping[str, int]) -> int:
    """Commands the subscription's stream holds (how its planned stream is cached: a large one
    on disk only, never in the driver JVM's heap): the generated count, the routed counts, or
    a count of the stream as read (cached)."""
    if "generated" in ident.settings["source"]:
        return config.workload.commands
    if routing:
        return sum(routing.values())
    if cs.rows is not None:
        return cs.rows
    with cost.phase("plan"):
        return int(cs.changes.count())


def commands_of(config: Config, cs: ChangeSet, ident: RunIdentity) -> int | None:
    """The commands of the stream where they are known without a job (None: not known)."""
    if cs.stats is not None:
        return cs.stats.commands
    if cs.rows is not None:
        return cs.rows
    return config.workload.commands if "generated" in ident.settings["source"] else None


def stream_job(
    config: Config,
    sub: Subscription,
    endpoint: Endpoint,
    articles: tuple[Article, ...],
    *,
    set_apply: bool,
    segmented: bool,
) -> StreamJob:
    """What the stream tasks of ``sub`` need: [run]'s lock timeout, error policy and retry
    attempts (the single-connection re-apply's tenacity policy), the subscription's streams.
    Rounds and articles are set per segment; ``segmented``: (stream, round) does not name a
    share across segments, so shares are not summarized as batch events."""
    rs = config.run
    schedule = None
    if rs.schedule == "controlled":
        order = order_of(read_schedule(rs.schedule_file)) if rs.schedule_file else ()
        schedule = ScheduleSpec(rs.schedule_seed, rs.schedule_strategy, rs.pct_depth, order)
    return StreamJob(
        endpoint,
        articles,
        sub.name,
        sub.streams or rs.streams,
        0,
        rs.lock_timeout_ms,
        rs.error_policy,
        retry=dataclasses.replace(REAPPLY, attempts=rs.retry_attempts),
        set_apply=set_apply,
        audit=rs.audit_commands,
        batch_events=not segmented,
        schedule=schedule,
        pace=Pace(rs.commit_batch_size, rate=config.load.rate) if config.load.rate is not None else None,
        live=observing(),
    )


def union(spark: SparkSession, parts: list[DataFrame]) -> DataFrame:
    if not parts:
        return spark.createDataFrame([], EVENT_SCHEMA)
    df = parts[0]
    for p in parts[1:]:
        df = df.unionByName(p, allowMissingColumns=True)
    return df
