"""T-SQL dialect without a database: golden procedures, seed 003's structure, parsing,
identifier quoting and error classification.

Golden files live in tests/golden/tsql/; regenerate with APPLIER_REGEN_GOLDEN=1.

Parsing: every procedure through tests/support/tsql_reader.py (sqlglot reads the statements,
the reader the procedure's nesting).
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from applier.articles import _BASES, Article, Delivery, Syntax, parse_type
from applier.dialects.conflicts import ConflictClass
from applier.dialects.tsql import TsqlDialect
from applier.dialects.tsqlerrors import native_code
from applier.errors import UnsupportedError
from tests.support.tsql_articles import CASES, HOSTILE, KEY_ONLY, article
from tests.support.tsql_reader import check_procedure, parse_condition, parse_leaf, statements

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "tsql"
D = TsqlDialect()


def script(a: Article) -> str:
    parts = [D.create_table_sql(a).strip()]
    parts += [sql.strip() for op in "IUD" if (sql := D.procedure_sql(a, op))]
    return "\ngo\n".join(parts) + "\ngo\n"


# -- the generated T-SQL read back (tests/support/tsql_reader.py) ---------------------
def norm(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s*([,()])\s*", r"\1", text)


def top_level_else(stmts: list[str]) -> int:
    """Index of the 'else' directly inside the procedure's begin ... end."""
    depth = 0
    for i, stmt in enumerate(stmts):
        low = stmt.lower()
        depth += (low == "begin") - (low == "end")
        if low == "else" and depth == 1:
            return i
    raise AssertionError("no top-level else")


def check_script(text: str, a: Article) -> None:
    parts = D.split_script(text)  # the GO splitter the install runs the script with
    assert isinstance(sqlglot.parse_one(parts[0], read="tsql"), exp.Create)  # create table
    procs = [op for op in "IUD" if D.procedure_sql(a, op)]
    assert len(parts) == 1 + 2 * len(procs)
    for i, op in enumerate(procs):
        drop, create = parts[1 + 2 * i], parts[2 + 2 * i]
        m = re.match(r"(?is)^\s*if\s+(.*?)\s+(drop procedure .*?)\s*$", drop)
        assert m, drop
        parse_condition(m.group(1))
        assert isinstance(parse_leaf(m.group(2)), exp.Drop)
        check_procedure(create, len(D.proc_params(a, op)))


