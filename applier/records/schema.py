"""The canonical change record (DESIGN.md): its fields, Spark and Arrow schemas, positions.

One row per command. Images are JSON text of {column: canonical value} (applier.values);
``key_before`` / ``key_after`` are the key as JSON arrays. Every reader yields this record
(``sources``), every later stage reads it. Events (schema changes, SQL statements, applied
procedures) travel in the same record: see :mod:`applier.records.events`.
"""

from __future__ import annotations

import pyarrow as pa

CHANGE_FIELDS = (
    "lsn",
    "xact_seqno",
    "command_id",
    "article",
    "op",
    "schema_version",
    "before",
    "after",
    "changed",
    "key_before",
    "key_after",
)
CHANGE_SCHEMA = (
    "lsn long, xact_seqno long, command_id int, article string, op string, schema_version int, "
    "before string, after string, changed array<string>, key_before string, key_after string"
)
ARROW_CHANGE = pa.schema(
    [
        ("lsn", pa.int64()),
        ("xact_seqno", pa.int64()),
        ("command_id", pa.int32()),
        ("article", pa.string()),
        ("op", pa.string()),
        ("schema_version", pa.int32()),
        ("before", pa.string()),
        ("after", pa.string()),
        ("changed", pa.list_(pa.string())),
        ("key_before", pa.string()),
        ("key_after", pa.string()),
    ]
)
SNAPSHOT_SCHEMA = "article string, key string, image string"
ROW_OPS = ("I", "U", "D")
EVENT_OPS = ("DDL", "SQL", "PROC")  # schema change, SQL statement, applied procedure (sources.events)
LSN_SHIFT = 20  # lsn = xact_seqno << 20 | command_id for generated streams
MAX_COMMAND_ID = (1 << LSN_SHIFT) - 1  # one more would take the next transaction's first lsn


def make_lsn(xact_seqno: int, command_id: int) -> int:
    return (xact_seqno << LSN_SHIFT) | command_id


# The fields of a command as a stream task receives it (partition.layout lays them out,
# apply reads them; the fallback gathers them across streams).
SHARE_FIELDS = (
    "lsn",
    "xact_seqno",
    "xact_index",
    "article",
    "op",
    "before",
    "after",
    "changed",
    "key_before",
    "key_after",
    "stream",
    "round",
)
