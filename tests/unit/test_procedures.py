"""Procedure fidelity across both dialects: every call syntax and SQL statement delivery,
golden files per case and dialect, every AdventureWorks table through the T-SQL reader,
the plan's parameter orders for statements, and types that cannot be mapped.

Goldens: tests/golden/<dialect>/<case>.sql, regenerated with APPLIER_REGEN_GOLDEN=1.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from applier.articles import Article, Column, Delivery, Syntax, parse_type
from applier.dialects import DIALECTS
from applier.dialects.base import Dialect
from applier.errors import ConfigError, UnsupportedError
from applier.plan.calls import Planner, statement_columns, statement_params
from tests.support import adventureworks
from tests.support.tsql_articles import CASES, HOSTILE
from tests.support.tsql_reader import check_procedure, statements

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
TSQL = DIALECTS["tsql"]()
PG = DIALECTS["postgres"]()

# Every option of seeds 002/003, per operation.
SYNTAXES = {
    "insert": ["CALL", "SQL", "NONE"],
    "update": ["CALL", "SCALL", "MCALL", "XCALL", "SQL", "NONE"],
    "delete": ["CALL", "XCALL", "SQL", "NONE"],
}
# Delivery combinations that together cover every option above.
COMBOS = {
    "call": ("CALL", "CALL", "CALL"),
    "scall": ("CALL", "SCALL", "CALL"),
    "mcall_xdel": ("CALL", "MCALL", "XCALL"),
    "xcall": ("CALL", "XCALL", "XCALL"),
    "sql": ("SQL", "SQL", "SQL"),
    "none": ("NONE", "NONE", "NONE"),
}


def deliver(a: Article, combo: tuple[str, str, str]) -> Article:
    i, u, d = combo
    return dataclasses.replace(
        a,
        insert=Delivery.parse("insert", i),
        update=Delivery.parse("update", u),
        delete=Delivery.parse("delete", d),
    )


def script(dialect: Dialect, a: Article) -> str:
    """Table, procedures, and for SQL delivery the statements (updates: every column changed)."""
    sep = dialect.STATEMENT_END + dialect.SCRIPT_SEPARATOR  # ";\n" in PostgreSQL, "\ngo\n" in T-SQL
    parts = [dialect.create_table_sql(a).strip()]
    for op in "IUD":
        d = a.delivery(op)
        if d.syntax == Syntax.SQL:
            cols = statement_columns(a, None) if op == "U" else ()
            parts.append(f"-- {op} statement\n" + dialect.statement_sql(a, op, cols))
        elif (sql := dialect.procedure_sql(a, op)) is not None:
            parts.append(sql.strip())
        else:
            parts.append(f"-- {op}: {d.syntax.value}{' ' + d.procedure if d.procedure else ''}")
    return sep.join(parts) + sep


GOLDEN_CASES = {
    **{f"vendor_{n}": deliver(CASES["vendor"], c) for n, c in COMBOS.items()},
    "composite_mcall_xdel": deliver(CASES["composite_key"], COMBOS["mcall_xdel"]),
    "composite_sql": deliver(CASES["composite_key"], COMBOS["sql"]),
    "wide_xcall": deliver(CASES["wide"], COMBOS["xcall"]),
    "hostile_scall": HOSTILE,
    "hostile_xcall": deliver(HOSTILE, COMBOS["xcall"]),
    "hostile_sql": deliver(HOSTILE, COMBOS["sql"]),
}


def validate_all(name: str, a: Article) -> None:
    """One model checked against both dialects' golden files at once (sqlglot's validate_all)."""
    for dialect in (TSQL, PG):
        if any(c.type.base not in dialect.TYPE_MAP for c in a.columns):
            continue  # a type this dialect cannot map (rowversion on PostgreSQL: tested below)
        path = GOLDEN / dialect.name / f"{name}.sql"
        text = script(dialect, a)
        if os.environ.get("APPLIER_REGEN_GOLDEN") == "1":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        assert path.exists(), f"{path} missing: run with APPLIER_REGEN_GOLDEN=1"
        assert text == path.read_text(encoding="utf-8"), f"{dialect.name}/{name}.sql differs"


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_golden_both_dialects(name: str) -> None:
    validate_all(name, GOLDEN_CASES[name])


# -- T-SQL parses, for every AdventureWorks table and every syntax ------------------------
AW = adventureworks.articles()


def check_tsql_statement(text: str, nmarkers: int) -> None:
    """sp_executesql's outer call parses, and its inner text parses as a procedure body."""
    m = re.match(r"(?s)^exec sp_executesql N'(.*)', N'(.*?)', (.*)$", text)
    assert m, text
    inner, decl, markers = m.group(1).replace("''", "'"), m.group(2), m.group(3)
    assert markers == ", ".join("?" * nmarkers)
    assert decl.count("@") == nmarkers
    outer = sqlglot.parse_one(f"exec sp_executesql N'x', N'{decl}', {markers}", read="tsql")
    assert isinstance(outer, exp.Execute)
    check_procedure(f"create procedure x\nas\nbegin\n{inner}\nend", 0)


