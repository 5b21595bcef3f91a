"""The SQL a DBA runs by hand (applier.repro.sqlscript): literals, set-up, sessions interleaved."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from applier.config import parse_article_dicts
from applier.dialects import DIALECTS
from applier.repro.sqlscript import inline, interleaved, literal, setup_script

PG = DIALECTS["postgres"]()
TSQL = DIALECTS["tsql"]()
ARTS = parse_article_dicts(
    [
        {
            "name": "dbo.acct",
            "columns": [
                {"name": "id", "type": "int", "key": True},
                {"name": "owner", "type": "nvarchar(20)"},
                {"name": "balance", "type": "decimal(10,2)"},
                {"name": "opened", "type": "date"},
                {"name": "blob", "type": "varbinary(10)"},
                {"name": "ok", "type": "bit"},
            ],
        }
    ],
    "<test>",
)


@pytest.mark.parametrize(
    ("value", "pg", "tsql"),
    [
        (None, "NULL", "NULL"),
        (7, "7", "7"),
        (True, "TRUE", "1"),
        (decimal.Decimal("12.50"), "12.50", "12.50"),
        (b"\x01\xff", "'\\x01ff'", "0x01ff"),
        (dt.date(2024, 2, 29), "'2024-02-29'", "N'2024-02-29'"),
        ("O'Brien; --", "'O''Brien; --'", "N'O''Brien; --'"),
        (1.5, "1.5", "1.5"),
    ],
)
def test_literals(value, pg, tsql):
    assert literal(PG, value) == pg
    assert literal(TSQL, value) == tsql
    assert literal(DIALECTS["babelfish"](), value) == tsql  # the dialect owns the text: T-SQL's


def test_inline_replaces_markers_outside_quotes_only():
    assert (
        inline(PG, "CALL p(CAST(? AS integer), '?', ?)", (1, "a'b"))
        == "CALL p(CAST(1 AS integer), '?', 'a''b')"
    )
    with pytest.raises(ValueError):
        inline(PG, "CALL p(?, ?)", (1,))
    with pytest.raises(ValueError):
        inline(PG, "CALL p(?)", (1, 2))


def _rec(lsn, xact, op, before=None, after=None):
    return {
        "lsn": lsn,
        "xact_seqno": xact,
        "command_id": 1,
        "article": "dbo.acct",
        "op": op,
        "before": before,
        "after": after,
    }


ROW = {"id": 1, "owner": "ann", "balance": "10.00", "opened": "2024-01-01", "blob": "AQI=", "ok": True}
CHANGES = [
    _rec(10, 1, "U", ROW, {**ROW, "balance": "11.00"}),
    _rec(20, 2, "U", {**ROW, "balance": "11.00"}, {**ROW, "balance": "12.00"}),
    _rec(30, 3, "I", None, {**ROW, "id": 2, "owner": "O'Brien"}),
]
SCHEDULE = [
    {"step": 0, "stream": 1, "round": 0, "kind": "exec", "lsns": [20], "result": "ok"},
    {"step": 1, "stream": 0, "round": 0, "kind": "exec", "lsns": [10], "result": "ok"},
    {"step": 2, "stream": 1, "round": 0, "kind": "exec", "lsns": [], "anchor": 20, "result": "ok"},
    {"step": 3, "stream": 1, "round": 0, "kind": "commit", "lsns": [], "anchor": 20, "result": "ok"},
    {
        "step": 4,
        "stream": 0,
        "round": 0,
        "kind": "exec",
        "lsns": [30],
        "result": {"class": "duplicate_key", "code": "23505", "message": "duplicate key"},
    },
    {"step": 5, "stream": 0, "round": 0, "kind": "rollback", "lsns": [], "anchor": 30, "result": "ok"},
]


def test_interleaved_follows_the_schedule_with_sessions_and_transactions():
    text = interleaved(PG, ARTS, CHANGES, SCHEDULE, "t")
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("--")]
    assert lines == [
        "BEGIN;",
        'CALL "sp_MSupd_dboacct"(CAST(NULL AS integer), CAST(NULL AS varchar(20)), '
        "CAST(12.00 AS numeric(10,2)), CAST(NULL AS date), CAST(NULL AS bytea), CAST(NULL AS boolean), "
        "CAST(1 AS integer), CAST('\\x04' AS bytea));",
        "BEGIN;",
        'CALL "sp_MSupd_dboacct"(CAST(NULL AS integer), CAST(NULL AS varchar(20)), '
        "CAST(11.00 AS numeric(10,2)), CAST(NULL AS date), CAST(NULL AS bytea), CAST(NULL AS boolean), "
        "CAST(1 AS integer), CAST('\\x04' AS bytea));",
        "COMMIT;",
        "CALL \"sp_MSins_dboacct\"(CAST(2 AS integer), CAST('O''Brien' AS varchar(20)), "
        "CAST(10.00 AS numeric(10,2)), CAST('2024-01-01' AS date), CAST('\\x0102' AS bytea), CAST(TRUE AS boolean));",
        "ROLLBACK;",
    ]
    assert "-- session 2 (stream 1), step 0, round 0: lsn 20 xact 2 U dbo.acct" in text
    assert "-- session 1 (stream 0), step 1, round 0: starts a transaction" in text
    assert "failed here: duplicate_key 23505" in text
    assert "progress row" in text  # left out, said where


def test_interleaved_tsql_names_its_transactions():
    text = interleaved(TSQL, ARTS, CHANGES, SCHEDULE)
    assert "BEGIN TRANSACTION" in text and "EXEC [sp_MSupd_dboacct] NULL,NULL,12.00" in text
    assert "0x0102" in text


def test_setup_creates_tables_loads_rows_then_constraints():
    text = setup_script(PG, ARTS, [{"article": "dbo.acct", "image": ROW}], ["-- procedures here"])
    assert text.index("CREATE TABLE") < text.index("-- procedures here") < text.index("INSERT INTO")
    assert (
        'INSERT INTO "dbo"."acct" ("id", "owner", "balance", "opened", "blob", "ok") '
        "VALUES (1, 'ann', 10.00, '2024-01-01', '\\x0102', TRUE);" in text
    )
