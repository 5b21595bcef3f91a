"""Partition: assign every command a stream. One function per strategy, one signature.

A strategy takes the canonical change DataFrame and N and returns it with an integer
``stream`` column in 0..N-1. Strategies are registered by name in STRATEGIES.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

Strategy = Callable[[DataFrame, int], DataFrame]


def single(df: DataFrame, n: int) -> DataFrame:
    """Everything on stream 0: the serial baseline."""
    return df.withColumn("stream", F.lit(0))


def key_hash(df: DataFrame, n: int) -> DataFrame:
    """The Distribution Agent: hash of the key the target sees (the before image's key for
    updates and deletes, the after image's for inserts). A key change moves the row to
    another bucket: the documented 1->2, 2->3 hazard."""
    key: Column = F.coalesce(F.col("key_before"), F.col("key_after"))
    return df.withColumn("stream", F.pmod(F.xxhash64(F.col("article"), key), F.lit(n)).cast("int"))


STRATEGIES: dict[str, Strategy] = {
    "single": single,
    "key-hash": key_hash,
}


def partition(df: DataFrame, strategy: str, n: int) -> DataFrame:
    return STRATEGIES[strategy](df, n)


def with_rounds(df: DataFrame, commit_batch_size: int) -> tuple[DataFrame, int]:
    """Add ``xact_index`` (dense, 0-based, in commit order) and ``round``; return the count of rounds.

    The dense index comes from the distinct transactions sorted and zipped with their index
    on the executors: nothing but one count reaches the driver.
    """
    xacts = df.select("xact_seqno").distinct().orderBy("xact_seqno")
    indexed = xacts.rdd.map(lambda r: r[0]).zipWithIndex().toDF(["xact_seqno", "xact_index"])
    out = df.join(indexed, "xact_seqno")
    out = out.withColumn("round", (F.col("xact_index") / F.lit(commit_batch_size)).cast("int"))
    n_xacts = indexed.count()
    return out, (n_xacts + commit_batch_size - 1) // commit_batch_size
