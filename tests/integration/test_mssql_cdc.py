"""mssql-cdc end to end on the embedded PostgreSQL at N = 4 streams: the change-table exports of
tests/data/captures/mssql_cdc (CSV and Parquet) and the same change table read through ODBC
from a PostgreSQL ``"cdc"."dbo_customers_CT"`` (bytea LSNs) converge, and the subscriber holds
the rows the MicrosoftDocs change-table page's rules lead to (one check per documented case,
all from one run of the CSV). A bad row: nothing applied, the error names file:line and column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import applier
from applier.errors import InputError
from applier.sources.formats import Options
from tests.support.mssql_cdc import CSV, EXPECTED, PARQUET, cdc_config, subscriber_rows
from tests.support.subscriber import rows, table_exists

pytestmark = pytest.mark.integration

# documented case -> {id: its expected row, or None: no such row}
EXAMPLES: dict[str, dict[int, tuple[Any, ...] | None]] = {
    "insert: one row per insert, every update-mask bit set": {1: None, 7: EXPECTED[7], 60: EXPECTED[60]},
    "update: old values (3) and new values (4) joined, the mask's columns changed": {10: EXPECTED[10]},
    "delete of two rows: two rows with one __$start_lsn (ntext NULL in operation 1)": {2: None, 3: None},
    "nvarchar(max) NULL in operation 3 unless changed": {4: EXPECTED[4], 5: EXPECTED[5]},
    "key update as delete + insert at one commit and change LSN (Debezium sqlserver.adoc)": {
        6: None,
        60: EXPECTED[60],
    },
    "key update as operations 3 and 4": {1: None, 10: EXPECTED[10]},
    "__$seqval and __$command_id order a transaction, __$start_lsn commit order": {4: EXPECTED[4]},
    "insert then update in one transaction": {7: EXPECTED[7]},
}


def converged(result) -> None:  # type: ignore[no-untyped-def]
    (sub,) = result.subscriptions
    assert sub.verdict is applier.Verdict.CONVERGED, sub.check.to_json()


@pytest.fixture(scope="module")
def csv_run(spark, target):  # type: ignore[no-untyped-def]
    result = applier.run(
        cdc_config(), target, spark=spark, changes=CSV, changes_format="mssql-cdc", capture=Options()
    )
    return result, subscriber_rows(target)


@pytest.mark.parametrize("example", list(EXAMPLES))
def test_documented_change_table_example_converges_from_csv(csv_run, example: str) -> None:  # type: ignore[no-untyped-def]
    result, got = csv_run
    converged(result)
    for key, want in EXAMPLES[example].items():
        assert got.get(key) == want, f"{example}: row id={key} is {got.get(key)}, expected {want}"


def test_csv_capture_applies_at_4_streams_as_documented(csv_run) -> None:  # type: ignore[no-untyped-def]
    result, got = csv_run
    converged(result)
    assert got == EXPECTED
    (sub,) = result.subscriptions
    assert (sub.summary.commands, sub.summary.transactions) == (18, 8)  # 25 rows, 7 update pairs joined


@pytest.mark.e2e  # the CSV run covers the documented cases; make test-e2e reads the Parquet export too
def test_parquet_capture_applies_at_4_streams(spark, target) -> None:  # type: ignore[no-untyped-def]
    result = applier.run(cdc_config(), target, spark=spark, changes=PARQUET, changes_format="mssql-cdc")
    converged(result)
    assert subscriber_rows(target) == EXPECTED


def test_odbc_change_table_on_postgres_applies_at_4_streams(spark, pg, target) -> None:  # type: ignore[no-untyped-def]
    """The change table read through ODBC: a PostgreSQL "cdc"."dbo_customers_CT" with a change
    table's columns (bytea for binary), loaded with the Parquet export's rows."""
    import pyarrow.parquet as pq
    import pyodbc

    source = pg.create_database("cdc_source")
    table = pq.read_table(PARQUET)
    names = table.column_names
    types = {
        "__$start_lsn": "bytea NOT NULL",
        "__$end_lsn": "bytea",
        "__$seqval": "bytea NOT NULL",
        "__$operation": "int NOT NULL",
        "__$update_mask": "bytea",
        "id": "int",
        "name": "varchar(50)",
        "email": "varchar(100)",
        "balance": "numeric(10,2)",
        "notes": "text",
        "memo": "text",
        "__$command_id": "int",
    }
    conn = pyodbc.connect(source, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute("CREATE SCHEMA cdc")
        cols = ", ".join(f'"{n}" {types[n]}' for n in names)
        cur.execute(f'CREATE TABLE "cdc"."dbo_customers_CT" ({cols})')
        marks = ", ".join("?" for _ in names)
        quoted = ", ".join(f'"{n}"' for n in names)
        cur.executemany(
            f'INSERT INTO "cdc"."dbo_customers_CT" ({quoted}) VALUES ({marks})',
            [tuple(r[n] for n in names) for r in table.to_pylist()],
        )
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
    converged(result)
    assert subscriber_rows(target) == EXPECTED


def test_a_bad_row_applies_nothing_and_names_file_line_and_column(spark, target, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    lines = CSV.read_text(encoding="utf-8").split("\n")
    lines[2] = lines[2].replace(",20.50,", ",twenty,")
    lines[9] = lines[9].replace(",4,", ",7,", 1)  # an unknown operation
    bad = tmp_path / "dbo_badcust_CT.csv"
    bad.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(InputError) as e:
        applier.run(cdc_config("badcust"), target, spark=spark, changes=bad, changes_format="mssql-cdc")
    text = str(e.value)  # the first bad row and how many more; every one in its details
    assert "nothing applied" in text and "and 1 more bad record" in text
    assert f"{bad}:3: column 'balance' (decimal(10,2))" in text
    assert f"{bad}:10: column '__$operation': unknown operation '7'" in e.value.details[1]
    assert not table_exists(target, "dbo", "badcust") or not rows(target, 'SELECT 1 FROM "dbo"."badcust"')
