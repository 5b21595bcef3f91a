"""mssql-cdc: change-table rows (CSV, Parquet) -> capture items, 3 + 4 joined, update masks,
LOB NULLs, and errors naming file:line and column. No Spark: ``file_items`` is what each Spark
task runs, ``combine`` what runs per transaction."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from applier.articles import Article, Column, parse_type
from applier.errors import InputError
from applier.sources.formats import Change, Options, format_class
from applier.sources.formats.mssql_cdc import MssqlCdcFormat
from applier.sources.formats.mssql_cdc.rows import column_value, lsn_text, mask_of, mask_ordinals

DATA = Path(__file__).resolve().parents[1] / "data" / "captures" / "mssql_cdc"
CSV = DATA / "dbo_customers_CT.csv"
PARQUET = DATA / "dbo_customers_CT.parquet"


def customers(*extra: Column, without: str | None = None) -> Article:
    cols = [
        Column("id", parse_type("int"), nullable=False),
        Column("name", parse_type("nvarchar(50)"), nullable=False),
        Column("email", parse_type("nvarchar(100)")),
        Column("balance", parse_type("decimal(10,2)")),
        Column("notes", parse_type("nvarchar(max)")),
        Column("memo", parse_type("ntext")),
        *extra,
    ]
    return Article("dbo", "customers", tuple(c for c in cols if c.name != without), ("id",))


def fmt(article: Article | None = None, **options: Any) -> MssqlCdcFormat:
    a = article or customers()
    return MssqlCdcFormat({a.name: a}, Options(**options))


def items(f: MssqlCdcFormat, path: Path) -> list[tuple[str | None, Change | None]]:
    return list(f.file_items(path))


def transactions(f: MssqlCdcFormat, path: Path) -> dict[str, list[Change]]:
    """What convert does per transaction, locally: group by tx, sort by pos, combine."""
    found = items(f, path)
    errors = [e for e, _ in found if e]
    assert not errors, errors
    by_tx: dict[str, list[Change]] = defaultdict(list)
    for _, c in found:
        assert c is not None and c.tx is not None
        by_tx[c.tx[0]].append(c)
    return {tx: f.combine(sorted(cs, key=lambda c: c.pos)) for tx, cs in sorted(by_tx.items())}


def tx(lsn: str) -> str:
    return lsn.removeprefix("0x").lower()


def test_the_format_is_registered() -> None:
    assert format_class("mssql-cdc") is MssqlCdcFormat


# -- the documented cases, one by one (tests/data/captures/mssql_cdc/README.md) ------------------
def test_doc_insert_one_row_each_and_every_mask_bit_set() -> None:
    """ "one row for each insert"; "For insert and delete operations, all the bits in the update
    mask are set"."""
    (first, *_) = transactions(fmt(), CSV).values()
    assert [c.op for c in first] == ["I"] * 6
    assert [c.after["id"] for c in first if c.after] == [1, 2, 3, 4, 5, 6]
    three = first[2].after
    assert three is not None and three["name"] == "Smith, John"
    assert three["notes"] == 'line one\nline two, with a comma and "quotes"'
    assert three["balance"] is None and three["memo"] is None
    assert first[0].after == {
        "id": 1,
        "name": "Alice",
        "email": "alice@example.com",
        "balance": "10.00",
        "notes": "note 1",
        "memo": "memo 1",
    }


def test_doc_update_two_rows_old_and_new_values_joined_with_the_mask_as_changed() -> None:
    """ "two rows for each update operation": 3 = old values, 4 = new values; the update mask
    of both rows reflects the changed columns."""
    (u,) = transactions(fmt(), CSV)[tx("0x0000002A000002100004")]
    assert u.op == "U" and u.changed == ("email",)
    assert u.before is not None and u.after is not None
    assert u.before["email"] == "alice@example.com" and u.after["email"] == "alice@example.org"
    # nvarchar(max) and ntext are NULL in operation 3 when unchanged: left out, not NULL
    assert "notes" not in u.before and "memo" not in u.before
    assert u.after["notes"] == "note 1" and u.after["memo"] == "memo 1"
    assert "__$operation=3" in u.source and "__$operation=4" in u.source


