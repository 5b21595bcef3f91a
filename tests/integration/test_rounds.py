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
