"""The generated procedures install and raise 20598 on a T-SQL engine: the embedded Babelfish
(``make test-tsql``), and SQL Server 2022 in a container where a Docker engine runs (``pytest -m
docker tests/tsql``: a SQL Server ODBC driver, Microsoft's or FreeTDS, too; skips with the reason
otherwise).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from applier.articles import Article, Column, parse_type
from applier.dialects.conflicts import ConflictClass
from applier.dialects.tsql import TsqlDialect

D = TsqlDialect()  # the engine's own (Babelfish's flags there): set by the conn fixture
ARTICLE = Article(
    "Purchasing",
    "Vendor",
    (
        Column("VendorID", parse_type("int"), nullable=False),
        Column("Name", parse_type("nvarchar(50)"), nullable=False),
        Column("CreditRating", parse_type("tinyint"), nullable=False),
        Column("ModifiedDate", parse_type("datetime")),
    ),
    ("VendorID",),
)


@pytest.fixture(scope="module")
def conn(sqlserver: Any) -> Iterator[Any]:
    import pyodbc

    global D
    D = sqlserver.dialect
    c = pyodbc.connect(sqlserver.connection_string, autocommit=True, timeout=30)
    cur = c.cursor()
    cur.execute(D.create_schema_sql(ARTICLE.schema))
    for stmt in D.drop_table_sql(ARTICLE):
        cur.execute(stmt)
    cur.execute(D.create_table_sql(ARTICLE))
    for op in "IUD":
        for batch in D.split_script(D.procedure_sql(ARTICLE, op) or ""):
            cur.execute(batch)
    for stmt in D.progress_ddl() + D.progress_ddl():  # idempotent
        cur.execute(stmt)
    c.autocommit = False
    for stmt in D.session_setup(2000):
        cur.execute(stmt)
    c.commit()
    yield c
    c.close()


def _classify(conn: Any, sql: str, *params: Any) -> ConflictClass:
    import pyodbc

    with pytest.raises(pyodbc.Error) as info:
        conn.cursor().execute(sql, *params)
    D.rollback(conn)
    c = D.classify(info.value)
    return c.cls


def test_procedures_apply_and_missing_rows_raise_20598(conn: Any) -> None:
    cur = conn.cursor()
    cur.execute(D.call_sql(ARTICLE, "I"), 1, "Alpha", 3, None)
    conn.commit()
    # SCALL update of Name (column 2 -> bit 2): the others stay.
    cur.execute(D.call_sql(ARTICLE, "U"), None, "Beta", None, None, 1, bytes([2]))
    conn.commit()
    assert tuple(
        cur.execute(
            "SELECT [Name], [CreditRating] FROM [Purchasing].[Vendor] WHERE [VendorID] = 1"
        ).fetchall()[0]
    ) == ("Beta", 3)
    # key change 1 -> 2 (bit 1): the key-changed branch moves the row
    cur.execute(D.call_sql(ARTICLE, "U"), 2, None, None, None, 1, bytes([1]))
    conn.commit()
    assert [r[0] for r in cur.execute("SELECT [VendorID] FROM [Purchasing].[Vendor]").fetchall()] == [2]

    # the row is gone from key 1: update and delete both raise row-not-found
    upd = D.call_sql(ARTICLE, "U")
    assert _classify(conn, upd, None, "Gamma", None, None, 1, bytes([2])) is ConflictClass.ROW_NOT_FOUND
    assert _classify(conn, D.call_sql(ARTICLE, "D"), 1) is ConflictClass.ROW_NOT_FOUND
    assert _classify(conn, D.call_sql(ARTICLE, "I"), 2, "Dup", 1, None) is ConflictClass.DUPLICATE_KEY


def test_row_not_found_code_is_20598(conn: Any) -> None:
    import pyodbc

    with pytest.raises(pyodbc.Error) as info:
        conn.cursor().execute(D.call_sql(ARTICLE, "U"), None, "x", None, None, 999, bytes([2]))
    D.rollback(conn)
    c = D.classify(info.value)
    assert (c.cls, c.code) == (ConflictClass.ROW_NOT_FOUND, "20598"), c.message
    assert "999" in c.message or "20598" in c.message


def test_progress_upsert_keeps_the_highest_lsn(conn: Any) -> None:
    cur = conn.cursor()
    for lsn, rnd in ((10, 1), (30, 2), (20, 3)):
        cur.execute(D.progress_upsert_sql(), "sub", 0, lsn, rnd)
    conn.commit()
    rows = cur.execute(D.progress_select_sql(), "sub").fetchall()
    assert [tuple(r) for r in rows] == [(0, 30, 3)]


def test_procedures_live_where_sql_server_creates_them(conn: Any) -> None:
    """Unqualified: in the login's default schema (dbo), whatever the table's schema; with a
    proc_schema, there. sp_MSreplraiserror is the server's own where it exists, else the
    stand-in support_sql installs in dbo (and only then)."""
    import dataclasses

    cur = conn.cursor()
    rows = cur.execute(
        "SELECT s.name FROM sys.procedures p JOIN sys.schemas s ON s.schema_id = p.schema_id "
        "WHERE p.name = N'sp_MSupd_PurchasingVendor'"
    ).fetchall()
    assert [r[0] for r in rows] == ["dbo"]
    assert cur.execute(D.procedure_exists_sql(), None, "sp_MSupd_PurchasingVendor").fetchall()[0][0] == 1
    system = cur.execute("SELECT object_id(N'sys.sp_MSreplraiserror')").fetchall()[0][0]
    stand_in = cur.execute("SELECT object_id(N'dbo.sp_MSreplraiserror')").fetchall()[0][0]
    assert (system is None) == (stand_in is not None)
    repl = dataclasses.replace(ARTICLE, proc_schema="repl")
    cur.execute(D.create_schema_sql("repl"))
    for batch in D.split_script(D.procedure_sql(repl, "D") or ""):
        cur.execute(batch)
    conn.commit()
    assert cur.execute(D.procedure_exists_sql(), "repl", "sp_MSdel_PurchasingVendor").fetchall()[0][0] == 1
    assert _classify(conn, D.call_sql(repl, "D"), 424242) is ConflictClass.ROW_NOT_FOUND


def test_legacy_procedures_raise_the_bare_20598(conn: Any) -> None:
    import dataclasses

    legacy = dataclasses.replace(ARTICLE, proc_template="legacy", proc_schema="legacy")
    cur = conn.cursor()
    cur.execute(D.create_schema_sql("legacy"))
    for op in "UD":
        for batch in D.split_script(D.procedure_sql(legacy, op) or ""):
            cur.execute(batch)
    conn.commit()
    assert _classify(conn, D.call_sql(legacy, "D"), 424242) is ConflictClass.ROW_NOT_FOUND
