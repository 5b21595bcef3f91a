"""The ``agent`` apply model: the Distribution Agent with -SubscriptionStreams N.

One Spark barrier stage with N tasks; task i is stream i and holds one pyodbc connection for
the whole run. The stream is cut into rounds of CommitBatchSize transactions. In a round
every stream applies its share without committing and all meet at a barrier
(``BarrierTaskContext.allGather``). If every stream succeeded, all write their progress row
in the same transaction and commit, then meet again so that no stream starts the next round
before the others committed. If any stream failed (a conflict, or a lock wait past the lock
timeout), all roll back; the shares are gathered and stream 0 re-applies the whole round in
commit order on its single connection — "Number of subscription streams has been reset from
N to 1" — retrying transient errors with tenacity; the next round resumes with N streams.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import logging
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from applier.apply.connection import REAPPLY, RetryPolicy, connect
from applier.apply.events import EVENT_SCHEMA, RESET_LOG, Events
from applier.apply.rendezvous import Address, Coordinator, Rendezvous
from applier.apply.sender import SHARE_FIELDS, Failure, Row, Sender, apply_serially, send_with_policy, slim
from applier.articles import Article, Syntax
from applier.dialects import DIALECTS
from applier.plan.calls import Call, Planner
from applier.settings import ErrorPolicy

log = logging.getLogger("applier.apply")


@dataclass(frozen=True)
class AgentJob:
    """Everything a stream task needs; pickled to the executors (no module state)."""

    connection_string: str
    dialect_name: str
    articles: tuple[Article, ...]
    subscription: str
    streams: int
    rounds: int
    lock_timeout_ms: int
    error_policy: ErrorPolicy
    retry: RetryPolicy = REAPPLY
    rendezvous: Address | None = None  # set by run_streams for the stage
    set_apply: bool = False  # run.set_apply: set-based calls in parallel rounds
    # A share committed whole is one "batch" event (events.command_outcomes expands it by
    # stream and round); False where (stream, round) does not identify the share (segments).
    batch_events: bool = True


class _Peek:
    def __init__(self, it: Iterator[Row]) -> None:
        self.it = it
        self.head: Row | None = next(it, None)

    def take_round(self, r: int) -> list[Row]:
        out = []
        while self.head is not None and self.head["round"] == r:
            out.append(self.head)
            self.head = next(self.it, None)
        if self.head is not None and self.head["round"] < r:
            raise RuntimeError(f"stream rows out of round order at lsn {self.head['lsn']}")
        return out


def _column(col: pa.Array) -> list[Any]:
    """A column as Python values; list columns through their flat values and offsets
    (pyarrow's per-row list conversion costs ~3 µs a row, a third of a stream's Python)."""
    if pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
        offsets = col.offsets.to_pylist()  # of a sliced array: positions in the whole values
        base = offsets[0]
        flat = col.values.slice(base, offsets[-1] - base).to_pylist()
        out: list[Any] = [flat[offsets[i] - base : offsets[i + 1] - base] for i in range(len(col))]
        if col.null_count:
            for i, valid in enumerate(col.is_valid().to_pylist()):
                if not valid:
                    out[i] = None
        return out
    values: list[Any] = col.to_pylist()
    return values


def _rows(batches: Iterator[pa.RecordBatch]) -> Iterator[Row]:
    """Rows as dicts, converted column by column (RecordBatch.to_pylist is ~4x slower)."""
    for b in batches:
        names = b.schema.names
        columns = [_column(b.column(i)) for i in range(b.num_columns)]
        for values in zip(*columns, strict=True):
            yield dict(zip(names, values, strict=True))


def _read_progress(conn: Any, job: AgentJob, stream: int) -> int:
    dialect = DIALECTS[job.dialect_name]()
    cur = conn.cursor()
    cur.execute(dialect.progress_select_sql(), job.subscription)
    done = -1
    for s, _lsn, rnd in cur.fetchall():
        if int(s) == stream:
            done = int(rnd)
    conn.commit()
    return done


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """A stream task allocates a dict per command and keeps little alive: the cyclic garbage
    collector's default thresholds made it scan ~2x the time the rows take to build."""
    before = gc.get_threshold()
    gc.set_threshold(50_000, 20, 100)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def stream_task(job: AgentJob) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        with fewer_collections():
            yield from _stream(batches)

    def _stream(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import BarrierTaskContext

        ctx = BarrierTaskContext.get()
        s = ctx.partitionId()
        dialect = DIALECTS[job.dialect_name]()
        planner = Planner(dialect, job.articles)
        ev = Events(batches=job.batch_events)
        t_start = time.perf_counter()
        conn = connect(job.connection_string, dialect, job.lock_timeout_ms)
        sender = Sender(conn, dialect, planner, s, job.set_apply)
        done_round = _read_progress(conn, job, s)
        upsert = dialect.progress_upsert_sql()
        peek = _Peek(_rows(batches))
        assert job.rendezvous is not None
        rdv = Rendezvous(job.rendezvous, s)
        wait_s = 0.0
        n_cmds = 0

        def skip(f: Failure) -> bool:
            return job.error_policy.skips(f.cls, f.code)

        def progress_call(stream: int, rows: Sequence[Row], rnd: int) -> Call:
            return Call(upsert, (job.subscription, stream, max(r["lsn"] for r in rows), rnd))

        def reconnect_if_lost(f: Failure | None) -> None:
            nonlocal conn
            if f is not None and f.connection_lost:
                with contextlib.suppress(Exception):  # already gone
                    conn.close()
                conn = connect(job.connection_string, dialect, job.lock_timeout_ms)
                sender.conn = conn

        def take(r: int) -> tuple[list[Row], list[tuple[Row, Call]] | None]:
            """Round r's share and, unless an earlier run committed it, its calls."""
            share = peek.take_round(r)
            for row in share:
                if row["stream"] != s:
                    raise RuntimeError(f"row lsn {row['lsn']} of stream {row['stream']} reached task {s}")
            return share, (sender.calls(share) if r > done_round else None)

        fatal = False
        ahead: tuple[list[Row], list[tuple[Row, Call]] | None] | None = None
        for r in range(job.rounds):
            share, planned_calls = ahead if ahead is not None else take(r)
            ahead = None
            if r <= done_round:
                for row in share:
                    ev.command(row, "resumed")
                share = []
            if fatal:
                for row in share:
                    ev.command(row, "not_applied")
                continue
            n_cmds += len(share)
            t_round = time.perf_counter()
            t_exec = time.time()
            calls = planned_calls if planned_calls is not None else sender.calls(share)
            skipped, failure = send_with_policy(
                sender, calls, [progress_call(s, share, r)] if share else [], skip
            )
            if r + 1 < job.rounds:
                # The next share's calls are built while the other streams finish this round.
                ahead = take(r + 1)
            if failure is not None:
                ev.add(
                    "conflict",
                    lsn=failure.lsn,
                    stream=s,
                    round_=r,
                    cls=failure.cls,
                    code=failure.code,
                    message=failure.message,
                )
            for row, f in skipped:
                ev.add(
                    "conflict",
                    lsn=row["lsn"],
                    stream=s,
                    round_=r,
                    cls=f.cls,
                    code=f.code,
                    message=f.message,
                    outcome="skipped",
                )
            t_wait = time.perf_counter()
            gathered = rdv.all_gather(json.dumps(failure.to_json() if failure else None))
            wait_s += time.perf_counter() - t_wait
            failures = [Failure.from_json(d) for d in map(json.loads, gathered) if d]
            if not failures:
                conn.commit()
                ev.committed(share, skipped, "applied", t_exec, time.time())
                t_wait = time.perf_counter()
                rdv.barrier()  # everyone committed before anyone starts the next round
                wait_s += time.perf_counter() - t_wait
                if s == 0:
                    ev.add(
                        "round", round_=r, outcome="parallel", n=None, seconds=time.perf_counter() - t_round
                    )
                yield from ev.drain()
                continue
            # -- reset to one stream --------------------------------------------------
            with contextlib.suppress(Exception):  # a lost connection cannot roll back; the server did
                conn.rollback()
            reconnect_if_lost(failure)
            mine = failure.lsn if failure is not None else None
            for row in share:
                if row["lsn"] == mine and failure is not None:
                    ev.command(
                        row,
                        "conflict",
                        cls=failure.cls,
                        code=failure.code,
                        message=failure.message,
                        t_exec=t_exec,
                    )
                else:
                    ev.command(row, "rolled_back")
            shares = rdv.all_gather(json.dumps(slim(share)))
            result: dict[str, Any] | None = None
            if s == 0:
                message = RESET_LOG.format(n=job.streams)
                log.warning(
                    "%s (round %d: %s)", message, r, ", ".join(f"stream {f.stream} {f.cls}" for f in failures)
                )
                merged = sorted((row for sh in shares for row in json.loads(sh)), key=lambda x: x["lsn"])
                result = _reapply(sender, merged, job, r, skip, ev)
                reconnect_if_lost(None)
                ev.add("log", round_=r, message=message, cls=",".join(sorted({f.cls for f in failures})))
                ev.add(
                    "round",
                    round_=r,
                    outcome="fatal" if result["fatal"] else "reset",
                    cls=",".join(sorted({f.cls for f in failures})),
                    n=len(merged),
                    seconds=time.perf_counter() - t_round,
                )
            outcome = rdv.all_gather(json.dumps(result))
            fatal = bool(json.loads(outcome[0])["fatal"])
            yield from ev.drain()
        rdv.close()
        with contextlib.suppress(Exception):  # already gone
            conn.close()
        ev.add(
            "stream",
            stream=s,
            n=n_cmds,
            seconds=time.perf_counter() - t_start,
            message=json.dumps(
                {
                    "sql_seconds": round(sender.sql_seconds, 4),
                    "barrier_wait_seconds": round(wait_s, 4),
                    "round_trips": sender.round_trips,
                }
            ),
        )
        yield from ev.drain()

    return run


def _reapply(
    sender: Sender, merged: list[Row], job: AgentJob, r: int, skip: Callable[[Failure], bool], ev: Events
) -> dict[str, Any]:
    """Stream 0 applies the whole round in commit order on its one connection."""
    t_exec = time.time()
    calls = sender.calls(merged, bulk=False)  # row by row: each error names its command
    by_stream: dict[int, list[Row]] = {}
    for row in merged:
        by_stream.setdefault(row["stream"], []).append(row)
    upsert = sender.dialect.progress_upsert_sql()
    tail = [
        Call(upsert, (job.subscription, st, max(x["lsn"] for x in rows), r))
        for st, rows in sorted(by_stream.items())
    ]
    skipped, failure = apply_serially(sender, calls, tail, job.retry, skip)
    if failure is None:
        sender.conn.commit()
        ev.committed(merged, skipped, "reapplied", t_exec, time.time())
        return {"fatal": False}
    sender.conn.rollback()
    for row in merged:
        if row["lsn"] == failure.lsn:
            ev.command(row, "failed", cls=failure.cls, code=failure.code, message=failure.message)
        else:
            ev.command(row, "not_applied")
    if failure.lsn is None:
        ev.add("log", round_=r, outcome="failed", cls=failure.cls, code=failure.code, message=failure.message)
    log.error("round %d failed on the single connection: %s", r, failure.message)
    return {"fatal": True, "message": failure.message}


def route_values(spark: SparkSession, n: int) -> dict[int, int]:
    """For each stream s, a long v with pmod(hash(v), n) == s: repartition(n, v) then puts
    stream s in partition s (Spark's hash partitioning is that same Murmur3 hash)."""
    rows = (
        spark.range(0, 64 * n + 1024)
        .select("id", F.expr(f"pmod(hash(id), {n})").alias("b"))
        .groupBy("b")
        .agg(F.min("id").alias("v"))
        .collect()
    )
    route = {int(r["b"]): int(r["v"]) for r in rows}
    if len(route) != n:
        raise RuntimeError(f"could not route {n} streams to partitions")
    return route


Task = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]
ROUTED = "_routed_streams"  # column marking a DataFrame that route_streams already laid out


