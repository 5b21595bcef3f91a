"""One subscription's stream, cut into segments at its barrier events, each applied by the model.

A barrier is a schema change (seed 001), an rs_sqldml statement sent as a statement (seed
004) or an applied procedure delivered as the procedure (seed 000). Between barriers the apply
model runs as usual (N streams, rounds, resets); at a barrier every stream has drained and
committed (the model's stage has ended), the barrier is applied on one connection
(``apply.barriers``), and the next segment starts, its calls planned for the new shape. A
stream without barriers is one segment: a plain run is one full-copy subscription with one
segment.

A barrier inside a transaction splits that transaction's commit at the subscriber; the end
state is the same. Each segment keeps its own progress rows (``<subscription>/<k>``) because
round numbers start again at 0 in every segment, and each barrier commits its own row
(``<subscription>/barriers``) with its effect (``apply.barriers``). A resumed run goes through
the same segments: the streams skip the rounds their rows show committed (every round of a
segment that finished), the barriers their rows show applied (a statement recorded as sent as
rows stays so), and the rest is applied. Barrier events are collected to the driver (there are
few); row commands never are.
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from applier.apply import Streamed, apply_model
from applier.apply.digest import EventDigest, digest_events
from applier.apply.events import EVENT_SCHEMA
from applier.apply.job import StreamJob
from applier.apply.pace import Pace
from applier.apply.streams import clear_feeds, feed_folder, feed_frame, feeds_from_files, write_feed
from applier.articles import Article
from applier.config import Subscription
from applier.distribute.routing import sub_articles
from applier.errors import ApplierError
from applier.partition.layout import lay_out
from applier.partition.strategies import Timed, cut
from applier.pipeline import cost
from applier.pipeline.barriers import Plan, Say, applied_barriers, apply_barrier
from applier.plan.columns import row_bytes_bound
from applier.records.events import Schemas
from applier.sources.dataset import StreamStats
from applier.sparkenv import cache_level, without_aqe
from applier.targets.endpoint import Endpoint
from applier.targets.progress import BarrierMark, ProgressTable, segment_name

log = logging.getLogger("applier.pipeline")
Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass(frozen=True)
class Settings:
    """How one subscription's segments are applied (from [run] and the subscription)."""

    name: str
    commit_batch_size: int
    strategy: str
    model: str
    job: StreamJob  # the template every segment's job is made from (streams, policies)
    resume: bool = False  # an earlier run of the same stream applied some of it here
    size_hint: int | None = None  # commands the stream holds, when known before reading it
    timed: Timed | None = None  # --pace source: rounds cut, and due, on the capture's clock


@dataclass
class Applied:
    """What the segments did: events, counts, the planned stream of a single segment."""

    events: list[DataFrame] = field(default_factory=list)
    digest: EventDigest = field(default_factory=EventDigest)  # of every events DataFrame
    rounds: int = 0
    segments: int = 0
    commands: int = 0
    transactions: int = 0
    apply_seconds: float = 0.0
    fatal: bool = False
    schema_changes: list[dict[str, Any]] = field(default_factory=list)
    event_dirs: list[str] = field(default_factory=list)  # where each stage wrote its events
    planned: DataFrame | None = None  # the one segment's laid-out stream, kept for verify
    feed: str | None = None  # the folder of feed files ``planned`` reads, kept as long as ``planned`` is
    pace: Pace | None = None  # the last segment's pace (a paced run's figures)

    def release(self) -> None:
        """Free the planned stream kept for verify: its cache, or the feed files it reads."""
        if self.planned is not None:
            self.planned.unpersist()
        if self.feed is not None:
            shutil.rmtree(self.feed, ignore_errors=True)
            self.feed = None


def _poll_progress(
    target: Endpoint, name: str, total: int, progress: Progress, stop: threading.Event
) -> None:
    """Rounds committed, read from the progress table (the agent's own watermark)."""
    try:
        conn = target.connect(1000)
    except Exception:  # noqa: BLE001 - progress display is best effort
        return
    table = ProgressTable(target.dialect)
    try:
        cur = conn.cursor()
        while not stop.wait(0.5):
            try:
                last = table.last_round(cur, name)
                conn.commit()
                progress("apply", 0 if last is None else last + 1, total)
            except Exception:  # noqa: BLE001
                return
    finally:
        conn.close()


