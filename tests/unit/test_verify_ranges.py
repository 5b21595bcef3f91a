"""The subscriber is read in ranges of each article's first key column: every value falls in
exactly one range, each article gets its share of the tasks and no range more than the
bound on rows; a key that is not an integer is sliced by hash instead."""

from __future__ import annotations

import pytest

from applier.articles import Article, Column, parse_type
from applier.dialects import DIALECTS
from applier.verify.target import Bounds, Part, plan_parts, split_range


def _article(name: str, key_type: str = "int") -> Article:
    return Article(
        "dbo", name, (Column("id", parse_type(key_type), False), Column("v", parse_type("int"))), ("id",)
    )


def _owner(ranges: list[tuple[int | None, int | None]], v: int) -> list[int]:
    return [i for i, (lo, hi) in enumerate(ranges) if (lo is None or v >= lo) and (hi is None or v < hi)]


@pytest.mark.parametrize(
    ("lo", "hi", "parts"), [(1, 200_000, 4), (-7, 13, 3), (5, 5, 8), (0, 9, 10), (1, 3, 7)]
)
def test_every_value_in_exactly_one_range(lo: int, hi: int, parts: int) -> None:
    ranges = split_range(lo, hi, parts)
    assert len(ranges) == min(parts, hi - lo + 1)
    assert ranges[0][0] is None and ranges[-1][1] is None  # open ends: nothing outside is lost
    for v in [lo - 100, *range(lo, min(hi, lo + 50) + 1), hi, hi + 100]:
        assert len(_owner(ranges, v)) == 1
    spans = [
        b - a
        for a, b in zip(
            [lo, *(r[0] for r in ranges[1:])], [*(r[1] for r in ranges[:-1]), hi + 1], strict=True
        )
    ]
    assert max(spans) - min(spans) <= 1  # equal spans


def test_tasks_shared_by_rows_and_bounded() -> None:
    big, small, empty = _article("big"), _article("small"), _article("empty")
    bounds = {
        "dbo.big": Bounds(1, 1_000_000, 1_000_000),
        "dbo.small": Bounds(1, 1000, 1000),
        "dbo.empty": Bounds(None, None, 0),
    }
    parts = plan_parts([big, small, empty], bounds, tasks=4, max_rows=100_000, min_rows=1)
    by = {n: [p for p in parts if p.article == f"dbo.{n}"] for n in ("big", "small", "empty")}
    assert len(by["big"]) == 10  # the bound on rows, above its share (4) of the tasks
    assert len(by["small"]) == 1 and by["small"][0] == Part("dbo.small")
    assert by["empty"] == [Part("dbo.empty")]
    # with more tasks than the bound needs, the share decides
    assert len([p for p in plan_parts([big], bounds, tasks=16, max_rows=10**9, min_rows=1)]) == 16
    rs = [(p.lo, p.hi) for p in by["big"]]
    assert rs[0] == (None, 100_001) and rs[-1] == (900_001, None)


def test_a_key_that_is_not_an_integer_is_sliced_by_hash() -> None:
    a = _article("names", "nvarchar(20)")
    parts = plan_parts([a], {"dbo.names": Bounds("a", "z", 50)}, tasks=3, max_rows=100, min_rows=1)
    assert parts == [Part("dbo.names", slice=i, slices=3) for i in range(3)]


def test_small_articles_are_not_cut_for_the_cores() -> None:
    """Below ``min_rows`` a part per core costs more (a connection and a task each) than it
    saves; above it the cores share the rows, each part at least ``min_rows``."""
    a, b = _article("a"), _article("b")
    bounds = {"dbo.a": Bounds(1, 1000, 1000), "dbo.b": Bounds(1, 90_000, 90_000)}
    parts = plan_parts([a, b], bounds, tasks=4, max_rows=10**9, min_rows=20_000)
    assert [p for p in parts if p.article == "dbo.a"] == [Part("dbo.a")]
    assert len([p for p in parts if p.article == "dbo.b"]) == 4  # its share of 4 tasks, 22,500 rows each
    bounds["dbo.b"] = Bounds(1, 30_000, 30_000)
    assert len([p for p in plan_parts([b], bounds, tasks=4, max_rows=10**9, min_rows=20_000)]) == 1


@pytest.mark.parametrize("dialect", ["postgres", "tsql"])
def test_range_sql_binds_its_bounds(dialect: str) -> None:
    d = DIALECTS[dialect]()
    a = _article("t", "bigint")
    assert d.select_range_sql(a, False, False) == d.select_rows_sql(a)
    both = d.select_range_sql(a, True, True)
    assert both.count("?") == 2 and " >= " in both and " < " in both
    assert d.select_range_sql(a, True, False).count("?") == 1
    assert "COUNT(*)" in d.key_bounds_sql(a) and d.table(a) in d.key_bounds_sql(a)


@pytest.mark.parametrize("dialect", ["postgres", "tsql"])
@pytest.mark.parametrize("key_type", ["uniqueidentifier", "bit", "nvarchar(max)", "datetimeoffset(6)"])
def test_bounds_are_asked_only_of_an_integer_key(dialect: str, key_type: str) -> None:
    """Only an integer first key column is split by range: any other asks no MIN/MAX (PostgreSQL
    has no min(uuid) or min(boolean), SQL Server no MIN of a bit), only the count."""
    d = DIALECTS[dialect]()
    sql = d.key_bounds_sql(_article("t", key_type))
    assert sql.startswith("SELECT NULL, NULL, COUNT(*) FROM ") and "MIN" not in sql
    assert "MIN(" in d.key_bounds_sql(_article("t", "smallint"))


def test_postgres_reads_a_timestamptz_as_its_instant_in_utc() -> None:
    """psqlODBC gives a timestamptz as a naive timestamp in the session's zone: PostgreSQL's
    read-back selects it as UTC ISO text instead; the other columns (and T-SQL's) as they are."""
    a = Article(
        "dbo",
        "t",
        (Column("id", parse_type("int"), False), Column("at", parse_type("datetimeoffset(6)"))),
        ("id",),
    )
    pg = DIALECTS["postgres"]().select_rows_sql(a)
    assert pg.startswith(
        'SELECT "id", to_char("at" AT TIME ZONE \'UTC\', \'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"\')'
    )
    assert DIALECTS["tsql"]().select_rows_sql(a).startswith("SELECT [id], [at] FROM")
