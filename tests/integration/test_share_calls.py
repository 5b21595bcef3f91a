"""A stream task's calls planned column by column from the typed value columns pyarrow reads
out of the images of the batches Spark sends (``plan.reading``, ``plan.columns``) are the
calls the per-row planner makes from the JSON images, value for value (type, scale, bytes),
and are sent in the same chunks, for every syntax, every demo column type and both dialects;
rows whose values the columns cannot hold as their JSON gives them are planned row by row.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

from applier.apply.planned import PlannedShare, Run
from applier.apply.sender import Sender
from applier.apply.share import Share, Shares
from applier.config import parse_config
from applier.dialects import DIALECTS
from applier.plan.calls import Call, Planner
from applier.plan.columns import UNREAD
from applier.plan.reading import with_value_columns, with_values
from applier.records.schema import SHARE_FIELDS
from tests.support.call_syntaxes import SYNTAXES, generated_changes, syntax_articles

pytestmark = pytest.mark.integration

# the column types the demo articles lack, a composite key of two classes
OTHER_TYPES = {
    "name": "dbo.kinds",
    "columns": [
        {"name": "k", "type": "tinyint", "key": True},
        {"name": "code", "type": "nvarchar(12)", "key": True},
        {"name": "f", "type": "float"},
        {"name": "r", "type": "real"},
        {"name": "d", "type": "date"},
        {"name": "t", "type": "time"},
        {"name": "b", "type": "varbinary(16)"},
        {"name": "x", "type": "bigint"},
        {"name": "c", "type": "nchar(4)"},
    ],
}
# names quoting must survive: JSON field names, the key read as an object (plan.reading)
HOSTILE = {
    "name": "dbo.[it's \\ `odd`]",
    "columns": [
        {"name": "k`ey", "type": "int", "key": True},
        {"name": "co'de", "type": "nvarchar(12)", "key": True},
        {"name": "a.b c", "type": "float"},
        {"name": "\\'; DROP", "type": "varbinary(16)"},
        {"name": "END", "type": "bigint"},
    ],
}


class _Cursor:
    def __init__(self, log: list[tuple[str, str]]) -> None:
        self.log = log

    def execute(self, sql: str, params: Any = None) -> _Cursor:
        # repr: Decimal('1.50') and Decimal('1.5') are equal, not the same value to bind
        self.log.append((sql, repr([(type(p).__name__, p) for p in params or ()])))
        return self

    def nextset(self) -> bool:
        return False


class _Conn:
    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []

    def cursor(self) -> _Cursor:
        return _Cursor(self.log)


def _batches(spark: Any, rows: list[dict[str, Any]]) -> list[pa.RecordBatch]:
    """``rows`` laid out as one stream's batches from Spark (no value columns)."""
    laid = [
        {**r, "xact_index": r["xact_seqno"], "stream": 0, "round": 0}
        for r in sorted(rows, key=lambda r: r["lsn"])
    ]
    ddl = (
        "lsn long, xact_seqno long, xact_index long, article string, op string, before string, "
        "after string, changed array<string>, key_before string, key_after string, stream int, round int"
    )
    df = spark.createDataFrame([tuple(r[k] for k in SHARE_FIELDS) for r in laid], ddl).coalesce(1)
    table: pa.Table = df._collect_as_arrow()
    table = pa.Table.from_batches(table if isinstance(table, list) else table.to_batches())
    return table.to_batches(max_chunksize=97)


def _share(spark: Any, articles: Any, rows: list[dict[str, Any]]) -> Share:
    """A round's share as a stream task makes it from the batches Spark sends."""
    return Shares(with_values(iter(_batches(spark, rows)), articles)).take_round(0)


@pytest.mark.parametrize(("update", "delete"), SYNTAXES)
@pytest.mark.parametrize("kind", ["uniform", "updates"])
@pytest.mark.parametrize("dialect", ["postgres", "tsql"])
@pytest.mark.parametrize("types", ["demo", "other", "hostile"])
def test_share_calls_equal_row_calls(spark, update, delete, kind, dialect, types):  # type: ignore[no-untyped-def]
    articles = syntax_articles(update, delete)
    if types != "demo":
        table = OTHER_TYPES if types == "other" else HOSTILE
        articles = parse_config({"articles": [{**table, "update": update, "delete": delete}]}, "<t>").articles
    rows = generated_changes(articles, kind)
    share = _share(spark, articles, rows)
    assert len(share) == len(rows)
    d = DIALECTS[dialect]()
    planned = Sender(None, d, Planner(d, articles), 0).share_calls(share)
    assert isinstance(planned, PlannedShare)
    expected = Sender(None, d, Planner(d, articles), 0).calls([dict(r) for r in share.rows])
    if update in ("SCALL", "CALL", "MCALL"):
        assert any(not isinstance(p, list) for p in planned.parts), "some rows planned by columns"
    got = list(planned)
    assert [(r["lsn"], c.sql, repr(c.params)) for r, c in got] == [
        (r["lsn"], c.sql, repr(c.params)) for r, c in expected
    ]
    # the same round trips, whatever the parameter limit cuts (a tail call at the end)
    tail = [Call("SELECT ?", (1,))]
    for limit in (1, 7, 50, 2000):
        d.MAX_PARAMS_PER_BATCH = limit  # an instance's own limit
        a, b = _Conn(), _Conn()
        Sender(a, d, Planner(d, articles), 0).send(expected, tail)
        Sender(b, d, Planner(d, articles), 0).send(planned, tail)
        assert b.log == a.log