def route_streams(planned: DataFrame, n: int, articles: Sequence[Article] = ()) -> DataFrame:
    """``planned`` laid out for the stream tasks: partition i holds stream i's rows in lsn
    order, only the columns a share needs (plus ``deps`` for writeset) and the ROUTED marker.
    Persist the result to pay the shuffle once, before the apply stage; a DataFrame already
    routed for n streams comes back as it is. With ``articles``, the before image of updates
    whose procedure takes the key only (CALL, SCALL, MCALL) is left behind: nothing in the
    stream task reads it, and it is half of what travels from the JVM to the tasks."""
    if ROUTED in planned.columns:
        return planned
    keyed = [a.name for a in articles if a.delivery("U").syntax in (Syntax.CALL, Syntax.SCALL, Syntax.MCALL)]
    if keyed:
        drop = (F.col("op") == "U") & F.col("article").isin(keyed) & F.col("key_before").isNotNull()
        planned = planned.withColumn("before", F.when(drop, F.lit(None)).otherwise(F.col("before")))
    route = route_values(planned.sparkSession, n)
    mapping = F.create_map(*[x for s, v in sorted(route.items()) for x in (F.lit(s), F.lit(v).cast("long"))])
    cols = list(SHARE_FIELDS) + (["deps"] if "deps" in planned.columns else [])
    return (
        planned.select(*cols)
        .withColumn("_route", mapping[F.col("stream")])
        .repartition(n, "_route")
        .sortWithinPartitions("lsn")
        .drop("_route")
        .withColumn(ROUTED, F.lit(n))
    )


