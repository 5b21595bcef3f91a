"""A stream task's calls planned column by column from the typed value columns Spark reads
out of the images (``partition.layout.with_values``, ``plan.columns``) are the calls the
per-row planner makes from the JSON images, value for value (type, scale, bytes), and are
sent in the same chunks, for every syntax, every demo column type and both dialects.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from applier.apply.planned import PlannedShare
from applier.apply.sender import Sender
from applier.apply.share import Share, Shares
from applier.config import parse_config
from applier.dialects import DIALECTS
from applier.partition.layout import with_values
from applier.plan.calls import Call, Planner
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
# names Spark SQL text must quote: the value columns are read by SQL text (layout.with_values)
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


def _share(spark: Any, articles: Any, rows: list[dict[str, Any]]) -> Share:
    laid = [
        {**r, "xact_index": r["xact_seqno"], "stream": 0, "round": 0}
        for r in sorted(rows, key=lambda r: r["lsn"])
    ]
    ddl = (
        "lsn long, xact_seqno long, xact_index long, article string, op string, before string, "
        "after string, changed array<string>, key_before string, key_after string, stream int, round int"
    )
    df = spark.createDataFrame([tuple(r[k] for k in SHARE_FIELDS) for r in laid], ddl).coalesce(1)
    table: pa.Table = with_values(df, articles)._collect_as_arrow()
    table = pa.Table.from_batches(table if isinstance(table, list) else table.to_batches())
    return Shares(iter(table.to_batches(max_chunksize=97))).take_round(0)


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
