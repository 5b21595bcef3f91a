"""The canonical change record (DESIGN.md): its fields, Spark and Arrow schemas, positions.

One row per command. Images are JSON text of {column: canonical value} (applier.values);
``key_before`` / ``key_after`` are the key as JSON arrays. Every reader yields this record
(``sources``), every later stage reads it. Events (schema changes, SQL statements, applied
procedures) travel in the same record: see :mod:`applier.records.events`.
"""

from __future__ import annotations

from typing import Any, Generic, NamedTuple, TypeVar

import pyarrow as pa


class ChangeRow(NamedTuple):
    """One validated command (or event) of the stream, as every reader yields it and Spark
    takes it (a NamedTuple: named fields, a plain tuple to ``createDataFrame``)."""

    lsn: int
    xact_seqno: int
    command_id: int
    article: str
    op: str  # ROW_OPS or EVENT_OPS
    schema_version: int
    before: str | None  # image JSON text (U, D)
    after: str | None  # image JSON text (I, U), or an event's canonical payload
    changed: list[str]
    key_before: str | None  # the key as a JSON array
    key_after: str | None


class SnapshotRow(NamedTuple):
    """One validated row of the initial snapshot."""

    article: str
    key: str  # the key as a JSON array
    image: str  # the row's image JSON text


R = TypeVar("R")


class Validated(NamedTuple, Generic[R]):
    """A record read: its validated ``row`` with its ``place`` (file:line, or the Parquet
    file), or refused (``error``: the one-line message naming the place; ``row`` None)."""

    error: str | None
    place: str = ""
    row: R | None = None
    # an event's payload decoded by the validation (applier.records.events.StreamEvent): the
    # driver takes it as it is, never decoding the row's JSON text again
    event: Any = None

    @staticmethod
    def refused(error: str) -> Validated[Any]:
        return Validated(error)

    @property
    def good(self) -> R:
        """The row of a record not refused."""
        assert self.row is not None, self.error
        return self.row


CHANGE_FIELDS: tuple[str, ...] = ChangeRow._fields
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