def check_article_tsql(a: Article) -> int:
    checked = 0
    for op in "IUD":
        d = a.delivery(op)
        if d.syntax == Syntax.SQL:
            if op == "I":
                sqlglot.parse_one(TSQL.statement_sql(a, op), read="tsql")
                continue
            cols = statement_columns(a, None) if op == "U" else ()
            check_tsql_statement(TSQL.statement_sql(a, op, cols), len(cols) + len(a.key))
            checked += 1
            continue
        sql = TSQL.procedure_sql(a, op)
        if sql is None:
            continue
        drop, create = TSQL.split_script(sql)
        assert drop.startswith("if object_id(")
        check_procedure(create, len(TSQL.proc_params(a, op)))
        checked += 1
    return checked


def test_adventureworks_ddl_was_read() -> None:
    names = {a.name for a in AW}
    assert {"Purchasing.Vendor", "Production.Document", "Sales.SalesOrderHeader"} <= names
    assert len(AW) == 13
    doc = next(a for a in AW if a.name == "Production.Document")
    assert doc.column("DocumentNode").type.base == "hierarchyid"
    assert "DocumentLevel" not in doc.column_names  # computed: not replicated


@pytest.mark.parametrize("combo", sorted(COMBOS))
@pytest.mark.parametrize("a", AW, ids=[a.name for a in AW])
def test_adventureworks_tsql_parses(a: Article, combo: str) -> None:
    art = deliver(a, COMBOS[combo])
    n = check_article_tsql(art)
    assert n == {"none": 0, "sql": 2}.get(combo, 3)
    assert "AS " not in TSQL.create_table_sql(art)  # computed columns are not created
    if art.update.syntax in (Syntax.SCALL, Syntax.MCALL):
        width = (len(art.column_names) + 7) // 8
        assert f"@bitmap binary({width})" in TSQL.procedure_sql(art, "U")


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_golden_cases_tsql_parses(name: str) -> None:
    """Hostile names included: every procedure and every statement's inner text parses."""
    a = GOLDEN_CASES[name]
    assert check_article_tsql(a) == sum(
        1
        for op in "IUD"
        if a.delivery(op).syntax.value not in ("NONE",) and not (op == "I" and a.insert.syntax == Syntax.SQL)
    )


@pytest.mark.parametrize("a", AW, ids=[a.name for a in AW])
def test_adventureworks_postgres_renders(a: Article) -> None:
    for combo in COMBOS.values():
        text = script(PG, deliver(a, combo))
        assert "CREATE TABLE" in text
    # identity columns are never in SET, in any update procedure
    for combo in ("call", "scall", "mcall_xdel", "xcall"):
        art = deliver(a, COMBOS[combo])
        for dialect in (TSQL, PG):
            upd = dialect.procedure_sql(art, "U")
            for c in art.replicated:
                if c.identity:
                    assert not re.search(rf"^\s*,?{re.escape(dialect.quote(c.name))} = ", upd, re.M), upd


# -- structure -----------------------------------------------------------------------------
def test_mcall_has_scall_structure_and_required_parameters() -> None:
    """MCALL passes every value, so no parameter defaults to NULL; the body is SCALL's."""
    scall = deliver(CASES["vendor"], COMBOS["scall"])
    mcall = deliver(CASES["vendor"], COMBOS["mcall_xdel"])
    s = statements(TSQL.split_script(TSQL.procedure_sql(scall, "U"))[1])
    m = statements(TSQL.split_script(TSQL.procedure_sql(mcall, "U"))[1])
    assert m[1:] == s[1:]
    assert m[0] == s[0].replace(" = NULL", "")
    assert "@bitmap binary(1)" in m[0] and "@pkc1 int = NULL" in s[0]  # SCALL keys default too


