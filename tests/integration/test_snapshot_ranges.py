"""The snapshot's key ranges (applier.apply.snapshot): the same keys give the same ranges however
Spark partitions and orders them (a resume computes the ranges the killed run loaded), the
ranges are about the size asked, and the range Spark gives a row (the JVM's binary search) is
the one :meth:`KeyRanges.of` gives it, for keys whose order differs between UTF-16 and code
points."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from applier.apply.snapshot import KeyRanges, key_ranges, range_column
from applier.records.schema import SNAPSHOT_SCHEMA

pytestmark = pytest.mark.integration

# Keys whose order is not the same in every encoding: U+FF21 sorts after U+1F600's UTF-16
# surrogates (Java's String order) and before it by code point (Python's, and UTF-8 bytes');
# a key that is a prefix of another; the separator's neighbours; quotes, brackets, NUL-free.
HOSTILE = [
    '["\uff21"]',  # FULLWIDTH LATIN CAPITAL LETTER A
    '["\U0001f600"]',  # an emoji: a surrogate pair in UTF-16
    '["\ud7ff"]',  # the last code point before the surrogates
    '["\ue000"]',  # the first after them (private use)
    '["a"]',
    '["a\\u0000"]',  # an escaped NUL in the key text, not a NUL
    '["ab"]',
    '["é"]',
    '["e\u0301"]',  # e and a combining acute: not the same text as é
    "[1]",
    "[10]",
    "[2]",
    '["it\'s"]',
    '["]]"]',
]


def _rows(n: int, seed: int) -> list[tuple[str, str, str]]:
    rng = random.Random(seed)
    out = []
    for i in range(1, n + 1):
        article = "dbo.t" if i % 3 else "dbo.T2"
        key = f"[{i}]" if i % 5 else f'["k{rng.randrange(10**9)}-{i}"]'
        out.append((article, key, "{}"))
    return out + [("dbo.h", k, "{}") for k in HOSTILE]


def test_the_same_keys_give_the_same_ranges_of_about_the_size_asked(spark) -> None:
    rows = _rows(20_000, 1)
    one = spark.createDataFrame(rows, SNAPSHOT_SCHEMA).coalesce(1)
    shuffled = list(rows)
    random.Random(2).shuffle(shuffled)
    seven = spark.createDataFrame(shuffled, SNAPSHOT_SCHEMA).repartition(7)
    a, b = key_ranges(one, 1_000), key_ranges(seven, 1_000)
    assert a == b and a.layout == b.layout
    assert 16 <= a.count <= 24, a.count  # 20,014 rows in ranges of about 1,000
    sizes = Counter(r["range"] for r in seven.select(range_column(a.bounds).alias("range")).collect())
    assert sorted(sizes) == list(range(a.count))  # every range holds rows
    assert sum(sizes.values()) == len(rows)
    assert all(500 <= n <= 1_500 for n in sizes.values()), sorted(sizes.values())
    # other sizes, other ranges (their layout tells a resume so)
    assert key_ranges(one, 2_000).layout != a.layout
    # a snapshot known to be one range is one, whatever its keys
    assert key_ranges(one, 1_000, rows=1_000) == KeyRanges((), 1_000)


def test_spark_gives_each_row_the_range_python_gives_it(spark) -> None:
    rows = _rows(3_000, 3)
    df = spark.createDataFrame(rows, SNAPSHOT_SCHEMA).repartition(3)
    for ranges in (
        key_ranges(df, 250),  # quantiles of the sample
        KeyRanges(tuple(sorted(f"dbo.h\0{k}" for k in HOSTILE)), len(rows)),  # every hostile key a bound
    ):
        got = {
            (r["article"], r["key"]): r["range"]
            for r in df.select("article", "key", range_column(ranges.bounds).alias("range")).collect()
        }
        wrong = {k: (n, ranges.of(*k)) for k, n in got.items() if n != ranges.of(*k)}
        assert not wrong, list(wrong.items())[:5]
        assert len(set(got.values())) == ranges.count