def run_streams(
    spark: SparkSession,
    planned: DataFrame,
    job: AgentJob,
    make_task: Callable[[AgentJob], Task],
    out_path: str,
) -> DataFrame:
    """Run ``make_task(job)`` as one Spark barrier stage of N tasks, task i receiving stream i's
    rows in lsn order, meeting through a coordinator on the driver; write the events the tasks
    yield to ``out_path`` and return them."""
    slots = spark.sparkContext.defaultParallelism
    if slots < job.streams:
        from applier.errors import ConfigError

        raise ConfigError(
            f"{job.streams} streams need {job.streams} task slots; this Spark has {slots} "
            f"(use local[{job.streams}] or more executors)"
        )
    routed = route_streams(planned, job.streams)
    local = str(spark.sparkContext.master).startswith("local")
    host = "127.0.0.1" if local else str(spark.conf.get("spark.driver.host") or socket.gethostname())
    coordinator = Coordinator(job.streams, host=host, bind="127.0.0.1" if local else "")
    coordinator.start()
    try:
        staged = dataclasses.replace(job, rendezvous=coordinator.address)
        events = routed.drop(ROUTED).mapInArrow(make_task(staged), EVENT_SCHEMA, barrier=True)
        events.write.mode("overwrite").parquet(out_path)
    finally:
        coordinator.stop()
    return spark.read.parquet(out_path)


def run_agent(spark: SparkSession, planned: DataFrame, job: AgentJob, out_path: str) -> DataFrame:
    """Apply ``planned`` (rows with stream and round) with the agent model."""
    return run_streams(spark, planned, job, stream_task, out_path)