def test_composite_key_with_identity_branches_on_the_other_key_column() -> None:
    pod = next(a for a in AW if a.name == "Purchasing.PurchaseOrderDetail")
    upd = TSQL.procedure_sql(pod, "U")
    # PurchaseOrderID (column 1) may change and gets the branch; PurchaseOrderDetailID
    # (identity, column 2) is never set and never tested.
    assert "if (substring(@bitmap,1,1) & 1 = 1)\n" in upd
    assert "[PurchaseOrderDetailID] = case" not in upd
    assert "and [PurchaseOrderDetailID] = @pkc2" in upd


def test_xcall_matches_on_the_before_key_only() -> None:
    wide = CASES["wide"]  # Note (column 1, nvarchar(max)) and Blob (column 8) are LOBs
    cols = tuple(c for c in wide.columns if c.type.base != "rowversion")  # not mappable on PostgreSQL
    a = deliver(dataclasses.replace(wide, columns=cols), COMBOS["xcall"])
    for dialect in (TSQL, PG):
        upd, dele = dialect.procedure_sql(a, "U"), dialect.procedure_sql(a, "D")
        where_u = upd[upd.index("where") if dialect is TSQL else upd.index("WHERE") :]
        assert "c1_old" not in where_u and "c8_old" not in where_u  # LOB before images never matched
        assert "c2_old" in where_u  # the key (Id is column 2)
        where_d = dele[dele.index("where") if dialect is TSQL else dele.index("WHERE") :].split("\n")[0]
        assert re.search(r"c2\b", where_d) and not re.search(r"c1\b|c8\b", where_d)


def test_raise_passes_table_and_key_text() -> None:
    a = deliver(CASES["composite_key"], COMBOS["xcall"])
    upd = TSQL.procedure_sql(a, "U")
    assert "@param1=N'[Person].[BusinessEntityAddress]', @param2=@primarykey_text, @param3=13233" in upd
    assert (
        "set @primarykey_text = @primarykey_text + '[AddressID] = ' + convert(nvarchar(100),@c2_old,1)" in upd
    )
    assert "@param3=13234" in TSQL.procedure_sql(a, "D")
    assert "\t\t\tElse\n\t\t\t\texec sp_MSreplraiserror @errorid=20598\n" in upd  # SQL Server's else arm
    assert "throw" not in upd.lower() and "isnull" not in upd
    pg = PG.procedure_sql(a, "U")
    assert "ERRCODE = 'RP598'" in pg and "'[AddressID] = ' || coalesce((c2_old)::text, 'NULL')" in pg


# -- SQL statements -------------------------------------------------------------------------
def test_postgres_statements_parse_and_mark_in_plan_order() -> None:
    a = deliver(CASES["composite_key"], COMBOS["sql"])
    for op, cols in (("I", ()), ("U", ("AddressID", "ModifiedDate")), ("U", ()), ("D", ())):
        text = PG.statement_sql(a, op, cols)
        sqlglot.parse_one(text, read="postgres")
        nkeys = 0 if op == "I" else len(a.key)
        assert text.count("?") == (len(a.column_names) if op == "I" else len(cols) + nkeys)
    upd = PG.statement_sql(a, "U", ("AddressID", "ModifiedDate"))
    assert upd.index("AS c2") < upd.index("AS c5") < upd.index("AS pkc1")
    assert "applier.require_rows(" in upd and "'UPDATE'" in upd


def test_statement_params_and_columns() -> None:
    a = deliver(CASES["composite_key"], COMBOS["sql"])
    before = {
        "BusinessEntityID": 1,
        "AddressID": 2,
        "AddressTypeID": 3,
        "rowguid": None,
        "ModifiedDate": None,
    }
    after = {**before, "AddressID": 9}
    assert statement_columns(a, ["ModifiedDate", "AddressID"]) == ("AddressID", "ModifiedDate")
    assert statement_columns(a, None) == a.column_names
    assert statement_params(a, "U", before, after, ("AddressID",)) == (9, 1, 2, 3)
    assert statement_params(a, "D", before, None, ()) == (1, 2, 3)
    ident = CASES["identity_key"]
    assert statement_columns(ident, None) == ("rowguid", "ModifiedDate")  # identity never set


