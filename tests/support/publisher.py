"""A real PostgreSQL publisher for tests: an embedded cluster with ``wal_level = logical``,
wal2json logical replication slots, and captures written as ``pg_recvlogical`` writes them.

``pg_recvlogical --plugin=wal2json -o format-version=N -f FILE`` writes each row that logical
decoding returns as one line; :meth:`Publisher.capture` reads the same rows through SQL
(``pg_logical_slot_get_changes``, over ODBC) and writes them the same way, so the file is
what ``applier run --format wal2json`` (version 1: one transaction per line) and
``--format wal2json2`` (version 2: one action per line, B..C around each transaction) read.

The options are ``applier capture``'s (:func:`applier.capture.slot.wal2json_options`: the ones
applier's readers use); this helper consumes with ``pg_logical_slot_get_changes`` where the
command peeks and confirms.

Values are written by the decoding session's output functions: its ``TimeZone`` decides the
offsets of ``timestamptz`` texts (``capture(..., timezone=...)``), its ``DateStyle`` the
date format (ISO here: initdb's default).

:func:`differences` compares a table's rows at the publisher and at a subscriber row for row,
each row as the same text expressions on both sides.

Needs wal2json for the server's major version (Debian's ``postgresql-<major>-wal2json``, which
``make setup`` installs): :func:`start_publisher` fails, naming the package, where it is missing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from applier.capture.slot import PLUGIN, wal2json_options
from applier.targets.connstr import ensure_odbc_env
from applier.targets.embedded import EmbeddedPostgres, find_pg_bindir

LOGICAL = {"wal_level": "logical", "max_replication_slots": "4", "max_wal_senders": "4"}


def wal2json_missing() -> str | None:
    """Why the wal2json plugin cannot load in the embedded cluster's server, or None."""
    bindir = find_pg_bindir()
    lib = bindir.parent / "lib" / "wal2json.so"
    if lib.exists():
        return None
    major = bindir.parent.name
    return (
        f"wal2json is not installed for PostgreSQL {major} ({lib} is missing): "
        f"`make setup` installs it (apt-get install postgresql-{major}-wal2json)"
    )


@dataclass
class Publisher:
    """An embedded PostgreSQL publishing through wal2json slots (start with :func:`start_publisher`)."""

    server: EmbeddedPostgres

    @property
    def connection_string(self) -> str:
        return self.server.connection_string()

    def connect(self) -> Any:
        import pyodbc

        ensure_odbc_env()  # the project's odbcinst.ini (no CommLog files under /tmp)
        # Protocol=7.4-1: an error fails the statement, not a savepoint of the driver's
        return pyodbc.connect(self.connection_string + "Protocol=7.4-1;", autocommit=True)

    def execute(self, *statements: str | tuple[Any, ...]) -> None:
        """Each statement in its own transaction; a tuple is (sql, *params)."""
        conn = self.connect()
        try:
            cur = conn.cursor()
            for s in statements:
                sql, *params = (s,) if isinstance(s, str) else s
                cur.execute(sql, *params)
        finally:
            conn.close()

    def transaction(self, *statements: str | tuple[Any, ...]) -> None:
        """The statements as one transaction (one BEGIN ... COMMIT the slots decode as one)."""
        conn = self.connect()
        try:
            conn.autocommit = False
            cur = conn.cursor()
            for s in statements:
                sql, *params = (s,) if isinstance(s, str) else s
                cur.execute(sql, *params)
            conn.commit()
        finally:
            conn.close()

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        conn = self.connect()
        try:
            return [tuple(r) for r in conn.cursor().execute(sql, *params).fetchall()]
        finally:
            conn.close()

    def create_slot(self, name: str) -> None:
        """A logical slot decoding with wal2json, from now on."""
        self.execute(("SELECT pg_create_logical_replication_slot(?, ?)", name, PLUGIN))

    def takes_numbers_as_strings(self, slot: str) -> bool:
        """The installed wal2json's own answer, asked without applier's code: 2.6 and later take
        ``numeric-data-types-as-string``, 2.5 refuses it as unknown (consumes nothing)."""
        import pyodbc

        try:
            self.rows(
                "SELECT 1 FROM pg_logical_slot_peek_changes(?, NULL, 1, 'numeric-data-types-as-string', '1')",
                slot,
            )
        except pyodbc.Error as e:
            assert "is unknown" in str(e), e
            return False
        return True

    def capture(self, slot: str, path: Path, version: int, timezone: str | None = None) -> Path:
        """Everything ``slot`` decodes since the last capture (consumed), in wal2json format
        ``version`` (1 or 2), written one row a line as pg_recvlogical writes it. ``timezone``:
        the decoding session's TimeZone (the offsets of timestamptz texts)."""
        conn = self.connect()
        try:
            cur = conn.cursor()
            if timezone is not None:
                cur.execute("SELECT set_config('TimeZone', ?, false)", timezone)
            opts: Sequence[str] = wal2json_options(version)
            marks = ", ".join("?" for _ in opts)
            got = cur.execute(
                f"SELECT data FROM pg_logical_slot_get_changes(?, NULL, NULL, {marks})", slot, *opts
            ).fetchall()
        finally:
            conn.close()
        with path.open("w", encoding="utf-8") as f:
            f.writelines(r[0] + "\n" for r in got)
        return path


Row = tuple[Any, ...]


def text_rows(cs: str, table: str, order: str) -> list[tuple[Any, ...]]:
    """Every row of ``table``, every column as text, read in a UTC session, ordered by ``order``
    (SQL: the table's key columns)."""
    import pyodbc

    conn = pyodbc.connect(cs, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute("SET TimeZone = 'UTC'")
        cols = cur.execute(
            "SELECT string_agg(quote_ident(attname) || '::text', ', ' ORDER BY attnum) FROM pg_attribute "
            "WHERE attrelid = CAST(? AS regclass) AND attnum > 0 AND NOT attisdropped",
            table,
        ).fetchone()[0]
        return [tuple(r) for r in cur.execute(f"SELECT {cols} FROM {table} ORDER BY {order}").fetchall()]
    finally:
        conn.close()


def differences(publisher: Iterable[Row], subscriber: Iterable[Row]) -> tuple[list[Row], list[Row]]:
    """(the publisher's rows the subscriber does not hold, the subscriber's rows the publisher
    does not hold), as multisets (a row twice on one side and once on the other differs once),
    each sorted with NULLs last: two empty lists when the tables are equal."""
    pub, sub = Counter(publisher), Counter(subscriber)
    return _ordered((pub - sub).elements()), _ordered((sub - pub).elements())


def _ordered(rows: Iterable[Row]) -> list[Row]:
    return sorted(rows, key=lambda r: [(v is None, str(v)) for v in r])


@contextmanager
def start_publisher(timezone: str | None = None) -> Iterator[Publisher]:
    """An embedded PostgreSQL with ``wal_level = logical`` (``timezone``: the server's, the
    default of every session), stopped on exit. AssertionError naming the package where
    wal2json is missing: ``make test`` runs ``make setup``, which installs it."""
    why = wal2json_missing()
    assert why is None, why
    settings = dict(LOGICAL)
    if timezone is not None:
        settings["timezone"] = timezone
    server = EmbeddedPostgres(database="publisher", extra_settings=settings).start()
    try:
        yield Publisher(server)
    finally:
        server.stop()