def test_doc_delete_of_two_rows_shares_one_start_lsn_and_ntext_is_left_out() -> None:
    """ "if a delete operation on the source table removes two rows, the change table will
    contain two rows, each with the same __$start_lsn value"; ntext is NULL in operation 1,
    nvarchar(max) keeps its value."""
    deletes = transactions(fmt(), CSV)[tx("0x0000002A000002300003")]
    assert [(c.op, c.before["id"] if c.before else None) for c in deletes] == [("D", 2), ("D", 3)]
    assert all(c.before is not None and "memo" not in c.before for c in deletes)
    assert deletes[0].before is not None and deletes[0].before["notes"] == "note 2"


def test_doc_max_column_null_in_operation_3_unless_it_changed() -> None:
    """nvarchar(max) "assigned a NULL value when __$operation = 3 unless the column changed"."""
    four, five = transactions(fmt(), CSV)[tx("0x0000002A000002500005")]
    assert four.changed == ("notes",) and four.before is not None and four.before["notes"] == "n4"
    assert four.after is not None and four.after["notes"] == "n4, revised"
    assert five.changed == ("balance",) and five.before is not None and "notes" not in five.before
    assert five.after is not None and five.after["balance"] == "55.25" and five.after["notes"] == "n5"


def test_doc_key_update_as_delete_and_insert_at_one_seqval() -> None:
    """Debezium sqlserver.adoc: a key update is a delete and a create sharing the commit and
    change LSN; the delete comes first (and folds into one update on request)."""
    d, i = transactions(fmt(), CSV)[tx("0x0000002A000002700003")]
    assert (d.op, d.before and d.before["id"], i.op, i.after and i.after["id"]) == ("D", 6, "I", 60)
    (u,) = transactions(fmt(fold_key_changes=True), CSV)[tx("0x0000002A000002700003")]
    assert u.op == "U" and u.before is not None and u.after is not None
    assert (u.before["id"], u.after["id"]) == (6, 60)


def test_doc_key_update_as_operations_3_and_4() -> None:
    (u,) = transactions(fmt(), CSV)[tx("0x0000002A000002900004")]
    assert u.op == "U" and u.changed == ("id",)
    assert u.before is not None and u.after is not None and (u.before["id"], u.after["id"]) == (1, 10)


def test_doc_seqval_and_command_id_order_a_transaction_whatever_the_file_order() -> None:
    """__$seqval orders the changes of a transaction; __$start_lsn gives commit order (this
    transaction is written in the file before one that committed earlier)."""
    txs = transactions(fmt(), CSV)
    first, second = txs[tx("0x0000002A000002B00006")]
    assert first.before is not None and first.after is not None
    assert second.before is not None and second.after is not None
    assert (first.before["name"], first.after["name"]) == ("Dana", "Dana B")
    assert (second.before["name"], second.after["name"]) == ("Dana B", "Dana C")
    order = list(txs)
    assert order.index(tx("0x0000002A000002900004")) < order.index(tx("0x0000002A000002B00006"))


def test_doc_insert_then_update_in_one_transaction() -> None:
    i, u = transactions(fmt(), CSV)[tx("0x0000002A000002D00003")]
    assert (i.op, u.op, u.changed) == ("I", "U", ("email",))
    assert u.after is not None and u.after["email"] == "gus@example.com"


def test_parquet_export_reads_as_the_csv_does() -> None:
    def strip(c: Change) -> tuple[Any, ...]:
        return (c.op, c.tx, c.pos, c.before, c.after, c.changed, c.source)

    from_csv = [strip(c) for _, c in items(fmt(), CSV) if c]
    from_parquet = items(fmt(), PARQUET)
    assert [strip(c) for _, c in from_parquet if c] == from_csv and len(from_csv) == 25
    assert from_parquet[3][1] is not None and from_parquet[3][1].place == f"{PARQUET}: row 4"


