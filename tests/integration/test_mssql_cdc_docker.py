"""mssql-cdc from a real SQL Server change table: SQL Server 2022 in a container with CDC enabled
on dbo.customers, the documented cases run as DML, the log scanned with sys.sp_cdc_scan (no
SQL Server Agent needed), then ``cdc.dbo_customers_CT`` read through ODBC (the article found
through cdc.change_tables) and applied to the embedded PostgreSQL at N = 4.

Needs a Docker engine and a SQL Server ODBC driver; skips with the reason otherwise.
Run: pytest -m docker tests/integration/test_mssql_cdc_docker.py
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import applier
from applier.sources.formats import Options
from applier.targets.containers import SqlServerContainer, docker_available, sqlserver_odbc_driver
from tests.support.mssql_cdc import EXPECTED, cdc_config, subscriber_rows

pytestmark = [pytest.mark.docker, pytest.mark.integration]

SETUP = [
    "EXEC sys.sp_cdc_enable_db",
    "CREATE TABLE dbo.customers (id int NOT NULL PRIMARY KEY, name nvarchar(50) NOT NULL, "
    "email nvarchar(100) NULL, balance decimal(10,2) NULL, notes nvarchar(max) NULL, memo ntext NULL)",
    "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'customers', "
    "@role_name = NULL, @supports_net_changes = 0",
]
# The cases of tests/data/captures/mssql_cdc/README.md, as the DML that makes them.
DML = [
    "INSERT INTO dbo.customers VALUES "
    "(1, N'Alice', N'alice@example.com', 10.00, N'note 1', N'memo 1'), "
    "(2, N'Bob', N'bob@example.com', 20.50, N'note 2', N'memo 2'), "
    "(3, N'Smith, John', N'john@example.com', NULL, N'line one' + CHAR(10) + N'line two', NULL), "
    "(4, N'Dana', N'dana@example.com', 40.00, N'n4', N'memo 4'), "
    "(5, N'Eve', NULL, 50.00, N'n5', N'memo 5'), "
    "(6, N'Frank', N'frank@example.com', 60.00, NULL, NULL)",
    "UPDATE dbo.customers SET email = N'alice@example.org' WHERE id = 1",
    "DELETE FROM dbo.customers WHERE id IN (2, 3)",
    "BEGIN TRAN; UPDATE dbo.customers SET notes = N'n4, revised' WHERE id = 4; "
    "UPDATE dbo.customers SET balance = 55.25 WHERE id = 5; COMMIT",
    "UPDATE dbo.customers SET id = 60 WHERE id = 6",
    "UPDATE dbo.customers SET id = 10 WHERE id = 1",
    "BEGIN TRAN; UPDATE dbo.customers SET name = N'Dana B' WHERE id = 4; "
    "UPDATE dbo.customers SET name = N'Dana C' WHERE id = 4; COMMIT",
    "BEGIN TRAN; INSERT INTO dbo.customers (id, name) VALUES (7, N'Gus'); "
    "UPDATE dbo.customers SET email = N'gus@example.com' WHERE id = 7; COMMIT",
]


@pytest.fixture(scope="module")
def mssql() -> Iterator[SqlServerContainer]:
    ok, reason = docker_available()
    if not ok:
        pytest.skip(reason)
    if sqlserver_odbc_driver() is None:
        pytest.skip("no SQL Server ODBC driver installed (ODBC Driver 18/17 for SQL Server or FreeTDS)")
    with SqlServerContainer() as target:
        yield target


def test_sqlserver_change_table_through_odbc_applies_at_4_streams(mssql, request) -> None:  # type: ignore[no-untyped-def]
    import pyodbc

    # Spark and the embedded PostgreSQL only once the container is up (a skip costs nothing).
    spark, target = request.getfixturevalue("spark"), request.getfixturevalue("target")

    source = mssql.create_database("cdc_source")
    conn = pyodbc.connect(source, autocommit=True, timeout=30)
    try:
        cur = conn.cursor()
        for sql in SETUP + DML:
            cur.execute(sql)
        # The capture job's work, done here: scan the log into the change table.
        cur.execute("EXEC sys.sp_cdc_scan @maxtrans = 500, @maxscans = 10, @continuous = 0")
        assert cur.execute("SELECT count(*) FROM cdc.dbo_customers_CT").fetchone()[0] >= 20
    finally:
        conn.close()
    result = applier.run(
        cdc_config(),
        target,
        spark=spark,
        changes=None,
        changes_format="mssql-cdc",
        capture=Options(source=source, capture_instance="dbo_customers"),
    )
    (sub,) = result.subscriptions
    assert sub.verdict is applier.Verdict.CONVERGED, sub.check.to_json()
    assert subscriber_rows(target) == EXPECTED
