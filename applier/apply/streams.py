"""One Spark barrier stage of N stream tasks, meeting through a coordinator on the driver.

Both apply models run here: task i receives stream i's rows in lsn order (laid out by
``partition.layout`` before the stage), holds one connection for the whole stage, and yields
the events it records; the events are written to Parquet (read back for the blame) and digested
by the tasks themselves for the summary.

Where the tasks run on the driver's machine (a local master), the rows reach them from a
*feed*: the plan phase writes partition i as a Parquet file (:func:`write_feed`) and task i
reads it (:func:`read_feed`), so the apply stage spends no JVM time turning cached rows into
Arrow batches while the streams send (about 5 us of CPU a command, a tenth of what the apply
costs at 1M commands on 2 cores). The same files are the planned stream verify reads
(:func:`feed_frame`): the plan phase caches nothing. On a cluster the rows come through Spark
as before.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from applier.apply.digest import EventDigest, Parts, collected, digesting
from applier.apply.events import EVENT_SCHEMA
from applier.apply.gate import GateServer
from applier.apply.job import StreamJob
from applier.apply.rendezvous import Address, Coordinator
from applier.articles import Article
from applier.errors import ApplierError, ConfigError, TargetError
from applier.plan.columns import row_bytes_bound
from applier.plan.reading import with_value_columns
from applier.sparkenv import DISK_ONLY_ABOVE, arrow_batches_by_rows, write_run_parquet
from applier.sparkenv.slots import local_slots

Task = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]
MakeTask = Callable[[StreamJob, Address], Task]


@dataclass(frozen=True)
class Streamed:
    """What a stage of stream tasks made: its events (written to Parquet, read back lazily)
    and their digest, made by the tasks themselves (:func:`applier.apply.digest.digesting`)."""

    events: DataFrame
    digest: EventDigest


def _stage(spark: SparkSession, laid_out: DataFrame, task: Task, out_path: str) -> EventDigest:
    """Run ``task`` as one barrier stage over ``laid_out``, its events written to ``out_path``;
    their digest, gathered from the tasks."""
    parts = spark.sparkContext.accumulator([], Parts())
    events = laid_out.mapInArrow(digesting(task, parts), EVENT_SCHEMA, barrier=True)
    write_run_parquet(events, out_path)
    return collected(parts.value)


def read_events(spark: SparkSession, path: str) -> DataFrame:
    """The events a stage wrote, read with their known schema: inferring it from the files is a
    Spark job of its own (0.4 s at the end of every apply stage)."""
    return spark.read.schema(EVENT_SCHEMA).parquet(path)


def check_slots(spark: SparkSession, streams: int) -> None:
    """A barrier stage needs every one of its tasks running at once: N task slots."""
    slots = spark.sparkContext.defaultParallelism
    if slots < streams:
        raise ConfigError(
            f"{streams} streams need {streams} task slots; this Spark has {slots} "
            f"(use local[{streams}] or more executors)"
        )


def _local(spark: SparkSession) -> bool:
    """Whether the executors run on the driver's host (a local master, local-cluster too)."""
    return local_slots(str(spark.sparkContext.master), 1) is not None


FEED_FILE = "stream-{}.parquet"
FEED_ENV = "APPLIER_FEED"  # "spark": the rows always come through Spark (tests, comparisons)


def feeds_from_files(spark: SparkSession, rows: int | None) -> bool:
    """Whether the stream tasks read their rows from feed files: the executors share the
    driver's file system (a local master), the stream is one that is cached in memory (a
    larger one is cached on disk already; a second copy would double the disk it takes), and
    ``$APPLIER_FEED`` does not say ``spark``."""
    if os.environ.get(FEED_ENV, "").strip().lower() == "spark":
        return False
    return _local(spark) and (rows is None or rows <= DISK_ONLY_ABOVE)


def _feed_prefix(name: str) -> str:
    return f"feed-{name.replace('/', '_')}-"


def feed_folder(work_dir: str | Path, name: str, k: int) -> Path:
    """The folder segment ``k`` of subscription ``name`` writes its streams' rows to."""
    return Path(work_dir) / f"{_feed_prefix(name)}{k}"


