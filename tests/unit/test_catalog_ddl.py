"""applier.catalog.ddl: articles from DDL scripts (the AdventureWorks scripts of tests/data, and
hostile ones), the articles file, and the `applier articles` command."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from applier.catalog.command import cmd_articles, register
from applier.catalog.ddl import read_ddl, read_ddl_file
from applier.catalog.files import articles_toml, with_ddl_articles
from applier.config import demo_config, load_config
from applier.errors import ConfigError
from tests.support.adventureworks import DDL, PG_DDL

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def ddl(text: str, dialect: str = "tsql", **kw):  # type: ignore[no-untyped-def]
    return read_ddl(text, dialect, "s.sql", **kw)


# -- AdventureWorks, T-SQL -----------------------------------------------------------------
def test_adventureworks_tsql_gives_every_table() -> None:
    c = read_ddl_file(str(DDL), "tsql")
    assert len(c.articles) == 13  # every CREATE TABLE of the file
    bea = c.article("Person.BusinessEntityAddress")
    assert bea.key == ("BusinessEntityID", "AddressID", "AddressTypeID")
    be = c.article("Person.BusinessEntity")
    assert be.column("BusinessEntityID").identity and be.key == ("BusinessEntityID",)
    vendor = c.article("Purchasing.Vendor")  # alias types: AccountNumber, Name, Flag
    assert str(vendor.column("AccountNumber").type) == "nvarchar(15)"
    assert str(vendor.column("ActiveFlag").type) == "bit" and not vendor.column("ActiveFlag").nullable
    assert vendor.column("PurchasingWebServiceURL").nullable
    sod = c.article("Sales.SalesOrderDetail")
    assert sod.key == ("SalesOrderID", "SalesOrderDetailID") and sod.column("SalesOrderDetailID").identity
    assert sod.column("LineTotal").computed and "LineTotal" not in sod.column_names
    assert sod.unique == (("rowguid",),)  # CREATE UNIQUE INDEX AK_SalesOrderDetail_rowguid
    doc = c.article("Production.Document")
    assert doc.column("DocumentNode").type.base == "hierarchyid"  # carried as its text form
    assert doc.unique == (("rowguid",),)  # the column's UNIQUE written before CONSTRAINT ... DEFAULT
    assert (
        str(c.article("Sales.SalesOrderHeader").column("UnitPrice" if False else "SubTotal").type)
        == "money(19,4)"
    )


def test_adventureworks_tsql_messages() -> None:
    c = read_ddl_file(str(DDL), "tsql")
    src = str(DDL)
    # the file's WorkOrderRouting primary key without its CREATE TABLE
    assert c.problems == (
        f"{src}:300: ALTER TABLE Production.WorkOrderRouting: table Production.WorkOrderRouting is not "
        "created in the script: statement passed over",
    )
    typed = [n for n in c.notes if "typed xml" in n]
    assert len(typed) == 5
    assert (
        f"{src}:96: HumanResources.JobCandidate: column Resume: typed xml: carried as xml; the XML schema "
        "collection [HumanResources].[HRResumeSchemaCollection] stays at the publisher"
    ) in typed
    assert (
        f"{src}:253: Sales.SalesOrderHeader: unique index AK_SalesOrderHeader_SalesOrderNumber "
        "(SalesOrderNumber) not carried: column SalesOrderNumber is computed"
    ) in c.notes


# -- AdventureWorks, PostgreSQL -------------------------------------------------------------
def test_adventureworks_postgres_gives_every_table() -> None:
    c = read_ddl_file(str(PG_DDL), "postgres")
    assert len(c.articles) == 68  # "All 68 tables are properly set up." (the file's header)
    assert c.problems == ()  # every type of the port is carried
    names = set(c.names)
    assert {"person.businessentity", "sales.salesorderdetail", "purchasing.vendor"} <= names  # folded
    bea = c.article("person.businessentityaddress")
    assert bea.key == ("businessentityid", "addressid", "addresstypeid")
    assert (("addressid",), "person.address", ("addressid",)) in bea.references
    sod = c.article("sales.salesorderdetail")
    assert sod.column("salesorderdetailid").identity  # SERIAL
    assert (
        ("specialofferid", "productid"),
        "sales.specialofferproduct",
        ("specialofferid", "productid"),
    ) in (sod.references)
    assert "linetotal" not in sod.column_names  # ALTER TABLE ... DROP COLUMN after the load
    doc = c.article("production.document")  # DocumentNode: ADD after the load, then the key
    assert doc.key == ("documentnode",) and "documentlevel" not in doc.column_names
    vendor = c.article("purchasing.vendor")  # domains "AccountNumber", "Flag", "Name"
    assert str(vendor.column("accountnumber").type) == "nvarchar(15)"
    assert str(vendor.column("activeflag").type) == "bit"
    assert sum(len(a.references) for a in c.articles) > 80


@pytest.mark.parametrize(("path", "dialect"), [(DDL, "tsql"), (PG_DDL, "postgres")])
def test_the_articles_file_is_a_config_file(tmp_path: Path, path: Path, dialect: str) -> None:
    c = read_ddl_file(str(path), dialect)
    f = tmp_path / "articles.toml"
    f.write_text(articles_toml(c, str(path)), encoding="utf-8")
    assert load_config(f).articles == c.articles
    text = f.read_text(encoding="utf-8")
    assert all(f"#   {m}" in text for m in c.problems)


def test_tables_filter_and_unknown_names() -> None:
    c = read_ddl_file(str(PG_DDL), "postgres", ["Purchasing.Vendor", "sales.salesorderdetail", "sales.nope"])
    assert c.names == ("purchasing.vendor", "sales.salesorderdetail")  # asked order, case ignored
    assert c.problems == (f"{PG_DDL}: no table sales.nope (did you mean sales.store?)",) or (
        c.problems[0].startswith(f"{PG_DDL}: no table sales.nope (")
    )


# -- hostile scripts -----------------------------------------------------------------------
def test_bracketed_and_quoted_names_with_spaces() -> None:
    c = ddl(
        "CREATE TABLE [my schema].[order lines] ([line id] int NOT NULL, [the [x]] value] nvarchar(10),\n"
        "  CONSTRAINT [pk x] PRIMARY KEY CLUSTERED ([line id]))\nGO\n"
    )
    a = c.article("my schema.order lines")
    assert a.key == ("line id",) and a.column_names == ("line id", "the [x] value")
    p = ddl('CREATE TABLE "My Schema"."Order ""Lines""" ("a b" integer PRIMARY KEY, Mixed text);', "postgres")
    a = p.article('My Schema.Order "Lines"')
    assert a.column_names == ("a b", "mixed")  # unquoted names fold to lower case