def _segment(
    spark: SparkSession,
    rows: DataFrame,
    articles: tuple[Article, ...],
    k: int,
    st: Settings,
    known: StreamStats | None,
    keep_planned: bool,
    work_dir: Path,
    out: Applied,
    say: Say,
    progress: Progress,
) -> Streamed | None:
    """Plan, partition, lay out and apply one segment; its events (None: nothing to apply).
    ``known``: the transactions and commands of a stream whose transactions are
    consecutive and counted, read without a pass over it."""
    with cost.phase("plan"), without_aqe(spark):
        made = _plan(spark, rows, articles, k, st, known, work_dir, out, say)
    if made is None:
        return None
    planned, n_rounds, feed, commands, schedule = made
    name = segment_name(st.name, k)
    endpoint = st.job.endpoint
    n = st.job.streams
    job = replace(st.job, articles=articles, subscription=name, rounds=n_rounds, feed=feed, commands=commands)
    if st.timed is not None:
        firsts = schedule["firsts"]
        sizes = [b - a for a, b in zip(firsts, [*firsts[1:], len(schedule["dues"])], strict=True)]
        job = replace(
            job,
            pace=Pace(max(sizes), due=tuple(schedule["dues"]), firsts=tuple(firsts), speed=st.timed.speed),
        )
    out.pace = job.pace
    say(
        f"applying {commands} commands in {n_rounds} rounds on {n} streams" + (f" (segment {k})" if k else "")
    )
    stop = threading.Event()
    poller = threading.Thread(
        target=_poll_progress, args=(endpoint, name, n_rounds, progress, stop), daemon=True
    )
    poller.start()
    events_dir = str(work_dir / f"events-{st.name.replace('/', '_')}-{k}")
    kept = False  # a fed stream kept for verify keeps its files (Applied.release removes them)
    try:
        with cost.phase("apply") as clock:
            streamed = apply_model(st.model)(spark, planned, job, events_dir)
        out.event_dirs.append(events_dir)
        kept = keep_planned
    finally:
        stop.set()
        poller.join(timeout=5)
        if feed is not None and not kept:
            shutil.rmtree(feed, ignore_errors=True)
    out.apply_seconds += clock.seconds  # the run's phases_seconds["apply"] sums the same clocks
    progress("apply", n_rounds, n_rounds)
    if keep_planned:
        out.planned, out.feed = planned, feed
    else:
        planned.unpersist()
    out.rounds += n_rounds
    out.segments += 1
    return streamed


def _plan(
    spark: SparkSession,
    rows: DataFrame,
    articles: tuple[Article, ...],
    k: int,
    st: Settings,
    known: StreamStats | None,
    work_dir: Path,
    out: Applied,
    say: Say,
) -> tuple[DataFrame, int, str | None, int, dict[str, Any]] | None:
    """One segment's planned stream (cached), its rounds, its feed folder, its commands and,
    paced on the capture's clock, its schedule (each transaction's due time, the rounds' first
    transactions)."""
    say("planning rounds and streams" + (f" (segment {k})" if k else ""))
    counted: dict[str, int] = {}
    schedule: dict[str, Any] = {}
    n = st.job.streams
    parted, n_rounds = cut(
        rows,
        st.commit_batch_size,
        st.strategy,
        n,
        articles,
        (known.first_xact, known.transactions) if known else None,
        counted,
        known.xacts if known else None,
        st.timed,
        schedule,
    )
    if not n_rounds:
        return None
    # The agent's procedure calls are planned from typed value columns (plan.columns), made
    # from the laid-out rows' Arrow batches (plan.reading): in the feed files as they are
    # written, or by the stream tasks as their batches arrive from Spark.
    values = st.model == "agent" and not st.job.set_apply
    feeding = st.job.schedule is None and feeds_from_files(spark, st.size_hint)
    planned = lay_out(parted, n, articles)
    feed: str | None = None
    if feeding:
        # The streams' files are the planned stream from here on (verify reads them): nothing
        # is cached.
        feed = str(feed_folder(work_dir, st.name, k))
        fed_rows = sum(
            write_feed(spark, planned, feed, row_bytes_bound(articles), articles if values else ())
        )
        planned = feed_frame(spark, feed, n, planned.schema)
    else:
        planned = planned.persist(cache_level(st.size_hint))
    if known is not None:
        commands, transactions = (fed_rows if feed else planned.count()), known.transactions
        if commands != known.commands:  # the oracle reads `planned` then: nothing may be lost
            raise ApplierError(f"planned {commands} commands of the {known.commands} in the stream")
    else:  # as with_rounds read them: the planned stream is the same rows, laid out
        commands, transactions = counted["commands"], counted["transactions"]
    out.commands += commands
    out.transactions += transactions
    return planned, n_rounds, feed, commands, schedule