# -- golden files ---------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name: str) -> None:
    path = GOLDEN / f"{name}.sql"
    text = script(CASES[name])
    if os.environ.get("APPLIER_REGEN_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} missing: run with APPLIER_REGEN_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("a", [*CASES.values(), HOSTILE, KEY_ONLY], ids=[*CASES, "hostile", "key_only"])
def test_every_statement_parses(a: Article) -> None:
    check_script(script(a), a)


# -- seed 003 (MicrosoftDocs, CC-BY-4.0): the Vendor SCALL update as SQL Server wrote it ----
SEED_UPDATE = """create procedure [sp_MSupd_PurchasingVendor]
@c1 int = null,@c2 nvarchar(15) = null,@c3 nvarchar(50) = null,@c4 tinyint = null,@c5 bit = null,@c6 bit = null,@c7 nvarchar(1024) = null,@c8 datetime = null,@pkc1 int
,@bitmap binary(2)
as
begin
update [Purchasing].[Vendor] set
[AccountNumber] = case substring(@bitmap,1,1) & 2 when 2 then @c2 else [AccountNumber] end
,[Name] = case substring(@bitmap,1,1) & 4 when 4 then @c3 else [Name] end
,[CreditRating] = case substring(@bitmap,1,1) & 8 when 8 then @c4 else [CreditRating] end
,[PreferredVendorStatus] = case substring(@bitmap,1,1) & 16 when 16 then @c5 else [PreferredVendorStatus] end
,[ActiveFlag] = case substring(@bitmap,1,1) & 32 when 32 then @c6 else [ActiveFlag] end
,[PurchasingWebServiceURL] = case substring(@bitmap,1,1) & 64 when 64 then @c7 else [PurchasingWebServiceURL] end
,[ModifiedDate] = case substring(@bitmap,1,1) & 128 when 128 then @c8 else [ModifiedDate] end
where [VendorID] = @pkc1
if @@rowcount = 0
if @@microsoftversion>0x07320000
exec sp_MSreplraiserror 20598
end
"""


SEED_003 = (
    Path(__file__).resolve().parents[1] / "data" / "mssql_docs" / "specify_how_changes_are_propagated.txt"
)


def test_seed_excerpt_is_verbatim() -> None:
    """The update procedure quoted above is the documentation's, word for word."""
    assert norm(SEED_UPDATE) in norm(SEED_003.read_text(encoding="utf-8"))


def test_vendor_scall_update_legacy_is_the_seeds_text() -> None:
    """--template legacy writes the documented procedure: the seed's header and statements,
    the bare 'exec sp_MSreplraiserror 20598'; only the key-changed branch is added before."""
    a = dataclasses.replace(CASES["vendor"], proc_template="legacy")
    ours = statements(D.split_script(D.procedure_sql(a, "U"))[1])
    seed = statements(SEED_UPDATE)
    # binary(1) is ours (DESIGN: "honour its structure, not that width": 8 columns need
    # ceil(8/8) = 1 byte); the documentation's example says binary(2).
    assert norm(ours[0]) == norm(seed[0].replace("binary(2)", "binary(1)"))
    assert ours[1:3] == seed[1:3] == ["as", "begin"]
    assert not any("primarykey_text" in s for s in ours)
    # VendorID is not an identity column: the key-changed branch comes first and sets every
    # column, the key included, then the seed's statements follow in the else branch.
    assert norm(ours[3]) == "if(substring(@bitmap,1,1)& 1 = 1)"
    assert norm(ours[5]).startswith(
        norm(
            "update [Purchasing].[Vendor] set [VendorID] = case substring(@bitmap,1,1) & 1 when 1 then @c1 else [VendorID] end"
        )
    )
    i = top_level_else(ours)
    assert ours[i + 1] == "begin"
    assert [norm(s) for s in ours[i + 2 : i + 6]] == [norm(s) for s in seed[3:7]]  # update .. raise
    assert ours[-2:] == ["end", "end"]


def test_vendor_scall_update_2016_raises_with_table_and_key() -> None:
    """The default (2016) text: one parameter per line, @pkc1 defaulting to NULL, and the
    raise block SQL Server 2016+ writes (its else arm the bare @errorid=20598)."""
    text = D.split_script(D.procedure_sql(CASES["vendor"], "U"))[1]
    assert "\t\t@pkc1 int = NULL,\n\t\t@bitmap binary(1)\nas\n" in text
    assert "\tdeclare @primarykey_text nvarchar(100) = ''\n" in text
    raise_block = (
        "if @@rowcount = 0\n    if @@microsoftversion>0x07320000\n\t\tBegin\n"
        "\t\t\tif exists (Select * from sys.all_parameters where object_id = OBJECT_ID('sp_MSreplraiserror') "
        "and [name] = '@param3')\n\t\t\tBegin\n\t\t\t\t\n"
        "\t\t\t\tset @primarykey_text = @primarykey_text + '[VendorID] = ' + convert(nvarchar(100),@pkc1,1)\n"
        "\t\t\t\texec sp_MSreplraiserror @errorid=20598, @param1=N'[Purchasing].[Vendor]', "
        "@param2=@primarykey_text, @param3=13233 \n\t\t\tEnd\n\t\t\tElse\n"
        "\t\t\t\texec sp_MSreplraiserror @errorid=20598\n\t\tEnd\n"
    )
    assert text.count(raise_block) == 2  # the key-changed branch and the other


def test_composite_key_text_and_identity_rules() -> None:
    upd = D.procedure_sql(CASES["composite_key"], "U")
    assert (
        "if (substring(@bitmap,1,1) & 1 = 1) or\n (substring(@bitmap,1,1) & 2 = 2) or\n (substring(@bitmap,1,1) & 4 = 4)\n"
        in upd
    )
    assert "convert(nvarchar(100),@pkc1,1) + ', '" in upd and "and [AddressTypeID] = @pkc3" in upd
    dele = D.procedure_sql(CASES["composite_key"], "D")
    assert "@param3=13234" in dele and "\t\t@pkc3 int\nas\n" in dele  # delete keys: no default
    ident = D.procedure_sql(CASES["identity_key"], "U")
    assert "[BusinessEntityID] = case" not in ident and "\nelse\n" not in ident
    wide = D.procedure_sql(CASES["wide"], "U")
    assert "@bitmap binary(2)" in wide and "[Flag] = case substring(@bitmap,2,1) & 2 when 2 then @c10" in wide
    assert "[Ver] binary(8) null" in D.create_table_sql(CASES["wide"])


def test_call_sql_and_unsupported_syntaxes() -> None:
    a = CASES["vendor"]
    assert D.call_sql(a, "U") == "EXEC [sp_MSupd_PurchasingVendor] " + ",".join("?" * 10)
    assert D.call_sql(a, "D") == "EXEC [sp_MSdel_PurchasingVendor] ?"
    mcall = Article(a.schema, a.table, a.columns, a.key, update=Delivery(Syntax.MCALL))
    text = D.procedure_sql(mcall, "U")  # MCALL: SCALL's body, every parameter required
    assert "@c1 int,\n" in text and "= NULL" not in text.upper()
    custom = Article(a.schema, a.table, a.columns, a.key, insert=Delivery(Syntax.CALL, "dbo.my_ins"))
    assert D.procedure_sql(custom, "I") is None
    assert D.call_sql(custom, "I").startswith("EXEC [dbo].[my_ins] ?,")
    # an unqualified custom name resolves where the generated ones live: the procedure schema
    bare = dataclasses.replace(custom, insert=Delivery(Syntax.CALL, "my_ins"))
    assert D.call_sql(bare, "I").startswith("EXEC [my_ins] ?,")
    assert D.call_sql(dataclasses.replace(bare, proc_schema="repl"), "I").startswith(
        "EXEC [repl].[my_ins] ?,"
    )
    assert (
        D.call_sql(dataclasses.replace(a, proc_schema="repl"), "D")
        == "EXEC [repl].[sp_MSdel_PurchasingVendor] ?"
    )


# -- identifiers, literals, types -------------------------------------------------------
@pytest.mark.parametrize(
    "ident, quoted",
    [
        ("Vendor", "[Vendor]"),  # plain
        ("Order Details", "[Order Details]"),  # space
        ("a]b", "[a]]b]"),  # closing bracket is doubled (QUOTENAME's rule)
        ("]", "[]]]"),  # only a closing bracket
        ("[x]", "[[x]]]"),  # opening bracket needs no escape
        ("it's", "[it's]"),  # single quote is literal inside brackets
        ('say "hi"', '[say "hi"]'),  # double quotes too
        ("x--y", "[x--y]"),  # comment marker stays inside the identifier
        ("x]; DROP TABLE t; --", "[x]]; DROP TABLE t; --]"),  # injection attempt stays one identifier
        ("名前Ünï", "[名前Ünï]"),  # Unicode
        ("tab\there", "[tab\there]"),  # control characters other than NUL are allowed
        ("x" * 128, "[" + "x" * 128 + "]"),  # sysname's limit
    ],
)
def test_quote(ident: str, quoted: str) -> None:
    assert D.quote(ident) == quoted
    assert quoted[1:-1].replace("]]", "]") == ident  # round trip


@pytest.mark.parametrize(
    "ident",
    [
        "",  # SQL Server rejects empty delimited names
        "a\x00b",  # NUL ends strings in the driver
        "x" * 129,  # longer than sysname
    ],
)
def test_quote_rejects(ident: str) -> None:
    with pytest.raises(UnsupportedError):
        D.quote(ident)


def test_literal() -> None:
    assert D.literal("it's") == "N'it''s'"
    assert D.literal("[a].[b]") == "N'[a].[b]'"
    assert D.literal("名前") == "N'名前'"
    with pytest.raises(UnsupportedError):
        D.literal("a\x00")


def test_type_map_covers_every_base() -> None:
    assert set(D.TYPE_MAP) == set(_BASES)
    cases = {
        "nvarchar(max)": "nvarchar(max)",
        "varbinary(max)": "varbinary(max)",
        "decimal(12,2)": "decimal(12,2)",
        "datetime2": "datetime2(7)",
        "time(3)": "time(3)",
        "timestamp": "binary(8)",
        "rowversion": "binary(8)",
        "money": "money",
        "char(10)": "char(10)",
        "xml": "xml",
        "uniqueidentifier": "uniqueidentifier",
    }
    for text, sql in cases.items():
        assert D.type_sql(parse_type(text)) == sql
    for bad in ("char(max)", "nchar(max)", "nvarchar(4001)", "varchar(8001)"):
        with pytest.raises(UnsupportedError):
            D.type_sql(parse_type(bad))


# -- errors ------------------------------------------------------------------------------
MS18 = "[Microsoft][ODBC Driver 18 for SQL Server]"
MS17 = "[Microsoft][ODBC Driver 17 for SQL Server]"
FTDS = "[FreeTDS]"
ROW_MSG = (
    "The row was not found at the Subscriber when applying the replicated UPDATE command for "
    "Table '[Purchasing].[Vendor]' with Primary Key(s): [VendorID] = 7"
)


@pytest.mark.parametrize(
    "args, cls, code, transient, lost",
    [
        # sp_MSreplraiserror (RAISERROR, severity 16 -> SQLSTATE 42000)
        (
            ("42000", f"[42000] {MS18}[SQL Server]{ROW_MSG} (20598) (SQLExecDirectW)"),
            "ROW_NOT_FOUND",
            "20598",
            False,
            False,
        ),
        # our THROW fallback, reported as 20598
        (
            ("42000", f"[42000] {MS18}[SQL Server]{ROW_MSG} (120598) (SQLExecDirectW)"),
            "ROW_NOT_FOUND",
            "20598",
            False,
            False,
        ),
        (
            ("42000", f"[42000] {FTDS}[SQL Server]{ROW_MSG} (120598) (SQLExecDirectW)"),
            "ROW_NOT_FOUND",
            "20598",
            False,
            False,
        ),
        # 2627 with its "statement has been terminated" record; "(1)" in the text is the key value
        (
            (
                "23000",
                f"[23000] {MS17}[SQL Server]Violation of PRIMARY KEY constraint 'PK__Departme__B2079BCDAA8166F6'. "
                "Cannot insert duplicate key in object 'dbo.Departments'. The duplicate key value is (1). (2627) (SQLExecDirectW); "
                f"[01000] {MS17}[SQL Server]The statement has been terminated. (3621)",
            ),
            "DUPLICATE_KEY",
            "2627",
            False,
            False,
        ),
        # 2601 whose key value looks like an error number
        (
            (
                "23000",
                f"[23000] {MS18}[SQL Server]Cannot insert duplicate key row in object 'Sales.Customer' with unique "
                "index 'AK_Customer_rowguid'. The duplicate key value is (547). (2601) (SQLExecDirectW)",
            ),
            "UNIQUE_INDEX",
            "2601",
            False,
            False,
        ),
        (
            (
                "23000",
                f"[23000] {FTDS}[SQL Server]Violation of PRIMARY KEY constraint 'PK_t'. Cannot insert duplicate key in "
                "object 'dbo.t'. The duplicate key value is (1205). (2627) (SQLExecDirectW)",
            ),
            "DUPLICATE_KEY",
            "2627",
            False,
            False,
        ),
        (
            (
                "23000",
                f"[23000] {MS18}[SQL Server]The INSERT statement conflicted with the FOREIGN KEY constraint "
                '"FK_Vendor_BusinessEntity_BusinessEntityID". The conflict occurred in database "applier", table '
                "\"Person.BusinessEntity\", column 'BusinessEntityID'. (547) (SQLExecDirectW)",
            ),
            "FOREIGN_KEY",
            "547",
            False,
            False,
        ),
        # lock timeout: classification reads the number, whatever SQLSTATE the driver maps it to
        (
            (
                "HY000",
                f"[HY000] {MS18}[SQL Server]Lock request time out period exceeded. (1222) (SQLExecDirectW)",
            ),
            "LOCK_TIMEOUT",
            "1222",
            True,
            False,
        ),
        (
            (
                "40001",
                f"[40001] {MS18}[SQL Server]Transaction (Process ID 57) was deadlocked on lock resources with another "
                "process and has been chosen as the deadlock victim. Rerun the transaction. (1205) (SQLExecDirectW)",
            ),
            "DEADLOCK",
            "1205",
            True,
            False,
        ),
        (
            (
                "40001",
                f"[40001] {FTDS}[SQL Server]Transaction (Process ID 53) was deadlocked on lock resources with another "
                "process and has been chosen as the deadlock victim. Rerun the transaction. (1205) (SQLExecute)",
            ),
            "DEADLOCK",
            "1205",
            True,
            False,
        ),
        # lost connections: SQLSTATE class 08, or a session killed on the server
        (
            ("08S01", f"[08S01] {MS18}TCP Provider: Error code 0x68 (104) (SQLExecDirectW)"),
            "OTHER",
            "104",
            True,
            True,
        ),
        (
            ("08S01", f"[08S01] {MS17}Communication link failure (0) (SQLExecDirectW)"),
            "OTHER",
            "08S01",
            True,
            True,
        ),
        (
            ("08S01", f"[08S01] {FTDS}[SQL Server]Write to the server failed (20006) (SQLExecDirectW)"),
            "OTHER",
            "20006",
            True,
            True,
        ),
        (
            (
                "HY000",
                f"[HY000] {MS18}[SQL Server]Cannot continue the execution because the session is in the kill state. "
                "(596) (SQLExecDirectW)",
            ),
            "OTHER",
            "596",
            True,
            True,
        ),
        # anything else
        (
            ("42S02", f"[42S02] {MS18}[SQL Server]Invalid object name 'dbo.nope'. (208) (SQLExecDirectW)"),
            "OTHER",
            "208",
            False,
            False,
        ),
        (("boom",), "OTHER", "?", False, False),
    ],
)
def test_classify(args: tuple[str, ...], cls: str, code: str, transient: bool, lost: bool) -> None:
    exc = Exception(*args)
    c = D.classify(exc)
    assert (c.cls, c.code, c.transient, c.connection_lost) == (ConflictClass[cls], code, transient, lost)


@pytest.mark.parametrize(
    "message,cls,constraint",
    [
        (
            f"[23000] {MS17}[SQL Server]Violation of PRIMARY KEY constraint 'PK_t'. Cannot insert duplicate key "
            "in object 'dbo.t'. The duplicate key value is (1). (2627) (SQLExecDirectW); "
            f"[01000] {MS17}[SQL Server]The statement has been terminated. (3621)",
            "duplicate_key",
            "PK_t",
        ),
        (
            f"[23000] {MS18}[SQL Server]Violation of UNIQUE KEY constraint 'uq_t_0'. Cannot insert duplicate key "
            "in object 'dbo.t'. The duplicate key value is (7). (2627) (SQLExecDirectW)",
            "unique_index",  # 2627 on a UNIQUE constraint: not the primary key
            "uq_t_0",
        ),
        (
            f"[23000] {MS18}[SQL Server]Cannot insert duplicate key row in object 'Sales.Customer' with unique "
            "index 'AK_Customer_rowguid'. The duplicate key value is (547). (2601) (SQLExecDirectW)",
            "unique_index",
            "AK_Customer_rowguid",
        ),
        (
            f"[23000] {MS18}[SQL Server]The INSERT statement conflicted with the FOREIGN KEY constraint "
            '"FK_Vendor_BusinessEntity". The conflict occurred in database "applier", table '
            "\"Person.BusinessEntity\", column 'BusinessEntityID'. (547) (SQLExecDirectW)",
            "foreign_key",
            "FK_Vendor_BusinessEntity",
        ),
    ],
)
def test_the_constraint_that_fired_is_named_and_tells_the_primary_key_apart(
    message: str, cls: str, constraint: str
) -> None:
    c = D.classify(Exception("23000", message)).keyed({"PK_t"})
    assert (c.cls.value, c.constraint) == (cls, constraint)


def test_primary_key_is_named_by_sql_servers_convention() -> None:
    art = article("dbo", "t" * 110, [("id", "int", "")], ("id",))
    name = D.primary_key_name(art)
    assert name == "PK_" + "t" * 110  # SQL Server's own convention
    assert f"constraint {D.quote(name)} primary key ([id])" in D.create_table_sql(art)


def test_native_code() -> None:
    assert native_code(f"[42000] {MS18}[SQL Server]x (50000) (SQLExecDirectW)") == 50000
    assert native_code(f"[HY000] {MS18}Connection is busy (0) (SQLExecDirectW)") is None
    assert native_code("no number here") is None


# -- session, progress, scripts ------------------------------------------------------------
def test_session_setup() -> None:
    assert D.session_setup(5000) == ["SET XACT_ABORT ON", "SET LOCK_TIMEOUT 5000", "SET NOCOUNT ON"]


def test_the_snapshot_range_statements_parse_and_bind_in_order() -> None:
    """The load's watermark (applier.ranges): created once, one row per range committed with its
    rows, read by a resume, cleared by an install."""
    from applier.dialects.postgres import PostgresDialect

    for d, read in ((D, "tsql"), (PostgresDialect(), "postgres")):
        create = d.render("range_create.sql.j2", table=d.range_table()).strip()
        assert create in d.progress_ddl()
        insert, select, clear = d.range_insert_sql(), d.range_select_sql(), d.range_clear_sql()
        for stmt in (create, insert, select, clear):
            assert sqlglot.parse(stmt, read=read), stmt
        cols = [c.name for c in sqlglot.parse_one(insert, read=read).find(exp.Schema).expressions]
        assert cols == ["subscription", "range_no", "row_count", "layout"]
        assert insert.count("?") == 4 and select.count("?") == 1 and clear.count("?") == 1
        assert [c.alias_or_name for c in sqlglot.parse_one(select, read=read).expressions] == [
            "range_no",
            "row_count",
            "layout",
        ]
        assert "ranges" in d.OWN_TABLES  # install.reusable() counts it as applier's own


def test_progress_sql_parses_and_binds_in_order() -> None:
    for stmt in D.progress_ddl():
        sqlglot.parse(stmt, read="tsql")
    assert "IF SCHEMA_ID(N'applier') IS NULL EXEC(N'CREATE SCHEMA [applier]')" in D.progress_ddl()
    upsert = D.progress_upsert_sql()
    # One sp_executesql call: its variables are its own, so several upserts travel in one batch
    # (the single-connection re-apply writes one per stream) without declaring a name twice.
    assert [type(e).__name__ for e in sqlglot.parse(upsert, read="tsql")] == ["ExecuteSql"]
    m = re.fullmatch(r"exec sp_executesql N'(.*)', N'(.*)', \?, \?, \?, \?", upsert, re.S)
    assert m, upsert
    inner, declared = m.group(1).replace("''", "'"), m.group(2)
    assert [type(e).__name__ for e in sqlglot.parse(inner, read="tsql")] == ["Update", "IfBlock"]
    order = re.findall(r"@(\w+) \w+(?:\(\d+\))?", declared)
    assert order == ["subscription", "stream", "last_lsn", "last_round"]
    assert D.create_schema_sql("o'k]") == "IF SCHEMA_ID(N'o''k]') IS NULL EXEC(N'CREATE SCHEMA [o''k]]]')"
    assert D.drop_table_sql(CASES["vendor"]) == [
        "IF OBJECT_ID(N'[Purchasing].[Vendor]', N'U') IS NOT NULL DROP TABLE [Purchasing].[Vendor]"
    ]


def test_split_script() -> None:
    assert D.split_script("a\ngo\nb\n  GO  \ncategory\n") == ["a", "b", "category"]
    assert D.split_script("go\n") == []
    assert D.savepoint_sql("sp1") == "SAVE TRANSACTION sp1"
    with pytest.raises(UnsupportedError):
        D.savepoint_sql("bad name")