def _kinds(update: str = "CALL") -> Any:
    return parse_config({"articles": [{**OTHER_TYPES, "update": update, "delete": "CALL"}]}, "<t>").articles


def _row(lsn: int, op: str, after: str | None, key_before: str | None) -> dict[str, Any]:
    return {
        "lsn": lsn,
        "xact_seqno": lsn,
        "article": "dbo.kinds",
        "op": op,
        "before": None,
        "after": after,
        "changed": ["f"] if op == "U" else None,
        "key_before": key_before,
        "key_after": None,
    }


GOOD = (
    '{"b":"AAE=","c":"ab  ","code":"%s","d":"2024-01-02","f":%s,"k":%d,"r":1.5,"t":"10:00:00.000000","x":9}'
)


def _planned_by(planned: PlannedShare) -> list[str]:
    return ["columns" if isinstance(p, Run) else "rows" for p in planned.parts]


@pytest.mark.parametrize("dialect", ["postgres", "tsql"])
def test_values_the_columns_cannot_hold_are_planned_row_by_row(spark, dialect):  # type: ignore[no-untyped-def]
    articles = _kinds()
    rows = [
        _row(1, "I", GOOD % ("a", "1.25", 1), None),
        _row(2, "I", GOOD % ("b", "NaN", 2), None),  # NaN and the infinities: doubles both ways
        _row(3, "U", GOOD % ("c", "-Infinity", 3), '[3,"c"]'),
        _row(4, "D", None, '[4,"d"]'),
        # a JSON number in a string-class column: bound as the JSON number row by row
        _row(5, "I", GOOD.replace('"code":"%s"', '"code":%s') % ("12.50", "Infinity", 5), None),
        _row(6, "U", GOOD % ("f", "2.5", 6), "[6,7]"),  # ... in the key
        _row(7, "I", GOOD.replace('"x":9', '"x":99999999999999999999') % ("g", "0.5", 7), None),  # > int64
        _row(8, "D", None, '[8,"h","extra"]'),  # not the key's length
        _row(9, "D", None, '[9,"i"]'),
    ]
    batch = _batches(spark, rows)[0]
    got = with_value_columns(batch, articles).to_pylist()
    assert [r[UNREAD] for r in got] == [False, False, False, False, True, True, True, True, False]
    for r in got:  # the image (or key) that could not be read: NULL in every column
        prefix = {5: "_v", 7: "_v", 6: "_k", 8: "_k"}.get(r["lsn"])
        if prefix is not None:
            assert all(v is None for n, v in r.items() if n.startswith(prefix) and n != UNREAD), r
    assert got[1]["_vf0"] != got[1]["_vf0"] and got[2]["_vf0"] == float("-inf")  # NaN, -Infinity
    d = DIALECTS[dialect]()
    share = _share(spark, articles, [r for r in rows if r["lsn"] != 8])  # the per-row planner refuses 8
    planned = Sender(None, d, Planner(d, articles), 0).share_calls(share)
    assert isinstance(planned, PlannedShare)
    # runs of (article, op): 1-2 I, 3 U, 4 D, 5 I, 6 U, 7 I, 9 D
    assert _planned_by(planned) == ["columns", "columns", "columns", "rows", "rows", "rows", "columns"]
    expected = Sender(None, d, Planner(d, articles), 0).calls([dict(r) for r in share.rows])
    assert [(r["lsn"], c.sql, repr(c.params)) for r, c in planned] == [
        (r["lsn"], c.sql, repr(c.params)) for r, c in expected
    ]


def test_a_composite_key_of_two_classes_is_read_by_position(spark):  # type: ignore[no-untyped-def]
    articles = _kinds()
    hostile = 'a,\\"]b\\u00e9\\\\'  # a comma, an escaped quote, a bracket, an escape, a backslash
    rows = [
        _row(1, "D", None, f'[7,"{hostile}"]'),
        _row(2, "D", None, '[255,"[1,2]"]'),
        _row(3, "D", None, None),
    ]
    got = with_value_columns(_batches(spark, rows)[0], articles).to_pylist()
    assert [(r["_ki0"], r["_ks0"], r[UNREAD]) for r in got] == [
        (7, 'a,"]bé\\', False),
        (255, "[1,2]", False),
        (None, None, False),  # no key: NULL (the per-row planner reads the before image there)
    ]


def test_every_value_column_is_its_json_value_across_articles_in_one_batch(spark):  # type: ignore[no-untyped-def]
    from applier.plan.columns import column_types, value_columns

    articles = syntax_articles("CALL", "CALL")
    rows = generated_changes(articles, "uniform")
    batches = _batches(spark, rows)
    assert any(len(set(b.column("article").to_pylist())) > 1 for b in batches), "articles share batches"
    by_name = {a.name: a for a in articles}
    names = set(column_types(articles))
    seen = 0
    for b in batches:
        for r in with_value_columns(b, articles).to_pylist():
            a = by_name[r["article"]]
            vc = value_columns(a)
            want: dict[str, Any] = dict.fromkeys(names)
            after = json.loads(r["after"]) if r["after"] is not None else None
            keys = json.loads(r["key_before"]) if r["key_before"] is not None else None
            for name, c in zip(vc.after, a.replicated, strict=True):
                want[name] = None if after is None else after.get(c.name)
            for name, v in zip(vc.key, keys or [None] * len(vc.key), strict=True):
                want[name] = v
            assert {n: r[n] for n in names} == want
            assert r[UNREAD] is False
            seen += 1
    assert seen == len(rows)
    assert any(r["after"] is None for r in rows) and any(r["key_before"] is None for r in rows)