def apply_segments(
    spark: SparkSession,
    routed: DataFrame,
    schemas: Schemas,
    sub: Subscription,
    st: Settings,
    plan: Plan,
    work_dir: Path,
    say: Say,
    progress: Progress,
    known: StreamStats | None = None,
) -> Applied:
    """Apply ``routed`` (the subscription's row commands; barrier events may be among them) in
    segments cut at ``plan.barriers``. ``known`` as for :func:`_segment` (one segment only).
    ``st.resume``: skip what an earlier run recorded applied (rounds and barriers)."""
    out = Applied()
    for folder in clear_feeds(work_dir, st.name):
        log.info("removed %s: the rows a killed run had laid out for its streams", folder)
    done = applied_barriers(st.job.endpoint, st.name, plan) if st.resume and plan.barriers else {}
    versions: dict[str, int] = {n: 1 for n in schemas.versions}
    committed: list[int] = []
    lo: int | None = None
    k = 0
    rows = (
        routed.where(F.col("op").isin("I", "U", "D"))
        if plan.barriers or "source_op" in routed.columns
        else routed
    )
    for i, b in enumerate([*plan.barriers, None]):
        hi = None if b is None else b.lsn
        seg = rows
        if lo is not None:
            seg = seg.where(F.col("lsn") > lo)
        if hi is not None:
            seg = seg.where(F.col("lsn") < hi)
        if committed:
            seg = seg.where(F.col("statement").isNull() | ~F.col("statement").isin(committed))
        articles = sub_articles(schemas, sub, versions)
        with cost.phase("plan"):
            some = not out.fatal and (not plan.barriers or bool(seg.limit(1).count()))
        if some:
            made = _segment(
                spark, seg, articles, k, st, known, not plan.barriers, work_dir, out, say, progress
            )
            if made is not None:
                out.events.append(made.events)
                out.digest.add(made.digest.part())
                # A fatal round stops the run before the next barrier (none follows the last
                # segment: the summary reports it from the events).
                out.fatal = any(
                    n for (kind, o, _), n in made.digest.tallies.items() if (kind, o) == ("round", "fatal")
                )
                k += 1
        if b is not None and not out.fatal:
            mark = BarrierMark(st.name, i, b.lsn)
            apply_barrier(
                b,
                mark,
                done.get(i),
                sub,
                st.job.endpoint,
                schemas,
                versions,
                articles,
                plan,
                committed,
                out.schema_changes,
                say,
            )
        lo = hi
    if committed:
        stated = routed.where(F.col("statement").isin(committed) & F.col("op").isin("I", "U", "D")).select(
            F.lit("command").alias("kind"),
            "lsn",
            "xact_seqno",
            F.lit(0).alias("stream"),
            F.lit(None).cast("int").alias("round"),
            F.lit("statement").alias("outcome"),
            "article",
        )
        out.events.append(stated)
        with cost.phase("verify"):
            out.digest.add(digest_events(_conformed(stated)).part())
    return out


def _conformed(events: DataFrame) -> DataFrame:
    """``events`` with every column of EVENT_SCHEMA (NULL where it has none)."""
    cols = [c.strip().split(" ", 1) for c in EVENT_SCHEMA.split(",")]
    return events.selectExpr(
        *[name if name in events.columns else f"CAST(NULL AS {kind}) AS {name}" for name, kind in cols]
    )
