"""A T-SQL engine: the T-SQL paths PostgreSQL alone runs elsewhere (issue 17).

- a schema change mid-stream (seed 001): add a column, widen a NOT NULL column, drop a column
  that a default, a check constraint, an index, a unique constraint and statistics depend on;
  the procedures dropped and created again for each new shape, then called;
- rs_sqldml statements (seed 004): committed when SQL Server's row count equals rs_rowcount,
  rolled back when it does not;
- hazard tables with foreign keys (a three-level chain, and a table outside the articles that
  references the top one) dropped and created again, twice.

On the embedded Babelfish (``make test-tsql``), and SQL Server 2022 in a container where a
Docker engine runs (``pytest -m docker tests/tsql``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from applier.apply.barriers import apply_schema_change, apply_statement, schema_change_sql
from applier.apply.install import add_constraints, install
from applier.articles import Article, Column, parse_type
from applier.dialects.procedures import bit_of
from applier.dialects.tsql import TsqlDialect
from applier.records.events import SchemaChange, SqlStatement, apply_change
from applier.targets.endpoint import Endpoint
from applier.targets.progress import APPLIED_HERE, AS_ROWS, BarrierMark, barriers_name

D = TsqlDialect()  # the engine's own (Babelfish's flags there): set by the conn fixture


def col(name: str, type_: str, nullable: bool = True) -> Column:
    return Column(name, parse_type(type_), nullable=nullable)


VENDOR = Article(
    "Purchasing",
    "Vendor ]'é",
    (
        col("VendorID", "int", nullable=False),
        col("Name", "nvarchar(50)", nullable=False),
        col("CreditRating", "tinyint", nullable=False),
        col("No]te 'x'", "nvarchar(40)"),
    ),
    ("VendorID",),
)


@pytest.fixture
def conn(sqlserver: Endpoint) -> Iterator[Any]:
    global D
    D = sqlserver.dialect
    c = sqlserver.connect()
    yield c
    D.rollback(c)
    c.close()


def _rows(conn: Any, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in conn.cursor().execute(sql, *params).fetchall()]


def _column(conn: Any, a: Article, name: str) -> tuple[str, int, int] | None:
    """(type name, max_length, is_nullable) of a column, None when it is gone."""
    rows = _rows(
        conn,
        "SELECT t.name, c.max_length, CAST(c.is_nullable AS int) FROM sys.columns c "
        "JOIN sys.types t ON t.user_type_id = c.user_type_id "
        "WHERE c.object_id = OBJECT_ID(?) AND c.name = ?",
        D.table(a),
        name,
    )
    return rows[0] if rows else None  # type: ignore[return-value]


def _change(a: Article, version: int, action: str, column: str, type_: str | None = None) -> Article:
    ch = SchemaChange(a.name, 1000 * version, version, action, column, parse_type(type_) if type_ else None)
    return apply_change(a, ch, f"version {version}")


def _insert(conn: Any, a: Article, values: dict[str, Any]) -> None:
    conn.cursor().execute(D.call_sql(a, "I"), *[values.get(c) for c in a.column_names])
    conn.commit()


def _update(conn: Any, a: Article, key: int, values: dict[str, Any]) -> None:
    """SCALL update of some non-key columns of the row with VendorID ``key``."""
    n = len(a.column_names)
    bitmap = bytearray(bit_of(n)[0])
    for i, name in enumerate(a.column_names, 1):
        if name in values:
            byte, bit = bit_of(i)
            bitmap[byte - 1] |= bit
    params = [values.get(c) for c in a.column_names] + [key, bytes(bitmap)]
    conn.cursor().execute(D.call_sql(a, "U"), *params)
    conn.commit()


def test_schema_changes_mid_stream(sqlserver: Endpoint, conn: Any) -> None:
    install(sqlserver, [VENDOR], "schema-docker")
    _insert(conn, VENDOR, {"VendorID": 1, "Name": "Alpha", "CreditRating": 1, "No]te 'x'": "n1"})
    _insert(conn, VENDOR, {"VendorID": 2, "Name": "Beta", "CreditRating": 2, "No]te 'x'": "n2"})

    # 1. add a column: the procedures take it at once
    v2 = _change(VENDOR, 2, "add_column", "Com]ment 'é'", "nvarchar(30)")
    apply_schema_change(
        sqlserver, schema_change_sql(sqlserver, VENDOR, v2), BarrierMark("schema-docker", 0, 10)
    )
    assert _column(conn, v2, "Com]ment 'é'") == ("nvarchar", 60, 1)
    _insert(conn, v2, {"VendorID": 3, "Name": "Gamma", "CreditRating": 3, "Com]ment 'é'": "c3"})
    _update(conn, v2, 1, {"Com]ment 'é'": "c1"})

    # 2. widen a NOT NULL column: it stays NOT NULL (ALTER COLUMN restates the nullability)
    v3 = _change(v2, 3, "alter_column_type", "CreditRating", "int")
    apply_schema_change(sqlserver, schema_change_sql(sqlserver, v2, v3), BarrierMark("schema-docker", 1, 20))
    assert _column(conn, v3, "CreditRating") == ("int", 4, 0)
    _update(conn, v3, 2, {"CreditRating": 100000})  # beyond tinyint

    # 3. drop a column that other objects depend on, as a DBA may have added them
    t, note = D.table(v3), D.quote("No]te 'x'")
    cur = conn.cursor()
    cur.execute(f"ALTER TABLE {t} ADD CONSTRAINT [DF_note] DEFAULT N'-' FOR {note}")
    cur.execute(f"ALTER TABLE {t} ADD CONSTRAINT [CK_note] CHECK (LEN({note}) < 30)")
    cur.execute(f"ALTER TABLE {t} ADD CONSTRAINT [UQ_name_note] UNIQUE ([Name], {note})")
    cur.execute(f"CREATE INDEX [IX_name] ON {t} ([Name]) INCLUDE ({note})")
    if not D.DROP_COLUMN_DROPS_DEPENDENTS:  # Babelfish: CREATE STATISTICS "not currently supported"
        cur.execute(f"CREATE STATISTICS [ST_note] ON {t} ({note})")
    conn.commit()
    v4 = _change(v3, 4, "drop_column", "No]te 'x'")
    apply_schema_change(sqlserver, schema_change_sql(sqlserver, v3, v4), BarrierMark("schema-docker", 2, 30))
    assert _column(conn, v4, "No]te 'x'") is None
    left = _rows(
        conn,
        "SELECT name FROM sys.objects WHERE parent_object_id = OBJECT_ID(?) AND name IN "
        "(N'DF_note', N'CK_note', N'UQ_name_note') "
        "UNION ALL SELECT name FROM sys.indexes WHERE object_id = OBJECT_ID(?) AND name = N'IX_name' "
        "UNION ALL SELECT name FROM sys.stats WHERE object_id = OBJECT_ID(?) AND name = N'ST_note'",
        t,
        t,
        t,
    )
    assert left == []  # what PostgreSQL's DROP COLUMN drops with the column
    _insert(conn, v4, {"VendorID": 4, "Name": "Delta", "CreditRating": 4, "Com]ment 'é'": "c4"})
    conn.cursor().execute(D.call_sql(v4, "D"), 3)
    conn.commit()

    comment = D.quote("Com]ment 'é'")
    assert _rows(conn, f"SELECT [VendorID], [Name], [CreditRating], {comment} FROM {t} ORDER BY 1") == [
        (1, "Alpha", 1, "c1"),
        (2, "Beta", 100000, None),
        (4, "Delta", 4, "c4"),
    ]
    # each procedure exists once, with one parameter per column of the last shape
    for op in "IUD":
        schema, name = D.proc_name(v4, op)
        assert _rows(conn, D.procedure_exists_sql(), schema or "dbo", name) == [(1,)]
    ins = _rows(
        conn,
        "SELECT count(*) FROM sys.all_parameters WHERE object_id = OBJECT_ID(?)",
        D.proc_ref(v4, "I"),
    )
    assert ins == [(len(v4.column_names),)]
    # each change committed its watermark (place, lsn, outcome) with it
    marks = _rows(conn, D.progress_select_sql(), barriers_name("schema-docker"))
    assert sorted(marks) == [(0, 10, APPLIED_HERE), (1, 20, APPLIED_HERE), (2, 30, APPLIED_HERE)]


SQLDML = Article(
    "dbo",
    "st ]'x",
    (col("id", "int", nullable=False), col("grp", "nvarchar(4)"), col("n", "int")),
    ("id",),
)


def test_rs_sqldml_commits_on_the_publishers_row_count_only(sqlserver: Endpoint, conn: Any) -> None:
    install(sqlserver, [SQLDML], "sqldml-docker")
    t = D.table(SQLDML)
    cur = conn.cursor()
    for i in range(1, 11):
        cur.execute(f"INSERT INTO {t} ([id], [grp], [n]) VALUES (?, ?, ?)", i, "a" if i <= 6 else "b", i)
    conn.commit()

    def run(stmt: SqlStatement, lsn: int) -> tuple[bool, int | None, str]:
        return apply_statement(sqlserver, SQLDML, stmt, BarrierMark("sqldml-docker", lsn - 1, lsn))

    ok, n, why = run(SqlStatement("U", "C1", 6, set="n = n + 100", where="grp = 'a'"), 1)
    assert (ok, n) == (True, 6), why
    ok, n, why = run(SqlStatement("U", "C1", 3, set="n = n + 1000", where="grp = 'b'"), 2)
    assert (ok, n) == (False, 4) and "differs from rs_rowcount 3" in why
    ok, n, why = run(
        SqlStatement(
            "I", "C1", 4, insert_column="id, grp, n", select="id + 100, 'c', n", from_=t, where="grp = 'b'"
        ),
        3,
    )
    assert (ok, n) == (True, 4), why
    ok, n, why = run(SqlStatement("D", "C1", 2, where="id <= 2"), 4)
    assert (ok, n) == (True, 2), why

    assert _rows(conn, f"SELECT [grp], count(*), sum([n]) FROM {t} GROUP BY [grp] ORDER BY 1") == [
        ("a", 4, 3 + 4 + 5 + 6 + 400),
        ("b", 4, 7 + 8 + 9 + 10),  # the rolled-back statement left them as they were
        ("c", 4, 7 + 8 + 9 + 10),
    ]
    # each statement's watermark: committed with it, or its rollback recorded (its rows go instead)
    marks = _rows(conn, D.progress_select_sql(), barriers_name("sqldml-docker"))
    assert sorted(marks) == [
        (0, 1, APPLIED_HERE),
        (1, 2, AS_ROWS),
        (2, 3, APPLIED_HERE),
        (3, 4, APPLIED_HERE),
    ]


def _chain() -> list[Article]:
    top = Article("hz", "top ]'", (col("id", "int", nullable=False), col("v", "int")), ("id",))
    mid = Article(
        "hz",
        "mid",
        (col("id", "int", nullable=False), col("top_id", "int")),
        ("id",),
        references=((("top_id",), top.name, ("id",)),),
    )
    leaf = Article(
        "hz",
        "leaf é",
        (col("id", "int", nullable=False), col("mid_id", "int")),
        ("id",),
        references=((("mid_id",), mid.name, ("id",)),),
    )
    return [top, mid, leaf]  # parents first, the order that fails without drop_order


def test_hazard_tables_with_foreign_keys_are_dropped_and_recreated_twice(
    sqlserver: Endpoint, conn: Any
) -> None:
    import pyodbc

    top, mid, leaf = chain = _chain()
    outsider = "[hz].[outsider]"  # not an article: references the top table all the same
    for round_ in range(3):
        install(sqlserver, chain, f"hazards-docker-{round_}")
        assert add_constraints(sqlserver, chain) == 2
        cur = conn.cursor()
        if round_ == 0:
            cur.execute(
                f"IF OBJECT_ID(N'{outsider}', N'U') IS NULL CREATE TABLE {outsider} "
                f"([id] int PRIMARY KEY, [top_id] int CONSTRAINT [fk_outsider] REFERENCES {D.table(top)} ([id]))"
            )
        # a fresh, empty chain each time, with its foreign keys enforced
        for a in chain:
            assert _rows(conn, f"SELECT count(*) FROM {D.table(a)}") == [(0,)]
        cur.execute(f"INSERT INTO {D.table(top)} ([id], [v]) VALUES (1, 1)")
        cur.execute(f"INSERT INTO {D.table(mid)} ([id], [top_id]) VALUES (1, 1)")
        cur.execute(f"INSERT INTO {D.table(leaf)} ([id], [mid_id]) VALUES (1, 1)")
        conn.commit()
        with pytest.raises(pyodbc.Error) as info:
            conn.cursor().execute(f"INSERT INTO {D.table(leaf)} ([id], [mid_id]) VALUES (2, 99)")
        D.rollback(conn)
        assert D.classify(info.value).code == "547"
        fks = _rows(
            conn,
            "SELECT count(*) FROM sys.foreign_keys WHERE referenced_object_id IN (OBJECT_ID(?), OBJECT_ID(?))",
            D.table(top),
            D.table(mid),
        )
        assert fks == [(3 if round_ == 0 else 2,)]  # the outsider's key only until the next drop
    # the outsider table is still there; only its key to the dropped table went (as CASCADE does)
    assert _rows(conn, "SELECT count(*) FROM sys.tables WHERE object_id = OBJECT_ID(?)", outsider) == [(1,)]
    assert _rows(conn, "SELECT count(*) FROM sys.foreign_keys WHERE name = N'fk_outsider'") == [(0,)]
