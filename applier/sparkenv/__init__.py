"""Spark as applier runs it. This module holds the settings a run gives Spark's queries and
files: the run's Parquet codec, Arrow batches cut by rows, one job a query without adaptive
execution, and how a DataFrame is cached. The session is :mod:`applier.sparkenv.session`; the
master and the task slots N streams need, :mod:`applier.sparkenv.slots`; the class-data archive
a local driver JVM maps, :mod:`applier.sparkenv.classdata`.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

# Parquet that Spark writes within a run and reads back (the events, a long schedule's spill)
# is zstd-compressed, on every master. With Spark's default Snappy (or LZ4_RAW), parquet-mr
# decompresses through codecs that hold direct buffers outside the heap, and those grew with
# what was read: 187 MiB reading 450 MB of step texts, 320 MiB reading 900 MB (zstd: 11 and
# 16 MiB): the driver JVM's growth with the stream after the apply, in local mode.
RUN_PARQUET_CODEC = "zstd"


def write_run_parquet(df: DataFrame, path: str | Path) -> None:
    """Write ``df`` as the run's own Parquet (replacing ``path``), in ``RUN_PARQUET_CODEC``."""
    df.write.mode("overwrite").option("compression", RUN_PARQUET_CODEC).parquet(str(path))


ARROW_MAX_BYTES = "spark.sql.execution.arrow.maxBytesPerBatch"
ARROW_MAX_RECORDS = "spark.sql.execution.arrow.maxRecordsPerBatch"
_NO_BYTE_LIMIT = "2147483647"  # Int.MaxValue: Spark does not measure the batch at all


def launch_conf(sc: Any) -> Any:
    """The SparkContext's own configuration (what the launcher, the builder and --conf set):
    the live SparkConf PySpark keeps, read key by key. ``sc.getConf()`` would copy it first,
    one call to the JVM per property (~150 here: ~25 ms each time, five times a run)."""
    return sc._conf  # noqa: SLF001 - PySpark's wrapper of the context's SparkConf


def _bytes_conf(text: str) -> int:
    m = re.fullmatch(r"\s*([0-9]+)\s*([kmgt]?)b?\s*", text.lower())
    if not m:
        return 64 << 20
    return int(m.group(1)) << (10 * " kmgt".index(m.group(2) or " "))


@contextlib.contextmanager
def arrow_batches_by_rows(spark: SparkSession, row_bytes: int | None) -> Iterator[None]:
    """Within it, Arrow batches sent to Python workers are cut by their row count alone when
    that count already keeps a batch of rows of at most ``row_bytes`` bytes under the byte
    limit (None: rows without a bound, nothing changes). Spark 4 measures the batch after every
    row against maxBytesPerBatch (64 MiB), walking all of its column vectors: about 3 us of
    the driver JVM's CPU per command of a stream task (8.2 -> 5.0 us at 1M commands). The
    user's own setting of the limit (the launcher's, --conf) is left alone."""
    conf = launch_conf(spark.sparkContext)
    records = int(spark.conf.get(ARROW_MAX_RECORDS, "10000") or 10000)
    limit = _bytes_conf(str(spark.conf.get(ARROW_MAX_BYTES, "64m") or "64m"))
    if row_bytes is None or records <= 0 or records * row_bytes > limit or conf.contains(ARROW_MAX_BYTES):
        yield
        return
    spark.conf.set(ARROW_MAX_BYTES, _NO_BYTE_LIMIT)
    try:
        yield
    finally:
        spark.conf.unset(ARROW_MAX_BYTES)


AQE = "spark.sql.adaptive.enabled"


SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
OWN_SHUFFLE_PARTITIONS = "spark.applier.shufflePartitions"  # the value applier set (not the user)
ROWS_PER_SHUFFLE_PARTITION = 100_000  # below it a shuffle's partitions cost more than they share


@contextlib.contextmanager
def without_aqe(spark: SparkSession, rows: int | None = None) -> Iterator[None]:
    """Within it, queries run without adaptive execution: one Spark job a query, its shuffles
    stages of it, where AQE submits each shuffle's map stage as a job of its own (the plan
    phase's layout: 3 jobs -> 1; verify's comparison: 3 -> 1; ~0.15 s of a warm 1,000-command
    run). For queries whose shuffles AQE has nothing to adapt: a repartition to a given
    number of partitions (the streams), a group-by with no join to choose a strategy for.
    ``rows``: about how many rows the queries shuffle; their group-bys then take one partition
    a ``ROWS_PER_SHUFFLE_PARTITION`` rows, at most the session's (what AQE would have
    coalesced them to). The user's own settings (the launcher's, --conf) are left alone."""
    conf = launch_conf(spark.sparkContext)
    want: dict[str, str] = {}
    if not conf.contains(AQE):
        want[AQE] = "false"
    own = conf.get(OWN_SHUFFLE_PARTITIONS, None)
    if rows is not None and (not conf.contains(SHUFFLE_PARTITIONS) or conf.get(SHUFFLE_PARTITIONS) == own):
        have = int(spark.conf.get(SHUFFLE_PARTITIONS, "200") or 200)
        want[SHUFFLE_PARTITIONS] = str(max(1, min(have, -(-rows // ROWS_PER_SHUFFLE_PARTITION))))
    before: dict[str, str | None] = {k: spark.conf.get(k, None) for k in want}
    for k, v in want.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, old in before.items():
            if old is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, old)


DISK_ONLY_ABOVE = 2_000_000  # rows


def cache_level(rows: int | None) -> StorageLevel:
    """How to persist a DataFrame of about ``rows`` rows (None: unknown). Large ones go to
    disk only: in local[N] the cache lives in the driver JVM, and building in-memory blocks of
    ~600k wide rows per task ran the 2 GiB heap out at 10M commands; DISK_ONLY streams each
    block to disk as it is built."""
    if rows is not None and rows > DISK_ONLY_ABOVE:
        return StorageLevel.DISK_ONLY
    return StorageLevel.MEMORY_AND_DISK
