"""Lay the partitioned stream out for the stream tasks: partition i holds stream i's rows.

The last step before apply: after it the stream is persisted once (paying the shuffle in the
plan phase), and the apply stage only applies.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from applier.articles import Article, Syntax
from applier.records.schema import SHARE_FIELDS


def spark_hash_long(v: int, seed: int = 42) -> int:
    """Spark SQL's ``hash()`` of a long: Murmur3 x86 32-bit of its two 32-bit halves, low
    first, seed 42 (``Murmur3_x86_32.hashLong``), as a signed int."""

    def mix_k1(k: int) -> int:
        k = (k * 0xCC9E2D51) & 0xFFFFFFFF
        k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
        return (k * 0x1B873593) & 0xFFFFFFFF

    def mix_h1(h: int, k: int) -> int:
        h ^= k
        h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
        return (h * 5 + 0xE6546B64) & 0xFFFFFFFF

    v &= 0xFFFFFFFFFFFFFFFF
    h = mix_h1(mix_h1(seed & 0xFFFFFFFF, mix_k1(v & 0xFFFFFFFF)), mix_k1(v >> 32))
    h ^= 8
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


@functools.lru_cache(maxsize=64)
def route_values(n: int) -> dict[int, int]:
    """For each stream s, the least long v >= 0 with pmod(hash(v), n) == s: repartition(n, v)
    then puts stream s in partition s (Spark's hash partitioning is that same Murmur3 hash).
    Computed here, not by a Spark job (two, under AQE, in every run's plan phase); a test
    holds it to what Spark computes."""
    route: dict[int, int] = {}
    v = 0
    while len(route) < n:
        if v > 64 * n + 1024:
            raise RuntimeError(f"could not route {n} streams to partitions")
        route.setdefault(spark_hash_long(v) % n, v)
        v += 1
    return route


def lay_out(partitioned: DataFrame, n: int, articles: Sequence[Article] = ()) -> DataFrame:
    """``partitioned`` (with ``stream`` and ``round``) laid out for the stream tasks: partition
    i holds stream i's rows in lsn order, only the columns a share needs (plus ``deps`` for
    writeset). With ``articles``, the before image of updates whose procedure takes the key
    only (CALL, SCALL, MCALL) is left behind: nothing in the stream task reads it, and it is
    half of what travels from the JVM to the tasks. An article with a unique or a foreign key
    keeps it: the explanation of a run's resets reads the values its update frees
    (:mod:`applier.partition.dependencies`). The typed value columns procedure calls are
    planned from are made in Python, from these rows' Arrow batches (:mod:`applier.plan.reading`)."""
    keyed = [
        a.name
        for a in articles
        if a.delivery("U").syntax in (Syntax.CALL, Syntax.SCALL, Syntax.MCALL)
        and not (a.unique or a.references)
    ]
    if keyed:
        drop = (F.col("op") == "U") & F.col("article").isin(keyed) & F.col("key_before").isNotNull()
        partitioned = partitioned.withColumn("before", F.when(drop, F.lit(None)).otherwise(F.col("before")))
    route = route_values(n)
    mapping = F.create_map(*[x for s, v in sorted(route.items()) for x in (F.lit(s), F.lit(v).cast("long"))])
    cols = list(SHARE_FIELDS) + (["deps"] if "deps" in partitioned.columns else [])
    return (
        partitioned.select(*cols)
        .withColumn("_route", mapping[F.col("stream")])
        .repartition(n, "_route")
        .sortWithinPartitions("lsn")
        .drop("_route")
    )
