"""The publisher side of a capture: checks, wal2json options, a slot and its snapshot, and
consuming changes exactly once.

**Options** (:func:`wal2json_options`): the ones applier's readers use
(applier/sources/formats/wal2json.py): ``include-lsn`` (version 1's ``nextlsn``: commit order,
duplicate deliveries; version 2's ``C`` line carries it too), ``include-xids`` (kept as each
command's source), the default ``include-types`` / ``include-typmod``, ``actions`` limited to
insert, update and delete (the readers refuse a truncate), ``add-tables`` for ``--tables``, and
``numeric-data-types-as-string`` where the plugin takes it (wal2json 2.6 and later; tried once,
:func:`takes_numbers_as_strings`): numbers as JSON strings, so a NaN or ±Infinity arrives as its
text, which the readers refuse, rather than as null, which nothing tells from a NULL.

**Reading** goes through SQL functions, over ODBC: ``pg_logical_slot_peek_changes`` then
``pg_replication_slot_advance`` (https://www.postgresql.org/docs/15/functions-admin.html
#FUNCTIONS-REPLICATION). A peek returns whole transactions (PostgreSQL decodes one at its
commit), and the ``lsn`` of a batch's last row is the end of its last commit record (version
1: the transaction's row, whose ``nextlsn`` it is; version 2: the ``C`` row). The caller writes
and fsyncs the batch, then :func:`advance` moves the slot's ``confirmed_flush_lsn`` there:
decoding skips a transaction whose commit record starts before that point
(``SnapBuildXactNeedsSkip``), so that transaction is never delivered again and every later one
is. A kill between the write and the advance leaves the slot behind the file; the command
reads the file's last end LSN and advances the slot to it before it reads on (its docstring).

**A slot with its snapshot** (:func:`exported_slot`): the slot is created with the replication
command ``CREATE_REPLICATION_SLOT ... LOGICAL wal2json (SNAPSHOT 'export')`` on a connection
opened with ``replication=database`` (psqlODBC passes it to libpq through ``pqopt``; a logical
walsender connection takes simple-protocol SQL and replication commands, and psqlODBC's
``UseServerSidePrepare=0`` sends nothing else). The command returns the slot's consistent
point and the name of a snapshot exported *at* that point: a transaction that another session
adopts with ``SET TRANSACTION SNAPSHOT`` (REPEATABLE READ, before its first query) sees exactly
the transactions that committed before the consistent point, and the slot decodes exactly those
that commit after it (https://www.postgresql.org/docs/15/protocol-replication.html,
https://www.postgresql.org/docs/15/sql-set-transaction.html). The SQL function
``pg_create_logical_replication_slot`` exports no snapshot: a REPEATABLE READ transaction that
calls it took its snapshot when that statement started, before the slot was consistent (a
transaction committing in between would be in neither), and one taken after it may already hold
changes the slot will decode (in both). The exported snapshot lives until the replication
connection runs another command or closes, so the snapshot is read while it stays open.

Session settings of the decoding session, which wal2json's output functions follow:
``DateStyle = ISO`` (the readers read every style, but ISO alone has numeric offsets and no
month/day ambiguity) and ``bytea_output = hex`` (the readers read bytea as hex).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from applier.errors import ConfigError, TargetError
from applier.targets.connstr import redact
from applier.targets.endpoint import Endpoint

PLUGIN = "wal2json"
FORMAT_VERSIONS = {"wal2json": 1, "wal2json2": 2}  # --format -> wal2json's format-version
# PostgreSQL's own rule for slot names (ReplicationSlotValidateName): it is then also safe
# as the identifier of a replication command, quoted.
SLOT_NAME = re.compile(r"[a-z0-9_]{1,63}")
_LSN = re.compile(r"([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})")
_SNAPSHOT_NAME = re.compile(r"[0-9A-F]{8}-[0-9A-F]{8}-[0-9]+")  # what pg_export_snapshot() names

SESSION_SETUP = ("SET DateStyle = ISO", "SET bytea_output = hex")
WAL_LEVEL_SQL = "SELECT current_setting('wal_level')"
SLOT_SQL = (
    "SELECT plugin, slot_type, database, confirmed_flush_lsn::text FROM pg_replication_slots "
    "WHERE slot_name = ?"
)
PEEK_SQL = "SELECT lsn::text, data FROM pg_logical_slot_peek_changes(?, CAST(? AS pg_lsn), ?, {marks})"
ADVANCE_SQL = "SELECT end_lsn::text FROM pg_replication_slot_advance(?, CAST(? AS pg_lsn))"
# what a peek can decode: the WAL written and flushed (an asynchronous commit may not be yet)
CURRENT_LSN_SQL = "SELECT pg_current_wal_flush_lsn()::text"
# wal2json 2.6's option: numbers (smallint .. double precision, numeric) written as JSON
# strings, so NaN and ±Infinity are written as "NaN", "Infinity", "-Infinity"; without it (and in
# 2.5, which refuses the option) they are written as null (wal2json.c, pg_decode_write_value:
# "The NaN and Infinity are not valid JSON symbols").
NUMBERS_AS_STRINGS = "numeric-data-types-as-string"
# A peek that reads one WAL record at most (upto_lsn 0/1 is behind every record) and returns one
# row at most: enough for the plugin to check its options, which it does when decoding starts.
PROBE_SQL = "SELECT lsn::text FROM pg_logical_slot_peek_changes(?, '0/1', 1, {marks})"
# The published tables' columns whose NaN / ±Infinity wal2json writes as null without
# NUMBERS_AS_STRINGS: of type numeric, real or double precision itself (a domain over one has
# its own type id, which wal2json writes as a quoted text: "NaN", read and refused as such).
NAN_AS_NULL_COLUMNS_SQL = (
    "SELECT n.nspname, c.relname, a.attname, format_type(a.atttypid, a.atttypmod) "
    "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
    "JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped "
    "AND a.atttypid IN ('numeric'::regtype, 'real'::regtype, 'double precision'::regtype) "
    "AND n.nspname !~ '^pg_' AND n.nspname <> 'information_schema' "
    "ORDER BY n.nspname, c.relname, a.attnum"
)
# A replication command takes no parameters: the slot name is checked against SLOT_NAME
# first and quoted; the plugin is ours.
CREATE_SLOT_COMMAND = "CREATE_REPLICATION_SLOT {slot} LOGICAL {plugin} (SNAPSHOT 'export')"
DROP_SLOT_COMMAND = "DROP_REPLICATION_SLOT {slot}"


def wal2json_options(
    version: int, tables: Sequence[str] | None = None, numbers_as_strings: bool = False
) -> tuple[str, ...]:
    """wal2json's options, name and value in turn, for format ``version`` (1 or 2), limited to
    ``tables`` (``schema.table``) when given; ``numbers_as_strings``: with
    ``numeric-data-types-as-string`` (wal2json 2.6 and later, :func:`takes_numbers_as_strings`)."""
    opts = ["format-version", str(version), "include-lsn", "1", "include-xids", "1"]
    opts += ["actions", "insert,update,delete"]
    if tables:
        opts += ["add-tables", ",".join(_wal2json_table(t) for t in tables)]
    if numbers_as_strings:
        opts += [NUMBERS_AS_STRINGS, "1"]
    return tuple(opts)


def _wal2json_table(name: str) -> str:
    """``schema.table`` as wal2json's add-tables reads it: each part with its special characters
    (space, quote, comma, period, asterisk, backslash) escaped by a backslash."""
    schema, _, table = name.partition(".")

    def esc(part: str) -> str:
        return re.sub(r"([ ',.*\\])", r"\\\1", part)

    return f"{esc(schema)}.{esc(table)}"


def lsn_int(text: str, what: str = "LSN") -> int:
    """``16/B374D848`` -> its 64-bit position; ConfigError naming ``what`` otherwise."""
    m = _LSN.fullmatch(text.strip())
    if not m:
        raise ConfigError(f"{what}: expected an LSN as X/X (hexadecimal, e.g. 0/1A2B3C4), got {text!r}")
    return (int(m[1], 16) << 32) | int(m[2], 16)


def lsn_text(lsn: int) -> str:
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def check_slot_name(name: str) -> str:
    if not SLOT_NAME.fullmatch(name):
        raise ConfigError(
            f"--slot: {name!r} is not a replication slot name (lower-case letters, digits and _, at most 63)"
        )
    return name


@dataclass(frozen=True)
class Slot:
    """A replication slot as pg_replication_slots shows it."""

    name: str
    plugin: str | None
    slot_type: str
    database: str | None
    confirmed: int | None  # confirmed_flush_lsn: decoding resumes after it


def setup_session(cursor: Any) -> None:
    for stmt in SESSION_SETUP:
        cursor.execute(stmt)


def check_logical(cursor: Any) -> None:
    """TargetError unless the publisher runs with wal_level = logical."""
    level = cursor.execute(WAL_LEVEL_SQL).fetchone()[0]
    if level != "logical":
        raise TargetError(
            f"--source: the publisher runs with wal_level = {level}; logical decoding needs "
            "wal_level = logical (ALTER SYSTEM SET wal_level = logical, then restart it)"
        )


def find_slot(cursor: Any, name: str) -> Slot | None:
    row = cursor.execute(SLOT_SQL, name).fetchone()
    if row is None:
        return None
    plugin, slot_type, database, confirmed = row
    return Slot(name, plugin, slot_type, database, lsn_int(confirmed) if confirmed else None)


def check_slot(slot: Slot | None, name: str, database: str | None) -> Slot:
    """The slot, if it is a logical wal2json slot of ``database``; ConfigError naming --slot."""
    if slot is None:
        raise ConfigError(
            f"--slot: no replication slot {name!r} on the publisher (give --create-slot to create it)"
        )
    if slot.slot_type != "logical" or slot.plugin != PLUGIN:
        what = f"decodes with {slot.plugin!r}" if slot.slot_type == "logical" else "is a physical slot"
        raise ConfigError(f"--slot: slot {name!r} {what}, not {PLUGIN} (create another with --create-slot)")
    if database is not None and slot.database != database:
        raise ConfigError(
            f"--slot: slot {name!r} decodes database {slot.database!r}, not {database!r} (the --source's)"
        )
    return slot


def create_slot(cursor: Any, name: str) -> int:
    """A wal2json slot from now on (no snapshot); its consistent point."""
    row = cursor.execute(
        "SELECT lsn::text FROM pg_create_logical_replication_slot(?, ?)", name, PLUGIN
    ).fetchone()
    return lsn_int(row[0])


@contextmanager
def exported_slot(endpoint: Endpoint, name: str) -> Iterator[tuple[int, str]]:
    """Create the wal2json slot ``name`` with a snapshot exported at its consistent point (see
    the module's docstring); yields (consistent point, snapshot name). The snapshot can be
    adopted (:func:`adopt_snapshot`) until the block ends. A block that raises drops the slot
    again, on the same connection (the walsender released the slot once it was created, so it
    is not active; dropped after the connection closed, it could still be): a slot without its
    snapshot would only hold the publisher's WAL."""
    import pyodbc

    quote = endpoint.dialect.quote
    command = CREATE_SLOT_COMMAND.format(slot=quote(check_slot_name(name)), plugin=quote(PLUGIN))
    try:
        conn = pyodbc.connect(
            endpoint.connection_string + "pqopt={replication=database};", autocommit=True, timeout=30
        )
    except pyodbc.Error as e:
        raise TargetError(
            f"--source: cannot open a replication connection to {endpoint.description}: {_message(e)} "
            "(the user needs the REPLICATION attribute)"
        ) from None
    try:
        try:
            row = conn.cursor().execute(command).fetchone()
        except pyodbc.Error as e:
            raise TargetError(f"--create-slot: {_message(e)}") from None
        _slot, consistent, snapshot, _plugin = row
        try:
            if not _SNAPSHOT_NAME.fullmatch(snapshot or ""):
                raise TargetError(f"--create-slot: the publisher exported no usable snapshot ({snapshot!r})")
            yield lsn_int(consistent), snapshot
        except BaseException:
            # the block's error is the one to report (the caller says whether the slot stayed)
            with suppress(pyodbc.Error):
                conn.cursor().execute(DROP_SLOT_COMMAND.format(slot=quote(name)))
            raise
    finally:
        conn.close()


def adopt_snapshot(conn: Any, snapshot: str, quote_literal: Any) -> None:
    """Make ``conn``'s (autocommit off, nothing run yet) transaction a REPEATABLE READ one that
    sees exactly the exported ``snapshot``: SET TRANSACTION SNAPSHOT must come before any query
    of the transaction and takes a literal (checked against the form PostgreSQL exports)."""
    if not _SNAPSHOT_NAME.fullmatch(snapshot):
        raise TargetError(f"not an exported snapshot's name: {snapshot!r}")
    cur = conn.cursor()
    cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    cur.execute(f"SET TRANSACTION SNAPSHOT {quote_literal(snapshot)}")


def peek(
    cursor: Any, slot: str, options: Sequence[str], upto_lsn: int | None, nchanges: int
) -> list[tuple[int, str]]:
    """(lsn, data) of the whole transactions the slot decodes next, stopping after about
    ``nchanges`` rows (a transaction is never cut) and before any transaction committing at or
    after ``upto_lsn``; nothing is consumed."""
    marks = ", ".join("?" for _ in options)
    upto = lsn_text(upto_lsn) if upto_lsn is not None else None
    rows = cursor.execute(PEEK_SQL.format(marks=marks), slot, upto, nchanges, *options).fetchall()
    return [(lsn_int(lsn), data) for lsn, data in rows]


def takes_numbers_as_strings(cursor: Any, slot: str, options: Sequence[str]) -> bool:
    """Whether the slot's wal2json takes ``numeric-data-types-as-string`` (2.6 and later): tried
    once on a peek that reads one WAL record at most and consumes nothing (:data:`PROBE_SQL`).
    Tried rather than read from a version: wal2json shows no version to SQL (``WAL2JSON_VERSION``
    is a C macro) and its package's is not visible over ODBC. wal2json checks its options when
    decoding starts, and 2.5 refuses one it does not know: SQLSTATE 22023, ``option
    "numeric-data-types-as-string" = "1" is unknown`` (measured with Debian bookworm's
    postgresql-15-wal2json 2.5). Any other error is the slot's: TargetError naming --slot."""
    import pyodbc

    opts = (*options, NUMBERS_AS_STRINGS, "1")
    try:
        cursor.execute(PROBE_SQL.format(marks=", ".join("?" for _ in opts)), slot, *opts).fetchall()
    except pyodbc.Error as e:
        text = _message(e)
        if NUMBERS_AS_STRINGS in text and "is unknown" in text:
            return False
        raise TargetError(f"--slot: {slot}: {text}") from None
    return True


def nan_as_null_columns(cursor: Any, tables: Sequence[str] | None) -> list[str]:
    """``schema.table.column (type)`` of each column of ``tables`` (every table when None) whose
    NaN or ±Infinity wal2json writes as null without ``numeric-data-types-as-string``."""
    wanted = set(tables) if tables else None
    return [
        f"{schema}.{table}.{column} ({sql_type})"
        for schema, table, column, sql_type in cursor.execute(NAN_AS_NULL_COLUMNS_SQL).fetchall()
        if wanted is None or f"{schema}.{table}" in wanted
    ]


def advance(cursor: Any, slot: str, lsn: int) -> None:
    """Confirm everything before ``lsn`` (a batch's last end LSN): never decoded again."""
    cursor.execute(ADVANCE_SQL, slot, lsn_text(lsn)).fetchall()


def current_lsn(cursor: Any) -> int:
    return lsn_int(cursor.execute(CURRENT_LSN_SQL).fetchone()[0])


def _message(e: Exception) -> str:
    """A driver error's text, one line, any secret redacted."""
    args: tuple[Any, ...] = getattr(e, "args", ())
    text = str(args[1] if len(args) > 1 else e)
    text = re.sub(r"\s*\(SQL\w+\)\s*$", "", text.replace("\n", " "))
    text = re.sub(r"^\[[^\]]*\](\[[^\]]*\])*\s*", "", text)
    return redact(text.strip())
