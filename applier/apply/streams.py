"""One Spark barrier stage of N stream tasks, meeting through a coordinator on the driver.

Both apply models run here: task i receives stream i's rows in lsn order (laid out by
``partition.layout`` before the stage), holds one connection for the whole stage, and yields
the events it records; the events are written to Parquet and read back for the summary and
the blame.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from applier.apply.events import EVENT_SCHEMA
from applier.apply.gate import GateServer
from applier.apply.job import StreamJob
from applier.apply.rendezvous import Address, Coordinator
from applier.errors import ConfigError, TargetError
from applier.sparkenv import write_run_parquet

Task = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]
MakeTask = Callable[[StreamJob, Address], Task]


def check_slots(spark: SparkSession, streams: int) -> None:
    """A barrier stage needs every one of its tasks running at once: N task slots."""
    slots = spark.sparkContext.defaultParallelism
    if slots < streams:
        raise ConfigError(
            f"{streams} streams need {streams} task slots; this Spark has {slots} "
            f"(use local[{streams}] or more executors)"
        )


def run_streams(
    spark: SparkSession, laid_out: DataFrame, job: StreamJob, make_task: MakeTask, out_path: str
) -> DataFrame:
    """Run ``make_task(job, rendezvous)`` as one barrier stage of ``job.streams`` tasks over
    ``laid_out`` (partition i = stream i); write the events the tasks yield to ``out_path``
    and return them."""
    check_slots(spark, job.streams)
    local = str(spark.sparkContext.master).startswith("local")
    host = "127.0.0.1" if local else str(spark.conf.get("spark.driver.host") or socket.gethostname())
    bind = "127.0.0.1" if local else ""
    if job.schedule is not None:
        return _controlled(spark, laid_out, job, make_task, out_path, host, bind)
    coordinator = Coordinator(job.streams, host=host, bind=bind)
    coordinator.start()
    try:
        task = make_task(job, coordinator.address)
        events = laid_out.mapInArrow(task, EVENT_SCHEMA, barrier=True)
        write_run_parquet(events, out_path)
    finally:
        coordinator.stop()
    return spark.read.parquet(out_path)


def _controlled(
    spark: SparkSession,
    laid_out: DataFrame,
    job: StreamJob,
    make_task: MakeTask,
    out_path: str,
    host: str,
    bind: str,
) -> DataFrame:
    """The same stage with the streams taking turns at a :class:`GateServer` (a controlled
    schedule); the server watches the target's locks through a connection of its own."""
    assert job.schedule is not None
    monitor = job.endpoint.connect(job.lock_timeout_ms)
    monitor.autocommit = True
    try:
        gate = GateServer(
            job.streams, monitor, job.endpoint.dialect, job.schedule, laid_out.count(), host=host, bind=bind
        )
        gate.start()
        try:
            task = make_task(job, gate.address)
            events = laid_out.mapInArrow(task, EVENT_SCHEMA, barrier=True)
            write_run_parquet(events, out_path)
        finally:
            gate.stop()
        if gate.error is not None:
            raise TargetError(f"the controlled schedule failed: {gate.error}") from gate.error
    finally:
        with contextlib.suppress(Exception):
            monitor.close()
    return spark.read.parquet(out_path)
