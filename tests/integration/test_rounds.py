"""Dense transaction numbers and rounds (partition.with_rounds), consecutive or not."""

from __future__ import annotations

import pytest

from applier.partition.strategies import with_rounds

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("xacts", [[5, 5, 6, 7, 7, 8, 9], [10, 10, 20, 35, 35, 36, 90]])
def test_xact_index_is_dense_in_commit_order_whatever_the_numbers(spark, xacts):
    df = spark.createDataFrame([(i, x) for i, x in enumerate(xacts)], "lsn long, xact_seqno long")
    out, rounds = with_rounds(df, 2)
    got = sorted((r["lsn"], r["xact_index"], r["round"]) for r in out.collect())
    order = sorted(set(xacts))
    assert got == [(i, order.index(x), order.index(x) // 2) for i, x in enumerate(xacts)]
    assert rounds == 3  # 5 transactions, 2 per round


def test_known_numbers_give_the_same_rounds_without_reading(spark):
    xacts = [5, 5, 6, 7, 7, 8, 9]
    df = spark.createDataFrame([(i, x) for i, x in enumerate(xacts)], "lsn long, xact_seqno long")
    read, n_read = with_rounds(df, 2)
    known, n_known = with_rounds(df, 2, known=(5, 5))
    assert n_known == n_read == 3
    assert sorted(known.collect()) == sorted(read.collect())


def test_the_stream_routes_are_spark_s_own_hash(spark):
    """layout.route_values computes Spark's Murmur3 hash in Python (no job): held to Spark's
    hash() on longs, negative and past 32 bits, and to where repartition(n, v) puts each v."""
    from pyspark.sql import functions as F

    from applier.partition.layout import route_values, spark_hash_long

    values = [*range(-300, 300), 2**31, -(2**31) - 1, 2**40 + 7, 2**63 - 1, -(2**63)]
    got = (
        spark.createDataFrame([(v,) for v in values], "v long").select("v", F.hash("v").alias("h")).collect()
    )
    assert {r["v"]: spark_hash_long(r["v"]) for r in got} == {r["v"]: r["h"] for r in got}
    for n in (1, 2, 3, 4, 8, 13):
        route = route_values(n)
        assert sorted(route) == list(range(n))
        df = spark.createDataFrame([(s, v) for s, v in route.items()], "s int, v long").repartition(n, "v")
        placed = df.select("s", F.spark_partition_id().alias("p")).collect()
        assert all(r["s"] == r["p"] for r in placed), (n, placed)