# -- the update mask, LSNs, values --------------------------------------------------------------------
def test_update_mask_bit_order() -> None:
    # one big-endian number: bit i = ordinal i + 1; the last byte holds ordinals 1..8
    assert mask_ordinals(bytes.fromhex("01")) == {1}
    assert mask_ordinals(bytes.fromhex("3F")) == {1, 2, 3, 4, 5, 6}
    assert mask_ordinals(bytes.fromhex("0102")) == {2, 9}
    assert mask_ordinals(bytes.fromhex("03FF")) == set(range(1, 11))
    assert mask_of([2, 9], 10) == bytes.fromhex("0102")
    assert mask_ordinals(b"") == set()


def test_update_mask_of_ten_columns_names_the_ninth(tmp_path: Path) -> None:
    extra = [Column(f"c{i}", parse_type("int")) for i in range(7, 11)]
    a = customers(*extra)
    header = (
        "__$start_lsn,__$seqval,__$operation,__$update_mask,id,name,email,balance,notes,memo,c7,c8,c9,c10"
    )
    lsn, seq = "0x0000002A000001F40003", "0x0000002A000001F00002"
    rows = [
        f"{lsn},{seq},3,0x0100,1,a,,,,,7,8,9,10",
        f"{lsn},{seq},4,0x0100,1,a,,,,,7,8,90,10",
    ]
    p = tmp_path / "dbo_customers_CT.csv"
    p.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    (u,) = transactions(fmt(a), p)[tx(lsn)]
    assert u.changed == ("c9",)


def test_lsns_in_the_forms_exports_write() -> None:
    want = "0000002a000001f40003"
    assert lsn_text("0x0000002A000001F40003", "__$start_lsn", "f:2") == want
    assert lsn_text("0000002A000001F40003", "__$start_lsn", "f:2") == want
    assert lsn_text(bytes.fromhex(want), "__$start_lsn", "f:2") == want
    for bad in ("0x12", "0x0000002A000001F4000Z", bytes(9), None, 42):
        with pytest.raises(InputError, match=r"f:2: column '__\$start_lsn': bad LSN"):
            lsn_text(bad, "__$start_lsn", "f:2")


def test_text_values_of_sql_server_types() -> None:
    def col(t: str) -> Column:
        return Column("c", parse_type(t))

    assert (
        column_value(col("datetime2(7)"), "2024-01-02 10:00:00.1234567", True) == "2024-01-02T10:00:00.123456"
    )
    assert column_value(col("datetimeoffset(7)"), "2024-01-02 10:00:00.1234567 +01:00", True) == (
        "2024-01-02T09:00:00.123456+00:00"
    )
    assert column_value(col("date"), "2024-01-02", True) == "2024-01-02"
    assert column_value(col("time(7)"), "10:00:00.1234567", True) == "10:00:00.123456"
    assert column_value(col("bit"), "1", True) is True and column_value(col("bit"), "false", True) is False
    assert column_value(col("varbinary(10)"), "0x0102FF", True) == "AQL/"
    assert column_value(col("uniqueidentifier"), "6F9619FF-8B86-D011-B42D-00C04FC964FF", True) == (
        "6f9619ff-8b86-d011-b42d-00c04fc964ff"
    )
    assert column_value(col("float"), "1.5", True) == 1.5
    assert column_value(col("nvarchar(10)"), "NULL", True) is None
    assert column_value(col("nvarchar(10)"), "", True) is None
    # values a driver or pyarrow gives are encoded as they are
    assert column_value(col("datetime2"), dt.datetime(2024, 1, 2, 10), False) == "2024-01-02T10:00:00.000000"
    assert column_value(col("int"), "12", False) == 12


def test_a_computed_column_in_the_capture_is_ignored(tmp_path: Path) -> None:
    a = customers(Column("total", parse_type("decimal(12,2)"), computed=True))
    header = "__$start_lsn,__$seqval,__$operation,__$update_mask,id,name,email,balance,notes,memo,total"
    p = tmp_path / "dbo_customers_CT.csv"
    p.write_text(
        f"{header}\n0x0000002A000001F40003,0x0000002A000001F00002,2,0x7F,1,a,,,,,NULL\n", encoding="utf-8"
    )
    ((err, c),) = items(fmt(a), p)
    assert err is None and c is not None and c.after is not None and "total" not in c.after