def test_planner_every_delivery() -> None:
    img = '{"VendorID":1,"AccountNumber":"A","Name":"n","CreditRating":1,"PreferredVendorStatus":true,"ActiveFlag":true,"PurchasingWebServiceURL":null,"ModifiedDate":"2020-01-01T00:00:00.000000"}'
    for name, combo in COMBOS.items():
        a = deliver(CASES["vendor"], combo)
        for dialect in (TSQL, PG):
            p = Planner(dialect, [a])
            calls = [
                p.plan(a.name, op, img if op != "I" else None, img if op != "D" else None, ["Name"])
                for op in "IUD"
            ]
            if name == "none":
                assert calls == [None, None, None]  # not replicated
                continue
            for c in calls:
                assert c is not None and c.sql.count("?") == len(c.params)
    sql = deliver(CASES["vendor"], COMBOS["sql"])
    p = Planner(PG, [sql])
    one = p.plan(sql.name, "U", img, img, ["Name"])
    two = p.plan(sql.name, "U", img, img, ["Name", "CreditRating"])
    assert one is not None and two is not None and one.sql != two.sql
    assert one.params == ("n", 1)


# -- types -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, tsql, pg",
    [
        ("hierarchyid", "hierarchyid", "varchar(4000)"),  # canonical text form /1/2/
        ("money", "money", "numeric(19,4)"),
        ("uniqueidentifier", "uniqueidentifier", "uuid"),
        ("xml", "xml", "text"),
        ("nvarchar(max)", "nvarchar(max)", "text"),
        ("varbinary(max)", "varbinary(max)", "bytea"),
        ("datetime", "datetime", "timestamp(3)"),
        ("bit", "bit", "boolean"),
    ],
)
def test_type_mapping_both_dialects(text: str, tsql: str, pg: str) -> None:
    t = parse_type(text)
    assert (TSQL.type_sql(t), PG.type_sql(t)) == (tsql, pg)


def test_unmappable_types_fail_clearly() -> None:
    with pytest.raises(UnsupportedError, match=r"postgres: column type rowversion cannot be mapped"):
        PG.create_table_sql(
            Article(
                "dbo", "t", (Column("k", parse_type("int")), Column("v", parse_type("rowversion"))), ("k",)
            )
        )
    for bad in ("geography", "sql_variant", "hierarchyid(4)"):
        with pytest.raises(ConfigError):
            parse_type(bad)


@pytest.mark.parametrize("op, syntaxes", sorted(SYNTAXES.items()))
def test_every_seed_option_parses(op: str, syntaxes: list[str]) -> None:
    for s in syntaxes:
        assert Delivery.parse(op, s).syntax == Syntax(s)
        if s not in ("SQL", "NONE"):
            assert Delivery.parse(op, f"{s} dbo.my_proc").procedure == "dbo.my_proc"


# -- applier procs ---------------------------------------------------------------------------
def test_procs_writes_one_script_per_article_and_dialect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from applier.cli import main

    cfg = tmp_path / "articles.toml"
    cfg.write_text(
        """
[[articles]]
name = "dbo.a"
columns = [{ name = "id", type = "int", key = true }, { name = "v", type = "nvarchar(10)" }]
update = "MCALL"
delete = "XCALL"

[[articles]]
name = "dbo.b"
columns = [{ name = "id", type = "int", key = true }, { name = "v", type = "xml" }]
insert = "SQL"
update = "SCALL dbo.my_upd"
delete = "NONE"
""",
        encoding="utf-8",
    )
    for dialect in ("tsql", "postgres"):
        out = tmp_path / dialect
        assert main(["procs", "--dialect", dialect, "--config", str(cfg), "--out", str(out)]) == 0
        assert sorted(p.name for p in out.iterdir()) == [f"dbo.a.{dialect}.sql", f"dbo.b.{dialect}.sql"]
        a = (out / f"dbo.a.{dialect}.sql").read_text(encoding="utf-8")
        b = (out / f"dbo.b.{dialect}.sql").read_text(encoding="utf-8")
        assert "MCALL" in a and "XCALL" in a and "sp_MSdel_dboa" in a
        assert "custom procedure dbo.my_upd (SCALL syntax) is not generated" in b
        assert "-- delete: NONE, not replicated" in b
        if dialect == "tsql":
            batches = TSQL.split_script(a)
            assert len(batches) == 1 + 2 * 3  # header comment + (drop, create) per procedure
            for create in batches[2::2]:
                check_procedure(create, create.split("\nas\n")[0].count("@"))
        else:
            assert "applier.require_rows" in b  # SQL statements need the helper
    assert "wrote 2 script(s)" in capsys.readouterr().out
