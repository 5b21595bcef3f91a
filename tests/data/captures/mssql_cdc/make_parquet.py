"""Writes dbo_customers_CT.parquet from dbo_customers_CT.csv: the same change-table rows with the
column types a change table has (binary(10) LSNs, varbinary(128) mask, int operation and command
id, the captured columns' own types). Run from the repository root:

    .venv/bin/python tests/data/captures/mssql_cdc/make_parquet.py
"""

from __future__ import annotations

import csv
import decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
TYPES = {
    "__$start_lsn": pa.binary(10),
    "__$end_lsn": pa.binary(10),
    "__$seqval": pa.binary(10),
    "__$operation": pa.int32(),
    "__$update_mask": pa.binary(),
    "id": pa.int32(),
    "name": pa.string(),
    "email": pa.string(),
    "balance": pa.decimal128(10, 2),
    "notes": pa.string(),
    "memo": pa.string(),
    "__$command_id": pa.int32(),
}


def value(name: str, text: str) -> object:
    if text in ("", "NULL"):
        return None
    t = TYPES[name]
    if pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
        return bytes.fromhex(text.removeprefix("0x"))
    if pa.types.is_integer(t):
        return int(text)
    if pa.types.is_decimal(t):
        return decimal.Decimal(text)
    return text


def main() -> None:
    with (HERE / "dbo_customers_CT.csv").open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = list(reader)
    columns = {n: [value(n, r[i]) for r in rows] for i, n in enumerate(header)}
    schema = pa.schema([(n, TYPES[n]) for n in header])
    table = pa.table({n: pa.array(columns[n], type=TYPES[n]) for n in header}, schema=schema)
    pq.write_table(table, HERE / "dbo_customers_CT.parquet")


if __name__ == "__main__":
    main()