def test_capture_instance_from_options_file_or_folder(tmp_path: Path) -> None:
    other = Article("sales", "order_lines", (Column("id", parse_type("int"), nullable=False),), ("id",))
    a = customers()
    f = MssqlCdcFormat({a.name: a, other.name: other})
    assert f.file_article(tmp_path / "cdc.dbo_customers_CT.csv")[0] is a
    assert f.file_article(tmp_path / "sales_order_lines_CT" / "part-00000.parquet")[0] is other
    chosen = MssqlCdcFormat({a.name: a, other.name: other}, Options(capture_instance="sales_order_lines"))
    assert chosen.file_article(tmp_path / "dbo_customers_CT.csv")[0] is other
    with pytest.raises(InputError, match=r"capture instance 'dbo_orders' .*names no article.*dbo\.customers"):
        f.file_article(tmp_path / "x" / "dbo_orders_CT.csv")


# -- errors: file:line and column, the record refused -----------------------------------------------------
def _edited(tmp_path: Path, line: int, old: str, new: str) -> Path:
    lines = CSV.read_text(encoding="utf-8").split("\n")
    assert old in lines[line - 1], lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    p = tmp_path / "dbo_customers_CT.csv"
    p.write_text("\n".join(lines), encoding="utf-8")
    return p


def _errors(p: Path, f: MssqlCdcFormat | None = None) -> list[str]:
    return [e for e, _ in items(f or fmt(), p) if e]


def test_error_bad_lsn_names_file_line_and_column(tmp_path: Path) -> None:
    p = _edited(tmp_path, 7, "0x0000002A000001F40003", "0x2A01F40003")
    assert _errors(p) == [
        f"{p}:7: column '__$start_lsn': bad LSN '0x2A01F40003' (expected binary(10): 20 hex digits, 0x optional)"
    ]


def test_error_unknown_operation(tmp_path: Path) -> None:
    p = _edited(tmp_path, 2, ",2,0x3F,", ",5,0x3F,")
    (e,) = _errors(p)
    assert e.startswith(f"{p}:2: column '__$operation': unknown operation '5'")


def test_error_bad_update_mask(tmp_path: Path) -> None:
    p = _edited(tmp_path, 2, ",0x3F,", ",0xZZ,")
    (e,) = _errors(p)
    assert e.startswith(f"{p}:2: column '__$update_mask': expected hex digits")


def test_error_unpaired_operation_3_names_its_place(tmp_path: Path) -> None:
    lines = CSV.read_text(encoding="utf-8").split("\n")
    del lines[9]  # line 10: the operation 4 of id 1's email update
    p = tmp_path / "dbo_customers_CT.csv"
    p.write_text("\n".join(lines), encoding="utf-8")
    f = fmt()
    changes = sorted(
        (c for _, c in items(f, p) if c and c.tx == (tx("0x0000002A000002100004"),)), key=lambda c: c.pos
    )
    with pytest.raises(
        InputError, match=rf"^{p}:9: .*__\$operation=3 .*: an update's before image \(operation 3\)"
    ):
        f.combine(changes)


def test_error_unpaired_operation_4(tmp_path: Path) -> None:
    lines = CSV.read_text(encoding="utf-8").split("\n")
    del lines[8]  # line 9: the operation 3
    p = tmp_path / "dbo_customers_CT.csv"
    p.write_text("\n".join(lines), encoding="utf-8")
    f = fmt()
    changes = [c for _, c in items(f, p) if c and c.tx == (tx("0x0000002A000002100004"),)]
    with pytest.raises(InputError, match=rf"^{p}:9: .*after image \(operation 4\) without its before image"):
        f.combine(changes)


def test_error_3_and_4_of_different_seqvals_are_not_a_pair(tmp_path: Path) -> None:
    p = _edited(tmp_path, 10, "0x0000002A000002080002", "0x0000002A000002080009")
    f = fmt()
    changes = sorted(
        (c for _, c in items(f, p) if c and c.tx == (tx("0x0000002A000002100004"),)), key=lambda c: c.pos
    )
    with pytest.raises(InputError, match=rf"^{p}:9: "):
        f.combine(changes)


