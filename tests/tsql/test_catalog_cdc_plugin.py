"""The embedded Babelfish as a source and as the plugin's subscriber (``-m tsql``).

- ``applier articles --from-target`` on Babelfish's sys views: tables created from the
  AdventureWorks T-SQL script and from a hand-written one (composite keys, identity, unique
  constraints and indexes, single and composite foreign keys, nvarchar(max), varbinary,
  decimal, datetime2, names with spaces, commas, quotes, non-ASCII letters, longer than 63
  bytes) read back, through the CLI, as the articles ``--from-ddl`` makes of the same script.
  Babelfish's sys views give PostgreSQL's names (lower case, cut with a hash past 63 bytes):
  the declared ones come from ``BabelfishDialect.CATALOG_DECLARED_NAMES_SQL``.
- ``--format mssql-cdc`` through ODBC from a T-SQL engine over TDS: Babelfish has no CDC
  capture, so a change table shaped as SQL Server's ``cdc.dbo_customers_CT`` (and its
  ``cdc.change_tables`` row) holds the rows of tests/data/captures/mssql_cdc; applied at N = 4
  to the embedded PostgreSQL and to Babelfish itself, both converge to the documented rows.
- the pytest plugin with ``--applier-target babelfish``: a throwaway project whose key-chains
  test passes and whose T-SQL update procedure without the zero-row check fails, naming the
  lost keys; without a build the target's tests are skipped with the reason.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

import pytest

import applier
from applier.dialects.batches import split_batches
from applier.errors import InputError
from applier.sources.formats import Options
from tests.support.adventureworks import DDL as AW_DDL
from tests.support.mssql_cdc import EXPECTED, PARQUET, cdc_config, subscriber_rows

pytestmark = [pytest.mark.tsql, pytest.mark.timeout(1800)]

APPLIER = Path(sys.executable).parent / "applier"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _connect(cs: str) -> Any:
    import pyodbc

    from applier.targets.connstr import ensure_odbc_env

    ensure_odbc_env()
    return pyodbc.connect(cs, autocommit=True, timeout=30)


def _articles_cli(tmp_path: Path, name: str, *args: str) -> tuple[dict[str, dict[str, Any]], str]:
    """``applier articles ARGS --out FILE``: the file's articles by schema.table, and stderr;
    the command must exit 0 (every table and column carried)."""
    out = tmp_path / f"{name}.toml"
    res = subprocess.run(
        [str(APPLIER), "articles", *args, "--out", str(out)], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stdout + res.stderr
    arts = tomllib.loads(out.read_text(encoding="utf-8"))["articles"]
    return {f"{a['schema']}.{a['table']}": a for a in arts}, res.stderr


# -- 1. articles --from-target on the sys views ------------------------------------------------

# What Babelfish 4.3 refuses in the AdventureWorks script (with the escape hatches for
# NOT FOR REPLICATION and ALTER TABLE WITH CHECK ADD set to ignore): table -> the error's text.
AW_REFUSED = {
    "Production.Document": "'HIERARCHYID datatype' is not currently supported in Babelfish",
    "HumanResources.JobCandidate": 'type modifier is not allowed for type "xml"',  # typed xml
    "Person.Person": 'type modifier is not allowed for type "xml"',
    "Production.ProductModel": 'type modifier is not allowed for type "xml"',
    # SalesOrderNumber AS ISNULL(N'SO' + CONVERT(nvarchar(23), [SalesOrderID]), N'*** ERROR ***')
    "Sales.SalesOrderHeader": "generation expression is not immutable",
}
AW_CREATED = [
    "Person.BusinessEntity",  # identity (NOT FOR REPLICATION)
    "Person.BusinessEntityAddress",  # 3-column key
    "Production.ProductDescription",
    "Production.ProductPhoto",  # varbinary(max)
    "Purchasing.PurchaseOrderDetail",  # 2-column key with identity, computed columns, money
    "Purchasing.PurchaseOrderHeader",
    "Purchasing.Vendor",  # alias types
    "Sales.SalesOrderDetail",  # unique index on rowguid
]
_CREATE_TABLE = re.compile(r"CREATE TABLE \[(\w+)\]\.\[(\w+)\]")


def test_adventureworks_tables_read_back_from_babelfish_as_the_ddl_declares(
    babelfish: Any, tmp_path: Path
) -> None:
    cs = babelfish.create_database("cat_aw")
    conn = _connect(cs)
    refused: dict[str, str] = {}
    try:
        cur = conn.cursor()
        # Session settings of Babelfish's own: without them the script's IDENTITY ... NOT FOR
        # REPLICATION and ALTER TABLE ... WITH CHECK ADD are refused ("not currently supported").
        for hatch in ("escape_hatch_for_replication", "escape_hatch_nocheck_add_constraint"):
            cur.execute(f"EXEC sp_babelfish_configure '{hatch}', 'ignore'")
        for schema in ("Person", "Purchasing", "Production", "Sales", "HumanResources"):
            cur.execute(f"CREATE SCHEMA [{schema}]")
        for batch in split_batches(AW_DDL.read_text(encoding="utf-8")):
            if not batch.strip() or "WorkOrderRouting" in batch:  # the file has that table's key alone
                continue
            try:
                cur.execute(batch)
            except Exception as e:  # noqa: BLE001 - what the engine refuses is asserted below
                made = _CREATE_TABLE.search(batch)
                if made is not None:
                    refused[f"{made[1]}.{made[2]}"] = str(e)
                else:  # a key or an index of a table refused before
                    on = re.search(r"(?:ALTER TABLE|\bON) \[(\w+)\]\.\[(\w+)\]", batch)
                    assert on is not None and f"{on[1]}.{on[2]}" in refused, (batch, e)
        names = sorted(
            f"{s}.{t}"
            for s, t in cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM INFORMATION_SCHEMA.TABLES")
        )
    finally:
        conn.close()
    assert sorted(refused) == sorted(AW_REFUSED)
    for table, error in refused.items():
        assert AW_REFUSED[table] in error, (table, error)
    assert names == sorted(AW_CREATED)

    tables = ",".join(AW_CREATED)
    got, err = _articles_cli(tmp_path, "target", "--from-target", cs, "--tables", tables)
    want, _ = _articles_cli(
        tmp_path, "ddl", "--from-ddl", str(AW_DDL), "--dialect", "tsql", "--tables", tables
    )
    assert err.strip().endswith("target.toml: 8 article(s)") and babelfish.password not in err
    assert list(got) == AW_CREATED
    for name in AW_CREATED:
        assert got[name] == want[name], name
    assert got["Person.BusinessEntityAddress"]["key"] == ["BusinessEntityID", "AddressID", "AddressTypeID"]
    detail = {c["name"]: c for c in got["Sales.SalesOrderDetail"]["columns"]}
    assert detail["SalesOrderDetailID"].get("identity") and detail["LineTotal"].get("computed")
    assert got["Sales.SalesOrderDetail"]["unique"] == [["rowguid"]]


HAND_SCHEMA = "Sales Ops"
LONG_TABLE = "A_Table_Name_That_Is_Longer_Than_Sixty_Three_Characters_In_PostgreSQL"
LONG_COLUMN = "A_Very_Long_Column_Name_That_Goes_Beyond_Sixty_Three_Characters_Of_PG"
HAND_DDL = f"""
CREATE TABLE [Sales Ops].[Customer] (
    [CustomerID] int IDENTITY(1, 1) NOT NULL,
    [Email Address] nvarchar(200) NOT NULL,
    [Notes] nvarchar(max) NULL,
    [Photo] varbinary(max) NULL,
    [Hash] varbinary(32) NULL,
    [Code] binary(4) NULL,
    [Balance] decimal(12, 3) NULL,
    [Joined] datetime2(3) NOT NULL,
    [Local Name é] nvarchar(40) NULL,
    CONSTRAINT [PK_Customer] PRIMARY KEY ([CustomerID]),
    CONSTRAINT [UQ_Customer_Email] UNIQUE ([Email Address])
);
GO
CREATE TABLE [Sales Ops].[Order Line é's] (
    [Order ID] int NOT NULL,
    [Line, No] smallint NOT NULL,
    [CustomerID] int NOT NULL,
    [Price] decimal(10, 2) NOT NULL,
    [Shipped At] datetime2(7) NULL,
    [Qty's "q"] int NULL,
    [{LONG_COLUMN}] nvarchar(10) NULL,
    CONSTRAINT [PK_Order_Line] PRIMARY KEY ([Order ID], [Line, No]),
    CONSTRAINT [FK_Line_Customer] FOREIGN KEY ([CustomerID]) REFERENCES [Sales Ops].[Customer] ([CustomerID])
);
GO
CREATE TABLE [dbo].[Line Note] (
    [NoteID] bigint IDENTITY(100, 5) NOT NULL PRIMARY KEY,
    [Order ID] int NOT NULL,
    [Line, No] smallint NOT NULL,
    [Body] nvarchar(max) NOT NULL,
    [Stamp] datetime2 NULL,
    CONSTRAINT [FK_Note_Line] FOREIGN KEY ([Order ID], [Line, No])
        REFERENCES [Sales Ops].[Order Line é's] ([Order ID], [Line, No])
);
GO
CREATE TABLE [dbo].[Keyed By Index] (
    [Region] char(2) NOT NULL,
    [Code] nchar(5) NOT NULL,
    [Label] varchar(40) NULL,
    [Amount] numeric(18, 4) NULL
);
GO
CREATE UNIQUE INDEX [UX_Keyed] ON [dbo].[Keyed By Index] ([Region], [Code]);
GO
CREATE TABLE [dbo].[{LONG_TABLE}] (
    [Id] int NOT NULL,
    [CustomerID] int NULL,
    [Flag] bit NOT NULL,
    [Day] date NULL,
    CONSTRAINT [PK_Long] PRIMARY KEY ([Id]),
    CONSTRAINT [UQ_Long_Customer_Day] UNIQUE ([CustomerID], [Day]),
    CONSTRAINT [FK_Long_Customer] FOREIGN KEY ([CustomerID]) REFERENCES [Sales Ops].[Customer] ([CustomerID])
);
GO
"""


def test_hand_written_tables_read_back_from_babelfish_as_the_ddl_declares(
    babelfish: Any, tmp_path: Path
) -> None:
    ddl = tmp_path / "hand.sql"
    ddl.write_text(HAND_DDL, encoding="utf-8")
    cs = babelfish.create_database("cat_hand")
    conn = _connect(cs)
    try:
        cur = conn.cursor()
        cur.execute(f"CREATE SCHEMA [{HAND_SCHEMA}]")
        for batch in split_batches(HAND_DDL):
            if batch.strip():
                cur.execute(batch)
        # Why the declared names are read apart: sys.tables and sys.columns give PostgreSQL's.
        sys_names = cur.execute(
            "SELECT t.name, c.name FROM sys.tables t JOIN sys.columns c ON c.object_id = t.object_id "
            "WHERE t.object_id = OBJECT_ID(N'[Sales Ops].[Order Line é''s]') AND c.column_id IN (1, 7) "
            "ORDER BY c.column_id"
        ).fetchall()
        # datetime2(7) is held with 6 fractional digits (PostgreSQL's timestamp): the catalog says 6
        cur.execute(
            "INSERT INTO [Sales Ops].[Customer] ([Email Address], [Joined]) VALUES (N'a@x', '2024-01-02')"
        )
        cur.execute(
            "INSERT INTO [Sales Ops].[Order Line é's] ([Order ID], [Line, No], [CustomerID], [Price], [Shipped At]) "
            "VALUES (1, 1, 1, 1.50, '2024-01-02 03:04:05.1234567')"
        )
        shipped = cur.execute(
            "SELECT CAST([Shipped At] AS varchar(40)) FROM [Sales Ops].[Order Line é's]"
        ).fetchone()[0]
    finally:
        conn.close()
    assert [tuple(r) for r in sys_names] == [
        ("order line é's", "order id"),
        ("order line é's", "a_very_long_column_name_that_go40ac289503cf0bd9ab64ec1dfcc04137"),
    ]
    assert shipped == "2024-01-02 03:04:05.123457"

    got, err = _articles_cli(tmp_path, "target", "--from-target", cs)
    want, _ = _articles_cli(tmp_path, "ddl", "--from-ddl", str(ddl), "--dialect", "tsql")
    # Babelfish keeps no declared name for a table name longer than 63 bytes (its own
    # INFORMATION_SCHEMA.TABLES gives the cut one too): that table is read under it.
    (cut,) = [n for n in got if n.startswith("dbo.a_table_name_that_is_longer_tha")]
    assert re.fullmatch(r"dbo\.a_table_name_that_is_longer_tha[0-9a-f]{32}", cut), cut
    long_got, long_want = got.pop(cut), want.pop(f"dbo.{LONG_TABLE}")
    assert {**long_got, "table": LONG_TABLE} == long_want
    assert long_got["unique"] == [["CustomerID", "Day"]]
    assert long_got["references"] == [
        {"columns": ["CustomerID"], "article": "Sales Ops.Customer", "parent_columns": ["CustomerID"]}
    ]
    # datetime2 and datetime2(7) are datetime2(6) on Babelfish; every other type as declared
    sevens = [
        (name, c["name"]) for name, a in want.items() for c in a["columns"] if c["type"] == "datetime2(7)"
    ]
    assert sevens == [("Sales Ops.Order Line é's", "Shipped At"), ("dbo.Line Note", "Stamp")]
    for a in want.values():
        for c in a["columns"]:
            c["type"] = "datetime2(6)" if c["type"] == "datetime2(7)" else c["type"]
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name] == want[name], name
    customer = got["Sales Ops.Customer"]
    assert customer["key"] == ["CustomerID"] and customer["unique"] == [["Email Address"]]
    types = {c["name"]: c["type"] for c in customer["columns"]}
    assert types == {
        "CustomerID": "int",
        "Email Address": "nvarchar(200)",
        "Notes": "nvarchar(max)",
        "Photo": "varbinary(max)",
        "Hash": "varbinary(32)",
        "Code": "binary(4)",
        "Balance": "decimal(12,3)",
        "Joined": "datetime2(3)",
        "Local Name é": "nvarchar(40)",
    }
    assert customer["columns"][0].get("identity") is True
    line = got["Sales Ops.Order Line é's"]
    assert line["key"] == ["Order ID", "Line, No"]
    assert [c["name"] for c in line["columns"]][-2:] == ['Qty\'s "q"', LONG_COLUMN]
    assert got["dbo.Line Note"]["references"] == [
        {
            "columns": ["Order ID", "Line, No"],
            "article": "Sales Ops.Order Line é's",
            "parent_columns": ["Order ID", "Line, No"],
        }
    ]
    assert got["dbo.Keyed By Index"]["key"] == ["Region", "Code"]
    assert "unique index" in err and "(Region, Code) is the key" in err


# -- 2. mssql-cdc read through ODBC from Babelfish ----------------------------------------------

CT_COLUMNS = {  # cdc.dbo_customers_CT as SQL Server creates it for dbo.customers
    "__$start_lsn": "binary(10) NOT NULL",
    "__$end_lsn": "binary(10) NULL",
    "__$seqval": "binary(10) NOT NULL",
    "__$operation": "int NOT NULL",
    "__$update_mask": "varbinary(128) NULL",
    "id": "int NULL",
    "name": "nvarchar(50) NULL",
    "email": "nvarchar(100) NULL",
    "balance": "decimal(10,2) NULL",
    "notes": "nvarchar(max) NULL",
    "memo": "ntext NULL",
    "__$command_id": "int NULL",
}
CDC_SETUP = [
    "CREATE TABLE dbo.customers (id int NOT NULL PRIMARY KEY, name nvarchar(50) NOT NULL, "
    "email nvarchar(100) NULL, balance decimal(10,2) NULL, notes nvarchar(max) NULL, memo ntext NULL)",
    "CREATE SCHEMA cdc",
    "CREATE TABLE cdc.dbo_customers_CT (" + ", ".join(f"[{n}] {t}" for n, t in CT_COLUMNS.items()) + ")",
    "CREATE UNIQUE CLUSTERED INDEX dbo_customers_CT_clustered_idx ON cdc.dbo_customers_CT "
    "([__$start_lsn], [__$command_id], [__$seqval], [__$operation])",
    # cdc.change_tables as SQL Server has it: the capture instance's source table
    "CREATE TABLE cdc.change_tables (object_id int NOT NULL, version int NULL, source_object_id int NULL, "
    "capture_instance sysname NOT NULL, start_lsn binary(10) NULL, end_lsn binary(10) NULL, "
    "supports_net_changes bit NULL, has_drop_pending bit NULL, role_name sysname NULL, index_name sysname NULL, "
    "filegroup_name sysname NULL, create_date datetime NOT NULL, partition_switch bit NOT NULL)",
    "INSERT INTO cdc.change_tables (object_id, version, source_object_id, capture_instance, start_lsn, "
    "supports_net_changes, index_name, create_date, partition_switch) VALUES (OBJECT_ID(N'cdc.dbo_customers_CT'), "
    "0, OBJECT_ID(N'dbo.customers'), N'dbo_customers', 0x0000002A000001F40003, 0, N'PK_customers', GETDATE(), 0)",
]


def test_babelfish_has_no_cdc_capture(babelfish: Any) -> None:
    import pyodbc

    conn = _connect(babelfish.create_database("cdc_none"))
    try:
        cur = conn.cursor()
        with pytest.raises(pyodbc.Error, match=r"procedure sp_cdc_enable_db\(\) does not exist"):
            cur.execute("EXEC sys.sp_cdc_enable_db")
        found = cur.execute(
            "SELECT OBJECT_ID('sys.sp_cdc_enable_db'), OBJECT_ID('sys.sp_cdc_enable_table'), "
            "OBJECT_ID('sys.sp_cdc_scan'), (SELECT count(*) FROM sys.all_objects WHERE name LIKE 'sp[_]cdc[_]%')"
        ).fetchone()
        with pytest.raises(pyodbc.Error, match=r"function sys\.fn_cdc_get_max_lsn\(\) does not exist"):
            cur.execute("SELECT sys.fn_cdc_get_max_lsn()")
    finally:
        conn.close()
    assert tuple(found) == (None, None, None, 0)


@pytest.fixture(scope="module")
def cdc_source(babelfish: Any) -> str:
    """A Babelfish database holding dbo.customers, cdc.dbo_customers_CT (the Parquet export's
    rows, LSNs as binary(10)) and cdc.change_tables; its connection string."""
    import pyarrow.parquet as pq

    cs: str = babelfish.create_database("cdc_source")
    table = pq.read_table(PARQUET)
    names = table.column_names
    assert names == list(CT_COLUMNS)
    conn = _connect(cs)
    try:
        cur = conn.cursor()
        for sql in CDC_SETUP:
            cur.execute(sql)
        cur.executemany(
            f"INSERT INTO cdc.dbo_customers_CT ({', '.join(f'[{n}]' for n in names)}) "
            f"VALUES ({', '.join('?' for _ in names)})",
            [tuple(r[n] for n in names) for r in table.to_pylist()],
        )
        assert cur.execute("SELECT count(*) FROM cdc.dbo_customers_CT").fetchone()[0] == 25
    finally:
        conn.close()
    return cs


def _converged(result: Any) -> None:
    (sub,) = result.subscriptions
    assert sub.verdict is applier.Verdict.CONVERGED, sub.check.to_json()
    assert (sub.summary.commands, sub.summary.transactions) == (18, 8)  # 25 rows, 7 update pairs joined


def test_change_table_on_babelfish_applies_to_postgres_at_4_streams(
    cdc_source: str, spark: Any, target: Any
) -> None:
    result = applier.run(
        cdc_config(),
        target,
        spark=spark,
        changes=None,
        changes_format="mssql-cdc",
        capture=Options(source=cdc_source, capture_instance="dbo_customers"),
    )
    _converged(result)
    assert subscriber_rows(target) == EXPECTED


def test_change_table_on_babelfish_applies_to_babelfish_at_4_streams(
    cdc_source: str, spark: Any, babelfish: Any
) -> None:
    sub = babelfish.subscriber("cdc_subscriber")
    assert sub.dialect_name == "babelfish"
    result = applier.run(
        cdc_config(),
        sub,
        spark=spark,
        changes=None,
        changes_format="mssql-cdc",
        capture=Options(source=cdc_source, capture_instance="dbo_customers"),
    )
    _converged(result)
    assert subscriber_rows(sub) == EXPECTED


def test_change_tables_on_babelfish_names_the_source_table(cdc_source: str, spark: Any, target: Any) -> None:
    """The article is the one cdc.change_tables names (OBJECT_SCHEMA_NAME / OBJECT_NAME of its
    source_object_id on Babelfish), not the capture instance's default naming."""
    with pytest.raises(InputError) as e:
        applier.run(
            cdc_config("clients"),
            target,
            spark=spark,
            changes=None,
            changes_format="mssql-cdc",
            capture=Options(source=cdc_source, capture_instance="dbo_customers"),
        )
    assert (
        "cdc.dbo_customers_CT: capture instance 'dbo_customers' captures dbo.customers, which is not an "
        "article (known: dbo.clients)"
    ) in str(e.value)


# -- 3. the pytest plugin with --applier-target babelfish ---------------------------------------

# examples/broken_update.sql in T-SQL: the SCALL update procedure of dbo.kc_rows (the new
# values, the old key, the bitmap of the changed columns) WITHOUT the zero-row check that the
# procedures applier generates have (IF @@ROWCOUNT = 0 ... sp_MSreplraiserror 20598).
BROKEN_TSQL = """\
-- The custom update procedure of dbo.kc_rows (SCALL syntax), for SQL Server and Babelfish.
-- BROKEN ON PURPOSE: no IF @@ROWCOUNT = 0 check, so an update that finds no row is lost.
CREATE PROCEDURE dbo.kc_upd
    @c1 int = NULL,
    @c2 nvarchar(40) = NULL,
    @c3 int = NULL,
    @pkc1 int = NULL,
    @bitmap binary(1)
AS
BEGIN
    UPDATE dbo.kc_rows SET
        id = CASE SUBSTRING(@bitmap, 1, 1) & 1 WHEN 1 THEN @c1 ELSE id END,
        v = CASE SUBSTRING(@bitmap, 1, 1) & 2 WHEN 2 THEN @c2 ELSE v END,
        n = CASE SUBSTRING(@bitmap, 1, 1) & 4 WHEN 4 THEN @c3 ELSE n END
    WHERE id = @pkc1
    -- missing: IF @@ROWCOUNT = 0 EXEC sp_MSreplraiserror @errorid = 20598
END
GO
"""
PROJECT_TESTS = """\
from applier.testing import assert_converged


def test_key_chains_converge_on_four_streams(applier_run):
    assert_converged(applier_run(streams=4, workload="key-chains", transactions=200))


def test_tsql_update_procedure_without_zero_row_check_loses_keys(applier_run):
    assert_converged(applier_run("broken_procedure.toml", custom_sql=["broken_update_tsql.sql"]))
"""


def _pytest_env(babelfish: Any, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "APPLIER_TARGET"))}
    env.setdefault("APPLIER_BABELFISH", str(babelfish.build))  # the session's build, if not given
    env.update(extra)
    return env