def test_composite_keys_inline_and_altered() -> None:
    c = ddl(
        "CREATE TABLE dbo.a (x int NOT NULL, y int NOT NULL, z int, PRIMARY KEY (y, x));\n"
        "CREATE TABLE dbo.b (x int NOT NULL, y int NOT NULL, z int)\n"
        "ALTER TABLE dbo.b WITH NOCHECK ADD CONSTRAINT pk_b PRIMARY KEY NONCLUSTERED (x, y) WITH (FILLFACTOR = 80) ON [PRIMARY]\n"
        "ALTER TABLE dbo.b ADD CONSTRAINT fk_b FOREIGN KEY (y, x) REFERENCES dbo.a (y, x) ON DELETE CASCADE\n"
    )
    assert c.article("dbo.a").key == ("y", "x")
    b = c.article("dbo.b")
    assert b.key == ("x", "y") and b.references == ((("y", "x"), "dbo.a", ("y", "x")),)


def test_a_table_without_a_key() -> None:
    c = ddl(
        "CREATE TABLE t.keyless (a int, b int);\n"
        "CREATE TABLE t.by_index (a int NOT NULL, b int NULL, c int NOT NULL);\n"
        "CREATE UNIQUE INDEX ux_b ON t.by_index (b);\n"  # nullable: not a key
        "CREATE UNIQUE INDEX ux_ac ON t.by_index (a, c) INCLUDE (b);\n"
        "CREATE UNIQUE INDEX ux_f ON t.keyless (a) WHERE a > 0;\n"
    )
    assert c.names == ("t.by_index",)
    assert c.article("t.by_index").key == ("a", "c")
    assert c.article("t.by_index").unique == (("b",),)
    assert c.problems == (
        "s.sql:1: t.keyless: no primary key and no unique constraint or index on NOT NULL columns: "
        "table skipped (replication needs a key to find a row again)",
    )
    assert "s.sql:2: t.by_index: no primary key; unique index ux_ac (a, c) is the key" in c.notes
    assert "s.sql:5: t.keyless: filtered unique index ux_f not carried (it is not a key)" in c.notes