def test_error_unknown_column_names_the_header_line(tmp_path: Path) -> None:
    p = _edited(tmp_path, 1, ",memo,", ",phone,")
    (e,) = _errors(p)
    assert e.startswith(
        f"{p}:1: column 'phone' of cdc.dbo_customers_CT is not a column of article dbo.customers"
    )


def test_error_article_column_not_captured(tmp_path: Path) -> None:
    (e,) = _errors(CSV, fmt(customers(Column("phone", parse_type("varchar(20)")))))
    assert e == (
        f"{CSV}:1: column 'phone' of article dbo.customers is not captured by cdc.dbo_customers_CT "
        "(its value is not known: give the article only the captured columns)"
    )


def test_error_value_not_fitting_names_line_and_column(tmp_path: Path) -> None:
    p = _edited(tmp_path, 3, ",20.50,", ",12345678901.5,")
    (e,) = _errors(p)
    assert e.startswith(f"{p}:3: column 'balance' (decimal(10,2)): does not fit precision 10")
    p = _edited(tmp_path, 2, ",Alice,", "," + "x" * 51 + ",")
    (e,) = _errors(p)
    assert e.startswith(f"{p}:2: column 'name' (nvarchar(50)): longer than 50 characters")
    p = _edited(tmp_path, 2, ",1,Alice,", ",one,Alice,")
    (e,) = _errors(p)
    assert e.startswith(f"{p}:2: column 'id' (int): expected an integer")


def test_error_quoted_field_spanning_lines_counts_lines(tmp_path: Path) -> None:
    # the record on line 4 spans two lines: the next record is on line 6
    p = _edited(tmp_path, 6, ",40.00,", ",forty,")
    (e,) = _errors(p)
    assert e.startswith(f"{p}:6: column 'balance'")


def test_error_field_count_and_broken_quoting(tmp_path: Path) -> None:
    p = _edited(tmp_path, 2, ",memo 1,1", ",memo 1")
    assert _errors(p) == [f"{p}:2: 11 fields, the header names 12"]
    p = tmp_path / "dbo_customers_CT.csv"
    p.write_text(
        CSV.read_text(encoding="utf-8").split("\n", 1)[0] + '\n0x00,"unterminated\n', encoding="utf-8"
    )
    (e,) = _errors(p)
    assert e.startswith(f"{p}:2: ")


def test_error_parquet_row_names_its_row(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pq.read_table(PARQUET)
    ops = t.column("__$operation").to_pylist()
    ops[4] = 9
    t = t.set_column(t.schema.get_field_index("__$operation"), "__$operation", pa.array(ops, pa.int32()))
    p = tmp_path / "dbo_customers_CT.parquet"
    pq.write_table(t, p)
    (e,) = _errors(p)
    assert e.startswith(f"{p}: row 5: column '__$operation': unknown operation 9")


def test_odbc_select_of_one_slice_quotes_identifiers_per_dialect() -> None:
    from applier.dialects import dialect
    from applier.sources.formats.mssql_cdc.odbc import select_sql
    from applier.sources.formats.mssql_cdc.rows import layout

    names = [
        "__$start_lsn",
        "__$seqval",
        "__$operation",
        "__$update_mask",
        *[c.name for c in customers().columns],
    ]
    lay = layout(names, customers(), "cdc.dbo_customers_CT", "t")
    sql, n = select_sql(dialect("tsql"), "dbo_cust]omers", names, lay, 4)
    assert n == 4 and sql.startswith("SELECT [__$start_lsn], [__$seqval], ")
    assert sql.endswith(
        " FROM [cdc].[dbo_cust]]omers_CT] WHERE CAST(SUBSTRING([__$seqval], 10, 1) AS int) % 4 = ?"
    )
    sql, n = select_sql(dialect("postgres"), "dbo_customers", names, lay, 3)
    assert n == 3 and sql.endswith(' FROM "cdc"."dbo_customers_CT" WHERE get_byte("__$seqval", 9) % 3 = ?')
    sql, n = select_sql(dialect("postgres"), "dbo_customers", names, lay, 1)
    assert n == 1 and "WHERE" not in sql
