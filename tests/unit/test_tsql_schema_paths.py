"""T-SQL paths that PostgreSQL alone runs in the integration tests (issue 17): schema changes
mid-stream (seed 001) with the drop and re-creation of the procedures around them, rs_sqldml
statements (seed 004), the subscriber's unique and foreign keys, and dropping the hazard
tables children first.

Each statement is rendered for several articles (a Purchasing.Vendor-like one, a composite
key, an identity key, names with ``]``, ``'``, spaces and non-ASCII letters), split into
batches as sqlcmd would (:meth:`TsqlDialect.split_script`) and every batch read by sqlglot's
T-SQL dialect; the facts that make each one right for SQL Server are asserted on the text
(sqlglot 30 reads an ``IF ... BEGIN ... END`` loosely, so those are checked as text). The
PostgreSQL forms of the same statements are pinned too: they must not change.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
import sqlglot
from sqlglot import exp

from applier.apply.barriers import schema_change_sql
from applier.articles import Article, Column, parse_type
from applier.dialects.postgres import PostgresDialect
from applier.dialects.schema import drop_order
from applier.dialects.tsql import TsqlDialect
from applier.records.events import SchemaChange, SqlStatement, apply_change

T = TsqlDialect()
PG = PostgresDialect()


def col(name: str, type_: str, nullable: bool = True, identity: bool = False) -> Column:
    return Column(name, parse_type(type_), nullable=nullable, identity=identity)


VENDOR = Article(
    "Purchasing",
    "Vendor",
    (
        col("BusinessEntityID", "int", nullable=False),
        col("AccountNumber", "nvarchar(15)", nullable=False),
        col("Name", "nvarchar(50)", nullable=False),
        col("CreditRating", "tinyint", nullable=False),
        col("PurchasingWebServiceURL", "nvarchar(1024)"),
        col("ModifiedDate", "datetime", nullable=False),
    ),
    ("BusinessEntityID",),
    unique=(("AccountNumber",),),
)
ORDER_DETAIL = Article(
    "Sales",
    "SalesOrderDetail",
    (
        col("SalesOrderID", "int", nullable=False),
        col("SalesOrderDetailID", "int", nullable=False),
        col("CarrierTrackingNumber", "nvarchar(25)"),
        col("OrderQty", "smallint", nullable=False),
        col("UnitPrice", "money", nullable=False),
    ),
    ("SalesOrderID", "SalesOrderDetailID"),
)
ADDRESS = Article(
    "Person",
    "Address",
    (
        col("AddressID", "int", nullable=False, identity=True),
        col("AddressLine1", "nvarchar(60)", nullable=False),
        col("City", "nvarchar(30)", nullable=False),
        col("PostalCode", "nvarchar(15)"),
    ),
    ("AddressID",),
)
HOSTILE_PARENT = Article(
    "we]ird sch'ema",
    "Par]ent 'rows' ü",
    (col("i]d", "int", nullable=False), col("na'me", "nvarchar(40)", nullable=False), col("größe", "int")),
    ("i]d",),
    unique=(("na'me",),),
)
HOSTILE = Article(
    "we]ird sch'ema",
    "Ord]er 'lines' ü",
    (
        col("i]d", "int", nullable=False),
        col("pa]rent", "int", nullable=False),
        col("na'me", "nvarchar(50)", nullable=False),
        col("col umn", "decimal(10,2)"),
        col("größe", "nvarchar(20)"),
    ),
    ("i]d", "pa]rent"),
    unique=(("na'me", "col umn"),),
    references=((("pa]rent",), HOSTILE_PARENT.name, ("i]d",)),),
)
ARTICLES = [VENDOR, ORDER_DETAIL, ADDRESS, HOSTILE]
IDS = ["vendor", "composite-key", "identity-key", "hostile-names"]

# a nullable and a NOT NULL non-key column of each article, a column to add, a type to widen to
NULLABLE = {
    VENDOR: "PurchasingWebServiceURL",
    ORDER_DETAIL: "CarrierTrackingNumber",
    ADDRESS: "PostalCode",
    HOSTILE: "col umn",
}
NOT_NULL = {VENDOR: "CreditRating", ORDER_DETAIL: "OrderQty", ADDRESS: "AddressLine1", HOSTILE: "na'me"}
WIDER = {"tinyint": "int", "smallint": "int", "nvarchar": "nvarchar(200)", "decimal": "decimal(18,4)"}


def _wider(c: Column) -> str:
    return WIDER.get(c.type.base, "nvarchar(200)")


def _change(a: Article, action: str, column: str, type_: str | None = None) -> Article:
    ch = SchemaChange(a.name, 100, 2, action, column, parse_type(type_) if type_ else None)
    return apply_change(a, ch, "test")


def batches(sql: str) -> list[str]:
    """A statement as sqlcmd would send it: split on GO lines, each batch read by sqlglot."""
    out = T.split_script(sql)
    assert out, sql
    for b in out:
        sqlglot.parse(b, read="tsql")  # raises on what it cannot read
    return out


def one(sql: str) -> exp.Expression:
    """A single statement sqlglot reads as itself (not as an opaque Command)."""
    (b,) = batches(sql)
    parsed = sqlglot.parse(b, read="tsql")
    assert len(parsed) == 1 and not isinstance(parsed[0], exp.Command), b
    assert parsed[0] is not None
    return parsed[0]


def strip_comments(batch: str) -> str:
    lines = [ln for ln in batch.splitlines() if not ln.strip().startswith("--")]
    return "\n".join(lines).strip()


# -- schema changes ------------------------------------------------------------------------
@pytest.mark.parametrize("a", ARTICLES, ids=IDS)
def test_add_column_has_no_column_keyword_and_is_nullable(a: Article) -> None:
    new = _change(a, "add_column", "Note ]'x é", "nvarchar(40)")
    added = new.column("Note ]'x é")
    sql = T.add_column_sql(new, added)
    assert isinstance(one(sql), exp.Alter)
    assert sql == f"ALTER TABLE {T.table(a)} ADD [Note ]]'x é] nvarchar(40) NULL"
    assert " COLUMN " not in sql  # T-SQL's ADD takes a column definition, no COLUMN keyword


@pytest.mark.parametrize("a", ARTICLES, ids=IDS)
def test_alter_column_restates_the_nullability(a: Article) -> None:
    for name, null in ((NULLABLE[a], "NULL"), (NOT_NULL[a], "NOT NULL")):
        old = a.column(name)
        new = _change(a, "alter_column_type", name, _wider(old))
        sql = T.alter_type_sql(new, new.column(name))
        assert isinstance(one(sql), exp.Alter)
        prefix = f"ALTER TABLE {T.table(a)} ALTER COLUMN {T.quote(name)} {T.type_sql(new.column(name).type)}"
        # without NULL / NOT NULL, ALTER COLUMN makes a NOT NULL column nullable
        assert sql == f"{prefix} {null}", sql
        assert " TYPE " not in sql and "USING" not in sql


@pytest.mark.parametrize("a", ARTICLES, ids=IDS)
def test_drop_column_first_drops_what_depends_on_it(a: Article) -> None:
    name = NULLABLE[a]
    sql = T.drop_column_sql(a, name)
    (batch,) = batches(sql)  # one batch: the caller sends it as one statement
    last = batch.strip().splitlines()[-1]
    assert last == f"ALTER TABLE {T.table(a)} DROP COLUMN {T.quote(name)}"
    assert isinstance(sqlglot.parse_one(last, read="tsql"), exp.Alter)
    # the objects SQL Server would refuse to drop the column under, found in the catalog
    for view in (
        "sys.foreign_keys",
        "sys.check_constraints",
        "sys.default_constraints",
        "sys.indexes",
        "sys.stats",
    ):
        assert view in batch, view
    assert "is_primary_key = 0" in batch  # never the primary key
    # table and column reach the batch as literals (quotes doubled), catalog names via QUOTENAME
    assert f"DECLARE @t nvarchar(max) = {T.literal(T.table(a))};" in batch
    assert f"COLUMNPROPERTY(@table, {T.literal(name)}, 'ColumnId')" in batch
    assert "QUOTENAME(" in batch and "EXEC sys.sp_executesql @drop" in batch
    # the dynamic statements are built before the column goes, run only when there are any
    assert batch.index("sp_executesql") < batch.index("DROP COLUMN")
    assert re.search(r"IF @drop IS NOT NULL\s+BEGIN\s+EXEC sys\.sp_executesql @drop;\s+END", batch)


def test_hostile_names_stay_inside_their_quotes() -> None:
    sql = T.drop_column_sql(HOSTILE, "col umn")
    assert "N'[we]]ird sch''ema].[Ord]]er ''lines'' ü]'" in sql
    assert "N'col umn'" in sql
    # read as SQL Server reads it, the text ends outside any literal or bracketed name, and
    # the names are whole inside them
    literals, names = _scan(sql)
    assert "[we]]ird sch''ema].[Ord]]er ''lines'' ü]" in literals and "col umn" in literals
    assert {"we]ird sch'ema", "Ord]er 'lines' ü", "col umn"} <= set(names)


def _scan(sql: str) -> tuple[list[str], list[str]]:
    """The string literals (as written) and bracketed names (unquoted) of T-SQL text; fails
    when a literal or a name is left open."""
    literals: list[str] = []
    names: list[str] = []
    i = 0
    while i < len(sql):
        ch = sql[i]
        if ch == "-" and sql.startswith("--", i):
            i = sql.find("\n", i) if "\n" in sql[i:] else len(sql)
            continue
        if ch in "'[":
            close = "'" if ch == "'" else "]"
            j = i + 1
            buf = []
            while True:
                assert j < len(sql), f"unclosed {ch} at {i}: {sql[i : i + 60]!r}"
                if sql[j] == close:
                    if sql.startswith(close * 2, j):
                        buf.append(close * 2 if ch == "'" else close)
                        j += 2
                        continue
                    break
                buf.append(sql[j])
                j += 1
            (literals if ch == "'" else names).append("".join(buf))
            i = j + 1
            continue
        i += 1
    return literals, names


@pytest.mark.parametrize("a", ARTICLES, ids=IDS)
def test_drop_procedure_tests_object_id(a: Article) -> None:
    for op in "IUD":
        sql = T.drop_procedure_sql(a, op)
        ref = T.proc_ref(a, op)
        assert sql == f"IF OBJECT_ID({T.literal(ref)}, N'P') IS NOT NULL DROP PROCEDURE {ref}"
        batches(sql)


@pytest.mark.parametrize("a", ARTICLES, ids=IDS)
@pytest.mark.parametrize("action", ["add_column", "drop_column", "alter_column_type"])
def test_schema_change_recreates_each_procedure_first_in_its_batch(a: Article, action: str) -> None:
    if action == "add_column":
        new = _change(a, action, "Added", "nvarchar(10)")
    elif action == "drop_column":
        new = _change(a, action, NULLABLE[a])
    else:
        new = _change(a, action, NOT_NULL[a], _wider(a.column(NOT_NULL[a])))
    stmts = schema_change_sql(SimpleNamespace(dialect=T), a, new)  # type: ignore[arg-type]
    for s in stmts:
        batches(s)
        assert len(T.split_script(s)) == 1, s  # each is one batch, sent on its own
    creates = [i for i, s in enumerate(stmts) if "create procedure" in s.lower()]
    assert len(creates) == 3  # insert, update, delete for the new shape
    for i in creates:
        body = strip_comments(stmts[i])
        assert body.lower().startswith("create procedure"), body[:80]
        assert body.lower().count("create procedure") == 1
    alters = [i for i, s in enumerate(stmts) if s.startswith("ALTER TABLE") or "DROP COLUMN" in s]
    drops = [i for i, s in enumerate(stmts) if s.startswith("IF OBJECT_ID(") and "DROP PROCEDURE" in s]
    assert len(alters) == 1 and len(drops) == 3
    assert max(drops) < alters[0] < min(creates)  # old procedures gone before the table changes
    # the new procedures take the new columns: one parameter per column for the insert
    ins = stmts[creates[0]]
    assert ins.count("@c") >= len(new.replicated)
    assert f"@c{len(new.replicated) + 1} " not in ins


def test_a_change_outside_the_columns_changes_nothing() -> None:
    assert schema_change_sql(SimpleNamespace(dialect=T), VENDOR, VENDOR) == []  # type: ignore[arg-type]


# -- rs_sqldml -----------------------------------------------------------------------------
STATEMENTS = [
    SqlStatement("U", "C1", 50, set="CreditRating = CreditRating + 1", where="CreditRating < 5"),
    SqlStatement("D", "C1", 51, where="ModifiedDate < '2010-01-01'"),
    SqlStatement("D", "C2", 7),
    SqlStatement(
        "I",
        "C1",
        50,
        insert_column="BusinessEntityID, AccountNumber, Name, CreditRating, ModifiedDate",
        select="BusinessEntityID + 1000, AccountNumber, Name, CreditRating, ModifiedDate",
        from_="Purchasing.Vendor",
        where="CreditRating = 1",
    ),
    SqlStatement("S", "C1", 3, select="*", from_="Purchasing.Vendor_old", where="1 = 1"),
]
KINDS = {"U": exp.Update, "D": exp.Delete, "I": exp.Insert, "S": exp.Select}


@pytest.mark.parametrize("a", ARTICLES, ids=IDS)
@pytest.mark.parametrize("stmt", STATEMENTS, ids=lambda s: s.operator + s.category)
def test_rs_sqldml_returns_its_row_count_to_the_driver(a: Article, stmt: SqlStatement) -> None:
    sql = T.rs_sqldml_sql(a, stmt)
    (batch,) = batches(sql)
    parsed = sqlglot.parse(batch, read="tsql")
    # SET NOCOUNT OFF first, so that SQLRowCount (cursor.rowcount) is the statement's count
    # under the session's SET NOCOUNT ON; then the statement itself.
    assert batch.startswith("SET NOCOUNT OFF;\n")
    assert [type(e) for e in parsed][0] is exp.Set
    assert len(parsed) == 2 and isinstance(parsed[1], KINDS[stmt.operator]), batch
    assert T.table(a) in batch  # the subscriber's table, quoted; the clauses as published
    assert "?" not in batch  # nothing to bind: the clauses are the publisher's SQL text
    # the statement is PostgreSQL's, after the SET
    assert batch.split("\n", 1)[1] == PG.rs_sqldml_sql(a, stmt).replace(PG.table(a), T.table(a))


# -- constraints ---------------------------------------------------------------------------
def test_unique_and_foreign_keys_read_as_tsql() -> None:
    stmts = T.constraint_sql([HOSTILE_PARENT, HOSTILE, VENDOR])
    assert len(stmts) == 4  # parent's unique, child's unique, child's foreign key, Vendor's unique
    for s in stmts:
        assert isinstance(one(s), exp.Alter)
    fk = [s for s in stmts if "FOREIGN KEY" in s]
    assert fk == [
        f"ALTER TABLE {T.table(HOSTILE)} ADD CONSTRAINT [fk_Ord]]er 'lines' ü_0] FOREIGN KEY ([pa]]rent]) "
        f"REFERENCES {T.table(HOSTILE_PARENT)} ([i]]d])"
    ]


# -- dropping the tables -------------------------------------------------------------------
def _chain() -> list[Article]:
    top = Article("dbo", "hz_top", (col("id", "int", nullable=False),), ("id",))
    mid = Article(
        "dbo",
        "hz_mid",
        (col("id", "int", nullable=False), col("top_id", "int")),
        ("id",),
        references=((("top_id",), top.name, ("id",)),),
    )
    leaf = Article(
        "dbo",
        "hz_leaf",
        (col("id", "int", nullable=False), col("mid_id", "int"), col("self_id", "int")),
        ("id",),
        references=((("mid_id",), mid.name, ("id",)), (("self_id",), "dbo.hz_leaf", ("id",))),
    )
    return [top, mid, leaf]


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 0, 2), (1, 2, 0), (0, 2, 1), (2, 0, 1)])
def test_drop_order_is_children_before_parents_for_a_three_level_chain(order: tuple[int, ...]) -> None:
    chain = _chain()
    given = [chain[i] for i in order]
    assert [a.table for a in drop_order(given)] == ["hz_leaf", "hz_mid", "hz_top"]


def test_drop_order_keeps_unrelated_articles_and_survives_cycles_and_strangers() -> None:
    a = Article(
        "dbo",
        "a",
        (col("id", "int", nullable=False), col("b", "int")),
        ("id",),
        references=((("b",), "dbo.b", ("id",)),),
    )
    b = Article(
        "dbo",
        "b",
        (col("id", "int", nullable=False), col("a", "int")),
        ("id",),
        references=((("a",), "dbo.a", ("id",)),),
    )
    c = Article(
        "dbo",
        "c",
        (col("id", "int", nullable=False), col("x", "int")),
        ("id",),
        references=((("x",), "dbo.absent", ("id",)),),
    )
    assert [x.table for x in drop_order([VENDOR, c, ADDRESS])] == ["Vendor", "c", "Address"]
    assert sorted(x.table for x in drop_order([a, b, c])) == ["a", "b", "c"]  # a cycle still ends


def test_tsql_drop_script_drops_the_referencing_foreign_keys_first() -> None:
    for a in _chain() + ARTICLES:
        script = T.drop_table_script(a)
        assert len(script) == 2
        refs, drop = script
        batches(refs)
        batches(drop)
        assert f"OBJECT_ID({T.literal(T.table(a))}, N'U')" in refs
        assert "fk.referenced_object_id = @table" in refs and "QUOTENAME(fk.name)" in refs
        assert drop == T.drop_table_sql(a)[0]
        assert drop.endswith(f"DROP TABLE {T.table(a)}")


def test_install_drops_every_table_before_creating_any() -> None:
    """install() drops in drop_order, then creates in the articles' order (text of the code,
    as a unit test cannot reach a server)."""
    import inspect

    from applier.apply import install

    src = inspect.getsource(install.install)
    assert "drop_order(articles)" in src and "drop_table_script(a)" in src
    assert src.index("drop_table_script") < src.index("create_table_sql")


# -- what PostgreSQL gets stays as it was --------------------------------------------------
def test_postgres_forms_are_unchanged() -> None:
    a = HOSTILE
    t = PG.table(a)
    assert PG.drop_column_sql(a, "col umn") == f'ALTER TABLE {t} DROP COLUMN "col umn"'
    assert PG.drop_procedure_sql(a, "I") == f"DROP PROCEDURE IF EXISTS {PG.proc_ref(a, 'I')}"
    assert PG.drop_table_script(a) == [f"DROP TABLE IF EXISTS {t} CASCADE"]
    assert PG.rs_sqldml_sql(a, STATEMENTS[0]) == (
        f"UPDATE {t} SET CreditRating = CreditRating + 1 WHERE CreditRating < 5"
    )
    assert PG.rs_sqldml_sql(a, STATEMENTS[2]) == f"DELETE FROM {t}"
    new = _change(a, "add_column", "x", "int")
    assert PG.add_column_sql(new, new.column("x")) == f'ALTER TABLE {t} ADD COLUMN "x" integer NULL'


def test_tsql_statements_survive_a_script_round_trip() -> None:
    """Written into a script file (applier procs, repro export) and split again by GO lines,
    every statement comes back whole: none has a line that reads as GO."""
    stmts: list[str] = []
    for a in ARTICLES:
        stmts += [T.drop_column_sql(a, NULLABLE[a]), *T.drop_table_script(a), T.drop_procedure_sql(a, "U")]
        stmts += [T.rs_sqldml_sql(a, s) for s in STATEMENTS]
    assert T.split_script(T.script([(s, True) for s in stmts])) == stmts