def test_types_that_cannot_be_carried() -> None:
    c = ddl(
        "CREATE TYPE dbo.Point EXTERNAL NAME Geo.[Geo.Point];\nGO\n"
        "CREATE TABLE dbo.places (\n"
        "  id int NOT NULL PRIMARY KEY,\n"
        "  spot geography NOT NULL,\n"
        "  anything sql_variant NULL,\n"
        "  p dbo.Point NULL,\n"
        "  q dbo.Mystery NULL,\n"
        "  v rowversion,\n"
        "  name sysname)\n"
        "CREATE TABLE dbo.by_shape (shape geometry NOT NULL PRIMARY KEY, n int)\n"
    )
    places = c.article("dbo.places")
    assert places.column_names == ("id", "v", "name")
    assert str(places.column("v").type) == "binary(8)" and str(places.column("name").type) == "nvarchar(128)"
    assert "dbo.by_shape" not in c.names
    assert c.problems == (
        "s.sql:5: dbo.places: column spot (geography): a spatial (CLR) type: applier carries no spatial values; "
        "left out of the article (NOT NULL: the subscriber's table must give it a default)",
        "s.sql:6: dbo.places: column anything (sql_variant): sql_variant holds values of many types; applier "
        "carries one type per column; left out of the article",
        "s.sql:7: dbo.places: column p (dbo.Point): user-defined type Point is a CLR type; left out of the article",
        "s.sql:8: dbo.places: column q (dbo.Mystery): user-defined type dbo.Mystery: not an alias type of the "
        "script (CREATE TYPE dbo.Mystery FROM <base type>); left out of the article",
        "s.sql:11: dbo.by_shape: key column shape (geometry): a spatial (CLR) type: applier carries no spatial "
        "values: table skipped (a key column cannot be left out)",
    )
    assert any("v: rowversion: carried as binary(8)" in n for n in c.notes)


def test_postgres_types_that_cannot_be_carried() -> None:
    c = ddl(
        "CREATE TYPE mood AS ENUM ('sad', 'ok');\n"
        "CREATE TYPE pair AS (a int, b text);\n"
        "CREATE DOMAIN positive AS integer NOT NULL CHECK (VALUE > 0);\n"
        "CREATE DOMAIN feeling AS mood NOT NULL;\n"
        "CREATE TABLE public.t (id bigserial PRIMARY KEY, tags text[], m mood, n positive, r int4range,\n"
        "  p pair, f feeling);\n",
        "postgres",
    )
    t = c.article("public.t")
    assert t.column_names == ("id", "m", "n", "f") and t.column("id").identity
    assert not t.column("n").nullable  # the domain's NOT NULL
    # an enum is carried as its label text (a label is at most 63 bytes), a domain over one too
    assert str(t.column("m").type) == str(t.column("f").type) == "nvarchar(63)"
    assert t.column("m").nullable and not t.column("f").nullable
    assert [n.split(": ", 2)[2] for n in c.notes if "enum" in n] == [
        "column m: enum mood: carried as its label text (nvarchar(63)); the subscriber orders it as text, "
        "not in the enum's declared order",
        "column f: enum mood: carried as its label text (nvarchar(63)); the subscriber orders it as text, "
        "not in the enum's declared order",
    ]
    assert [p.split(": ")[2].split(" (")[0] for p in c.problems] == ["column tags", "column r", "column p"]
    assert "user-defined type pair is a composite type" in c.problems[2]


