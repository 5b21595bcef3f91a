"""Lay the partitioned stream out for the stream tasks: partition i holds stream i's rows.

The last step before apply: after it the stream is persisted once (paying the shuffle in the
plan phase), and the apply stage only applies.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from applier.articles import Article, Syntax
from applier.records.schema import SHARE_FIELDS


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


def lay_out(partitioned: DataFrame, n: int, articles: Sequence[Article] = ()) -> DataFrame:
    """``partitioned`` (with ``stream`` and ``round``) laid out for the stream tasks: partition
    i holds stream i's rows in lsn order, only the columns a share needs (plus ``deps`` for
    writeset). With ``articles``, the before image of updates whose procedure takes the key
    only (CALL, SCALL, MCALL) is left behind: nothing in the stream task reads it, and it is
    half of what travels from the JVM to the tasks."""
    keyed = [a.name for a in articles if a.delivery("U").syntax in (Syntax.CALL, Syntax.SCALL, Syntax.MCALL)]
    if keyed:
        drop = (F.col("op") == "U") & F.col("article").isin(keyed) & F.col("key_before").isNotNull()
        partitioned = partitioned.withColumn("before", F.when(drop, F.lit(None)).otherwise(F.col("before")))
    route = route_values(partitioned.sparkSession, n)
    mapping = F.create_map(*[x for s, v in sorted(route.items()) for x in (F.lit(s), F.lit(v).cast("long"))])
    cols = list(SHARE_FIELDS) + (["deps"] if "deps" in partitioned.columns else [])
    return (
        partitioned.select(*cols)
        .withColumn("_route", mapping[F.col("stream")])
        .repartition(n, "_route")
        .sortWithinPartitions("lsn")
        .drop("_route")
    )