def clear_feeds(work_dir: str | Path, name: str) -> list[Path]:
    """Remove the feed folders of subscription ``name`` in ``work_dir``; the ones removed. A
    run writes its feed before each apply and removes it after; a run killed (kill -9)
    between the two leaves it, as much as the stream's rows. No run reads another's feed."""
    pattern = re.compile(re.escape(_feed_prefix(name)) + r"\d+")
    removed = []
    for folder in sorted(Path(work_dir).glob("feed-*")):
        if folder.is_dir() and pattern.fullmatch(folder.name):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def write_feed(
    spark: SparkSession,
    planned: DataFrame,
    folder: str | Path,
    row_bytes: int | None,
    articles: Sequence[Article] = (),
) -> list[int]:
    """Write partition i of ``planned`` (stream i, laid out) to ``folder/stream-i.parquet``, a
    row group per Arrow batch a stream task would receive; the rows written per stream. With
    ``articles`` (procedure calls of the agent model) the batches are written with their
    value columns (:func:`applier.plan.reading.with_value_columns`), made here, in the plan
    phase. A file appears whole or not at all (written aside under a hidden name, then
    renamed; :func:`feed_frame` and :func:`read_feed` open the final names only). Parquet,
    not an Arrow stream, so that Spark reads the files back as the planned stream
    (:func:`feed_frame`) where it used to cache it: at 1M commands the cache took a fifth of
    the plan phase's JVM time. Uncompressed: the files live for one run, on the local disk."""
    path = str(folder)
    os.makedirs(path, exist_ok=True)
    from pyspark.sql.pandas.types import to_arrow_schema

    empty = to_arrow_schema(planned.schema)
    if articles:
        empty = with_value_columns(pa.RecordBatch.from_pylist([], schema=empty), articles).schema

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        assert ctx is not None
        s = ctx.partitionId()
        name = FEED_FILE.format(s)
        final = os.path.join(path, name)
        aside = os.path.join(path, f".{name}.{ctx.attemptNumber()}.part")  # hidden: no stream's file
        n = 0
        writer: pq.ParquetWriter | None = None
        try:
            for b in batches:
                if articles:
                    b = with_value_columns(b, articles)
                if writer is None:
                    writer = pq.ParquetWriter(aside, b.schema, compression="none")
                writer.write_batch(b)
                n += b.num_rows
            if writer is None:
                writer = pq.ParquetWriter(aside, empty, compression="none")
        finally:
            if writer is not None:
                writer.close()
        os.replace(aside, final)
        yield pa.RecordBatch.from_pydict(
            {"stream": [s], "rows": [n]}, schema=pa.schema([("stream", pa.int32()), ("rows", pa.int64())])
        )

    with arrow_batches_by_rows(spark, row_bytes):
        got = planned.mapInArrow(write, "stream int, rows long").collect()
    rows = [0] * len(got)  # every task yields its row, an empty stream's too
    for r in got:
        rows[int(r["stream"])] = int(r["rows"])
    return rows


def read_feed(folder: str, stream: int) -> Iterator[pa.RecordBatch]:
    """Stream ``stream``'s batches from its feed file, one row group at a time."""
    path = os.path.join(folder, FEED_FILE.format(stream))
    try:
        f = pq.ParquetFile(path)
    except FileNotFoundError:
        raise ApplierError(
            f"stream {stream} has no rows to apply: {path} is missing (the plan phase writes it)"
        ) from None
    with f:
        for g in range(f.num_row_groups):
            yield from f.read_row_group(g).to_batches()


def feed_frame(spark: SparkSession, folder: str, streams: int, schema: StructType) -> DataFrame:
    """The planned stream a feed holds, read back by Spark with ``schema`` (the laid-out
    rows' columns: the value columns written beside them for procedure calls are left
    unread). Partition order is not stream order: what reads it sorts or groups by lsn."""
    paths = [os.path.join(folder, FEED_FILE.format(i)) for i in range(streams)]
    return spark.read.schema(schema).parquet(*paths)


def fed(task: Task, folder: str) -> Task:
    """``task`` given its stream's rows from the feed (task i: stream i)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _ in batches:  # the stage's own input: one id per task
            pass
        from pyspark import TaskContext

        ctx = TaskContext.get()
        assert ctx is not None
        yield from task(read_feed(folder, ctx.partitionId()))

    return run


def run_streams(
    spark: SparkSession, laid_out: DataFrame, job: StreamJob, make_task: MakeTask, out_path: str
) -> Streamed:
    """Run ``make_task(job, rendezvous)`` as one barrier stage of ``job.streams`` tasks over
    ``laid_out`` (partition i = stream i); write the events the tasks yield to ``out_path``
    and return them. With ``job.feed`` (a folder :func:`write_feed` wrote ``laid_out`` to) the
    tasks read their rows from it instead."""
    check_slots(spark, job.streams)
    local = _local(spark)
    host = "127.0.0.1" if local else str(spark.conf.get("spark.driver.host") or socket.gethostname())
    bind = "127.0.0.1" if local else ""
    if job.schedule is not None:
        return _controlled(spark, laid_out, job, make_task, out_path, host, bind)
    coordinator = Coordinator(job.streams, host=host, bind=bind)
    coordinator.start()
    try:
        task = make_task(job, coordinator.address)
        if job.feed is not None:
            task, laid_out = fed(task, job.feed), spark.range(0, job.streams, 1, job.streams)
        with arrow_batches_by_rows(spark, row_bytes_bound(job.articles)):
            digest = _stage(spark, laid_out, task, out_path)
    finally:
        coordinator.stop()
    return Streamed(read_events(spark, out_path), digest)


def _controlled(
    spark: SparkSession,
    laid_out: DataFrame,
    job: StreamJob,
    make_task: MakeTask,
    out_path: str,
    host: str,
    bind: str,
) -> Streamed:
    """The same stage with the streams taking turns at a :class:`GateServer` (a controlled
    schedule); the server watches the target's locks through a connection of its own."""
    assert job.schedule is not None
    monitor = job.endpoint.connect(job.lock_timeout_ms)
    monitor.autocommit = True
    try:
        gate = GateServer(
            job.streams,
            monitor,
            job.endpoint.dialect,
            job.schedule,
            laid_out.count() if job.commands is None else job.commands,
            host=host,
            bind=bind,
        )
        gate.start()
        failed: BaseException | None = None
        try:
            digest = _stage(spark, laid_out, make_task(job, gate.address), out_path)
        except Exception as e:  # noqa: BLE001 - the scheduler's own error says more, when it has one
            failed = e
        finally:
            gate.stop()
        if gate.error is not None:  # the streams lost the scheduler: its error is the cause
            raise TargetError(f"the controlled schedule failed: {gate.error}") from gate.error
        if failed is not None:
            raise failed
    finally:
        with contextlib.suppress(Exception):
            monitor.close()
    return Streamed(read_events(spark, out_path), digest)