def test_a_syntax_error_names_file_and_line() -> None:
    c = ddl(
        "CREATE TABLE dbo.ok (id int PRIMARY KEY)\nGO\n\nCREATE TABLE dbo.bad (\n  id int,\n  x int NOT NOT NULL)\nGO\n"
    )
    assert c.names == ("dbo.ok",)
    assert c.problems == ("s.sql:6: cannot read CREATE TABLE dbo.bad: Expecting ) (near 'NOT')",)
    c = ddl("CREATE TABLE t (a text DEFAULT 'unterminated)\n", "postgres")
    assert c.articles == () and c.problems[0].startswith("s.sql: cannot read the script: ")


def test_psql_commands_procedures_and_schemas_are_passed_over() -> None:
    c = ddl(
        "\\set ON_ERROR_STOP on\n"
        "CREATE SCHEMA shop\n  CREATE TABLE item (id serial, name varchar(20) NOT NULL)\n"
        "  CREATE VIEW v AS SELECT 1;\n"
        "CREATE FUNCTION f() RETURNS void AS $$ BEGIN CREATE TABLE nope (x int); END $$ LANGUAGE plpgsql;\n"
        "\\copy shop.item FROM 'x.csv' CSV;\n"
        "ALTER TABLE ONLY shop.item ADD CONSTRAINT item_pkey PRIMARY KEY (id);\n",
        "postgres",
    )
    assert c.names == ("shop.item",) and c.article("shop.item").key == ("id",)
    c = ddl(
        "CREATE PROCEDURE dbo.p AS\nBEGIN\n  CREATE TABLE #tmp (x int PRIMARY KEY)\n  CREATE TABLE dbo.inner_t (x int PRIMARY KEY)\nEND\nGO\n"
        "CREATE TABLE dbo.real_t (x int PRIMARY KEY) ON [PRIMARY] TEXTIMAGE_ON [PRIMARY]\nGO\n"
    )
    assert c.names == ("dbo.real_t",)


def test_unknown_dialect() -> None:
    with pytest.raises(ConfigError, match="unknown DDL dialect 'mysql'"):
        read_ddl("", "mysql")


# -- the command and `applier run --ddl` ------------------------------------------------------
def _parse(argv: list[str]):  # type: ignore[no-untyped-def]
    import argparse

    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command")
    assert register(sub) == "articles"
    return p.parse_args(argv)


def test_the_articles_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "a.toml"
    a = _parse(
        [
            "articles",
            "--from-ddl",
            str(DDL),
            "--tables",
            "Person.BusinessEntity,Purchasing.Vendor",
            "--out",
            str(out),
        ]
    )
    assert cmd_articles(a) == 0
    assert [x.name for x in load_config(out).articles] == ["Person.BusinessEntity", "Purchasing.Vendor"]
    assert cmd_articles(_parse(["articles", "--from-ddl", str(DDL)])) == 1  # WorkOrderRouting's key
    captured = capsys.readouterr()
    assert tomllib.loads(captured.out)["articles"][0]["table"] == "Vendor"
    assert "not carried: " in captured.err and ":300: " in captured.err
    missing = tmp_path / "missing.sql"
    assert cmd_articles(_parse(["articles", "--from-ddl", str(missing)])) == 2
    assert "no such DDL file" in capsys.readouterr().err


def test_run_with_ddl_articles() -> None:
    cfg, catalog = with_ddl_articles(demo_config(), DDL, "tsql", ["Purchasing.Vendor"])
    assert cfg.articles == catalog.articles and [a.name for a in cfg.articles] == ["Purchasing.Vendor"]
    with pytest.raises(ConfigError, match="no article"):
        with_ddl_articles(demo_config(), DDL, "tsql", ["nope.nope"])