def test_plugin_with_babelfish_target_passes_key_chains_and_names_the_lost_keys(
    babelfish: Any, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(EXAMPLES / "broken_procedure.toml", project / "broken_procedure.toml")
    (project / "broken_update_tsql.sql").write_text(BROKEN_TSQL, encoding="utf-8")
    (project / "test_babelfish_subscriber.py").write_text(PROJECT_TESTS, encoding="utf-8")
    junit, basetemp = tmp_path / "junit.xml", tmp_path / "basetemp"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--applier-target",
            "babelfish",
            f"--junitxml={junit}",
            f"--basetemp={basetemp}",
        ],
        cwd=project,
        env=_pytest_env(babelfish),
        capture_output=True,
        text=True,
        timeout=1500,
    )
    out = res.stdout + res.stderr
    assert res.returncode == 1, out  # 1: tests ran and one failed
    assert "applier target: babelfish (--applier-target)" in res.stdout, out

    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    good = cases["test_key_chains_converge_on_four_streams"]
    broken = cases["test_tsql_update_procedure_without_zero_row_check_loses_keys"]
    assert len(cases) == 2, out
    assert (
        not list(good.iter("failure")) and not list(good.iter("error")) and not list(good.iter("skipped"))
    ), out
    (failure,) = broken.iter("failure")
    message, text = failure.get("message") or "", failure.text or ""
    assert message.startswith("AssertionError: applier run DIVERGED (exit code 1)"), message
    assert "target: embedded Babelfish on 127.0.0.1:" in text, text

    reports = {
        p.parent.parent.name: json.loads(p.read_text()) for p in basetemp.rglob("applier-run-1/report.json")
    }
    (report,) = [r for name, r in reports.items() if name.startswith("test_tsql_update_procedure")]
    assert report["verdict"] == "diverged" and report["divergence"]["missing"] > 0
    lost = [f"dbo.kc_rows ({d['key'][0]})" for d in report["divergent"] if d["kind"] == "missing"][:10]
    assert lost
    line = "missing keys: " + ", ".join(lost)
    for where in (message, text, res.stdout):
        assert line in where, where
    assert "inverted pair: lsn " in text and " ran on stream " in text
    (good_report,) = [r for name, r in reports.items() if name.startswith("test_key_chains")]
    assert good_report["verdict"] == "converged"


def test_plugin_babelfish_target_is_skipped_without_a_build_and_named_in_help(
    babelfish: Any, tmp_path: Path
) -> None:
    (tmp_path / "test_target.py").write_text("def test_target(applier_target):\n    pass\n", encoding="utf-8")
    missing = tmp_path / "no-such-build"
    env = _pytest_env(babelfish, APPLIER_BABELFISH=str(missing))
    run = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs"]
    res = subprocess.run(
        [*run, "--applier-target", "babelfish"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 skipped" in res.stdout, res.stdout
    assert (
        f"applier target 'babelfish' (--applier-target) needs a Babelfish build: $APPLIER_BABELFISH={missing}"
    ) in " ".join(res.stdout.split()), res.stdout
    helped = subprocess.run(
        [*run, "--help"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert "embedded (default), babelfish, mssql, postgres-container" in " ".join(helped.stdout.split())
