"""PostgreSQL dialect: PL/pgSQL procedures that behave as SQL Server's generated ones.

Row not found raises SQLSTATE ``RP598`` (class "RP", replication; implementation-defined
classes are allowed by the SQL standard) with DETAIL ``20598`` and a message naming the
table and the key as SQL Server 2016+ does. Classification reads SQLSTATEs only.

SQL statement delivery sends one statement per command: a data-modifying CTE whose row
count goes to ``applier.require_rows`` (installed with the progress table), which raises the
same RP598 when it is 0.

Connections use psqlODBC with ``Protocol=7.4-1`` (an error aborts the transaction instead
of the driver's per-statement savepoints, see reference/postgres-odbc-notes.md),
``UseServerSidePrepare=0`` (BEGIN and a whole batch of calls travel in one round trip,
parameters substituted by the driver) and ``BoolsAsChar=0`` (booleans come back as bits).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

from applier.articles import Article, Column, SqlType
from applier.dialects.base import Dialect
from applier.dialects.conflicts import Classified, ConflictClass

ROW_NOT_FOUND_SQLSTATE = "RP598"

_BY_SQLSTATE: dict[str, tuple[ConflictClass, bool]] = {
    ROW_NOT_FOUND_SQLSTATE: (ConflictClass.ROW_NOT_FOUND, False),
    "23505": (ConflictClass.DUPLICATE_KEY, False),
    "23503": (ConflictClass.FOREIGN_KEY, False),
    # A lock held from outside past the lock timeout: on the single connection, wait and try
    # again (tenacity), as the agent retries the batch; in a parallel round it is a reset.
    "55P03": (ConflictClass.LOCK_TIMEOUT, True),
    "40P01": (ConflictClass.DEADLOCK, True),
    "40001": (ConflictClass.DEADLOCK, True),  # serialization failure: retry as the agent would
}
# The constraint a message names, by its place among the quoted names: 23505 `duplicate key
# value violates unique constraint "c"`; 23503 `insert or update on table "t" violates foreign
# key constraint "c"` (or `update or delete on table "t" ... "c" on table "u"`).
_NAMED_AT = {"23505": 0, "23503": 1}
_QUOTED = re.compile(r'"([^"]*)"')


def _constraint(state: str, message: str) -> str | None:
    at = _NAMED_AT.get(state)
    if at is None:
        return None
    names = _QUOTED.findall(message)
    return names[at] if len(names) > at else None


# to_char's pattern of a UTC timestamp as Python's isoformat(timespec="microseconds") of an
# aware datetime writes it: 2024-03-10T06:59:59.999999+00:00.
UTC_ISO = """'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"'"""

# Connection-level SQLSTATEs (ODBC's 08xxx, PostgreSQL's 57P01 admin shutdown...).
_LOST = ("08", "57P01", "57P02", "57P03")


class PostgresDialect(Dialect):
    name: ClassVar[str] = "postgres"
    language: ClassVar[str] = "postgres"
    template_dir: ClassVar[str] = "postgres"
    KNOWN_CODES: ClassVar[frozenset[str]] = frozenset(_BY_SQLSTATE)
    ODBC_DRIVER_HINTS: ClassVar[tuple[str, ...]] = ("postgres", "psqlodbc")
    ZERO_ROW_TEST: ClassVar[re.Pattern[str]] = re.compile(
        r"\bnot\s+found\b|\bif\s+found\b|\bget\s+diagnostics\b[^;]*\brow_count\b", re.I
    )
    RAISE_TEST: ClassVar[re.Pattern[str]] = re.compile(
        r"\braise\s+(?:exception|sqlstate|using)\b|\braise\s+'", re.I
    )
    ZERO_ROW_ADVICE: ClassVar[str] = "IF NOT FOUND"
    MAX_PARAMS_PER_BATCH: ClassVar[int] = 20000
    SET_APPLY: ClassVar[bool] = True
    SAVEPOINT_SURVIVES_ERROR: ClassVar[bool] = True
    # psqlODBC reports the error of any statement of a batch at SQLExecute (the 2,000th CALL of
    # 2,500 raised there), and walking 2,500 results cost ~0.5 us of client CPU a command.
    ERRORS_IN_LATER_RESULTS: ClassVar[bool] = False
    PRIMARY_KEY_NAME: ClassVar[str] = "{table}_pkey"  # the name PostgreSQL itself would choose
    MAX_IDENTIFIER_BYTES: ClassVar[int] = 63  # NAMEDATALEN - 1
    ODBC_OPTIONS: ClassVar[str] = "Protocol=7.4-1;UseServerSidePrepare=0;BoolsAsChar=0;"
    TYPE_MAP: ClassVar[dict[str, str]] = {
        "bit": "boolean",
        "tinyint": "smallint",
        "smallint": "smallint",
        "int": "integer",
        "bigint": "bigint",
        "decimal": "numeric({precision},{scale})",
        "numeric": "numeric({precision},{scale})",
        "money": "numeric(19,4)",
        "smallmoney": "numeric(10,4)",
        "float": "double precision",
        "real": "real",
        "char": "character({length})",
        "nchar": "character({length})",
        "varchar": "varchar({length})",
        "nvarchar": "varchar({length})",
        "text": "text",
        "ntext": "text",
        "xml": "text",
        "date": "date",
        "time": "time(6)",
        "datetime": "timestamp(3)",
        "datetime2": "timestamp(6)",
        "smalldatetime": "timestamp(0)",
        "datetimeoffset": "timestamptz(6)",
        "uniqueidentifier": "uuid",
        "binary": "bytea",
        "varbinary": "bytea",
        "image": "bytea",
        # Canonical text form of hierarchyid ('/1/2/'). Equality and keys behave; ordering
        # does not (text sorts '/10/' before '/2/', hierarchyid depth-first), and the methods
        # (GetLevel, IsDescendantOf...) are gone, so computed columns using them stay unreplicated.
        "hierarchyid": "varchar(4000)",
        # timestamp/rowversion are absent on purpose: their values cannot be written at a
        # SQL Server subscriber either, and type_sql() says so (unsupported()).
    }

    def clear_tables_sql(self, articles: Sequence[Article]) -> list[str]:
        # one statement for all: TRUNCATE checks foreign keys among the tables it is given
        return [f"TRUNCATE TABLE {', '.join(self.table(a) for a in articles)}"] if articles else []

    def quote(self, ident: str) -> str:
        if "\x00" in ident:
            raise self.unsupported(f"identifier with a NUL character: {ident!r}")
        return '"' + ident.replace('"', '""') + '"'

    def type_sql(self, t: SqlType) -> str:
        if t.length == -1 and t.base in ("varchar", "nvarchar", "char", "nchar"):
            return "text"
        return super().type_sql(t)

    def literal(self, text: str) -> str:
        """A string literal (standard_conforming_strings is on since PostgreSQL 9.1)."""
        return "'" + text.replace("'", "''") + "'"

    def bool_literal(self, value: bool) -> str:
        return "TRUE" if value else "FALSE"

    def bytes_literal(self, value: bytes) -> str:
        return f"'\\x{value.hex()}'"  # bytea's hex format

    def template_context(self, article: Article, op: str) -> dict[str, Any]:
        ctx = super().template_context(article, op)
        # A dollar-quote tag that no identifier of the article contains.
        names = " ".join((article.schema, article.table, *article.column_names))
        tag, n = "$applier$", 0
        while tag in names:
            n += 1
            tag = f"$applier{n}$"
        ctx["dollar"] = tag
        return ctx

    def param_type(self, t: SqlType | None) -> str:
        return "bytea" if t is None else self.type_sql(t)

    def param_marker(self, t: SqlType | None) -> str:
        return f"CAST(? AS {self.param_type(t)})"

    def call_sql(self, article: Article, op: str) -> str:
        # Each parameter is cast to its declared type: the driver substitutes values as
        # literals, and PostgreSQL resolves procedures by argument type (an int literal
        # does not implicitly become smallint).
        params = self.proc_params(article, op)
        args = ", ".join(self.param_marker(p.type) for p in params)
        return f"CALL {self.proc_ref(article, op)}({args})"

    def read_column_sql(self, column: Column) -> str:
        # A timestamptz is an instant: PostgreSQL keeps no offset ("stored internally in UTC",
        # https://www.postgresql.org/docs/15/datatype-datetime.html), and psqlODBC returns it as a
        # naive timestamp (SQL_TYPE_TIMESTAMP) in the session's TimeZone, which names no instant.
        # Read as that instant in UTC, ISO 8601 text to the microsecond (to_char: whatever the
        # session's DateStyle), which values.encode reads as it reads its own encoding.
        if column.type.kind == "datetimeoffset":
            return f"to_char({self.quote(column.name)} AT TIME ZONE 'UTC', {UTC_ISO})"
        return super().read_column_sql(column)

    def key_hash_sql(self, article: Article) -> str:
        keys = ", ".join(self.quote(k) for k in article.key)
        return f"(hashtext(CAST(ROW({keys}, 0) AS text)) & 2147483647)"

    def set_call_sql(self, article: Article, op: str) -> str:
        return f"CALL {self.qualified(*self.set_proc_name(article, op))}(CAST(? AS json))"

    def row_hash_sql(self, article: Article, alias: str) -> str:
        return self.render("row_hash.sql.j2", alias=alias).strip()

    def analyze_sql(self, table: str) -> str | None:
        # a table created and filled in this run has no statistics yet: without them the
        # planner guesses its size, and may scan the article's table once per key
        return f"ANALYZE {table}"

    def classify(self, exc: BaseException) -> Classified:
        args: tuple[object, ...] = tuple(getattr(exc, "args", ()))
        state = str(args[0]) if args else ""
        message = str(args[1]) if len(args) > 1 else str(exc)
        if state in _BY_SQLSTATE:
            cls, transient = _BY_SQLSTATE[state]
            return Classified(cls, state, transient, message=message, constraint=_constraint(state, message))
        lost = state.startswith(_LOST)
        return Classified(ConflictClass.OTHER, state or "?", lost, connection_lost=lost, message=message)

    def session_setup(self, lock_timeout_ms: int) -> list[str]:
        return [f"SET lock_timeout = {int(lock_timeout_ms)}"]

    def local_lock_timeout_sql(self, ms: int) -> str | None:
        return f"SET LOCAL lock_timeout = {int(ms)}"  # undone by the transaction's end

    def procedure_exists_sql(self) -> str:
        return (
            "SELECT count(*) FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n "
            "ON n.oid = p.pronamespace WHERE n.nspname = coalesce(?, current_schema()) AND p.proname = ? "
            "AND p.prokind = 'p'"
        )

    def support_sql(self) -> list[str]:
        return [self.render("require_rows.sql.j2").strip()]

    def drop_table_sql(self, article: Article) -> list[str]:
        return [f"DROP TABLE IF EXISTS {self.table(article)} CASCADE"]

    def create_schema_sql(self, schema: str) -> str:
        return f"CREATE SCHEMA IF NOT EXISTS {self.quote(schema)}"

    def overloads_sql(self) -> str | None:
        return (
            "SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc p "
            "JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = COALESCE(CAST(? AS text), current_schema()) AND p.proname = ? "
            "AND p.prokind = 'p'"
        )

    def backend_id_sql(self) -> str | None:
        return "SELECT pg_backend_pid()"

    def lock_waits_sql(self, sessions: int) -> str | None:
        # A waiter is granted the lock by the backend that releases it, inside that release:
        # once a commit returns, pg_locks no longer shows its waiters as waiting.
        marks = ", ".join("?" for _ in range(sessions))
        return (
            "SELECT DISTINCT l.pid, pg_blocking_pids(l.pid)::text FROM pg_catalog.pg_locks l "
            f"WHERE NOT l.granted AND l.pid IN ({marks})"
        )

    def cancel_sql(self) -> str | None:
        return "SELECT pg_cancel_backend(?)"
