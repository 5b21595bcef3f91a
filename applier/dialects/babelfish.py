"""Babelfish for PostgreSQL: the T-SQL dialect on an engine that speaks T-SQL over TDS.

Babelfish (AWS; the engine behind Aurora PostgreSQL's Babelfish) runs T-SQL on PostgreSQL.
applier's T-SQL is SQL Server's, the reference; where Babelfish 4.3 lacks what SQL Server has,
this class turns a capability flag of :class:`~applier.dialects.tsql.TsqlDialect` off and the
text takes another way there only. Every difference, with the test that shows it, is in the
README's "SQL Server" section:

- ``]]`` inside a bracketed name is a syntax error: a name holding ``]`` is written
  ``"a]b"`` (QUOTED_IDENTIFIER is on for ODBC connections); a name holding both ``]`` and
  ``"`` cannot be written (``object_id`` does not resolve ``"a""b"`` either);
- a procedure whose name holds ``]`` cannot be created, bracketed or double-quoted (the
  engine's own GRANT after CREATE PROCEDURE fails on it): a generated name holding one has it
  as ``_``, with a hash of the full name (:meth:`~applier.dialects.base.Dialect.safe_proc_name`);
- ``OPENJSON ... WITH (c int N'$.c')``: a Unicode path literal is a syntax error, ``'$.c'``
  works (non-ASCII names included), and a ``'`` in a path ends the engine's jsonpath text
  early (in a procedure, or with a bound JSON): it travels as ``\u0027``;
- ``OPENJSON ... WITH (b varbinary(max) '$.b')`` does not decode base64 (the text's bytes
  arrive) and can break the TDS stream: binary members are read as text and decoded with
  PostgreSQL's ``decode(..., 'base64')``, which Babelfish's T-SQL reaches;
- ``OPENJSON ... WITH`` (and ``JSON_VALUE``) gives a string member still escaped: ``x\"y``
  for ``"x\"y"`` (``\u0022`` too; ``\\``, ``\n`` and ``\t`` alike): the row's object is read
  as well (``'$' AS JSON``) and a string member taken from it by PostgreSQL's
  ``json_extract_path_text``, which unescapes;
- ``UPDATE t ... OUTPUT ... INTO @t FROM tbl AS t JOIN @v AS v``: "missing FROM-clause entry
  for table v"; the set-based update finds the rows it missed by the key instead;
- ``THROW`` from an ``sp_`` procedure that touched a table leaves an autocommit session with an
  empty ``current_user``: the stand-in ``sp_MSreplraiserror`` raises
  ``RAISERROR(20598, 16, 1)`` (the build's patch lets numbers from 13000 through), so the
  message carries the number but not the table and key text;
- ``ALTER TABLE ... ALTER COLUMN c type NULL | NOT NULL`` is refused ("not currently
  supported"); without it the column keeps its nullability, as in PostgreSQL: the retype
  gives the type alone;
- ``ALTER TABLE ... DROP COLUMN`` drops the column's indexes and constraints itself, as
  PostgreSQL does (and ``sys.stats_columns``, which SQL Server's drop script reads, does not
  exist): the drop is the ALTER alone;
- no ``hierarchyid`` type: such a column is ``nvarchar(4000)`` holding the canonical text form
  (``/1/2/``), as on PostgreSQL;
- a duplicate key carries 2627 for any unique index (SQL Server: 2601 for a unique index that
  is not a constraint) with PostgreSQL's text, the constraint's name in double quotes and in
  lower case: the name is read there, and compared without case;
- a lock timeout (``SET LOCK_TIMEOUT``) arrives as 33557097, the number Babelfish gives every
  error it does not map, with PostgreSQL's text ("canceling statement due to lock timeout"):
  that number with that text is read as SQL Server's 1222 (``lock_timeout``, retried as
  transient), any other 33557097 stays ``other``;
- ``sys.tables`` and ``sys.columns`` give PostgreSQL's names, in lower case and, past 63
  bytes, cut with a hash: ``applier articles --from-target`` reads the declared ones from
  ``pg_class.reloptions`` / ``pg_attribute.attoptions`` (``CATALOG_DECLARED_NAMES_SQL``); a
  table name longer than 63 bytes keeps no declared name (INFORMATION_SCHEMA gives the cut one
  too), and ``datetime2(7)`` holds six fractional digits (``sys.columns.scale`` 6): the articles
  say ``datetime2(6)``;
- ``WAITFOR`` is not supported;
- no ``sys.dm_exec_requests``: which session blocks which is read from PostgreSQL's
  ``pg_locks`` and ``pg_blocking_pids`` (``@@SPID`` is the backend's pid). A waiting
  statement is not cancelled by the scheduler, as on SQL Server: ``pg_cancel_backend`` is
  refused ("permission denied to cancel query": a T-SQL session runs as its database's user,
  which may not signal the login's backends), so the server's deadlock detection (1205) and
  the lock timeout decide.

The engine is found by asking the server (``SERVERPROPERTY('Babelfish')``,
:func:`applier.dialects.for_server`), never from a connection string's text.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Callable
from typing import Any, ClassVar

from applier.articles import SqlType
from applier.dialects.base import TypedNull
from applier.dialects.conflicts import Classified, ConflictClass
from applier.dialects.tsql import TsqlDialect

# A duplicate's message is PostgreSQL's: duplicate key value violates unique constraint "name"
# (the name as Babelfish stores it: lower case), numbered 2627 for every unique index.
_PG_NAMED = re.compile(r'"(.*)"')
# Babelfish's number for every PostgreSQL error it does not map to a T-SQL one.
UNMAPPED = 33557097
# PostgreSQL's message for its lock_timeout (55P03), which Babelfish sends as UNMAPPED.
_PG_LOCK_TIMEOUT = re.compile(r"canceling statement due to lock timeout", re.IGNORECASE)
LOCK_TIMEOUT = 1222


SQL_TYPE_TIMESTAMP = 93  # ODBC's (sql.h)


def _utc_naive(text: str) -> dt.datetime:
    """An ISO 8601 instant with an offset as the same instant in UTC, without tzinfo."""
    v = dt.datetime.fromisoformat(text)
    return v.astimezone(dt.timezone.utc).replace(tzinfo=None) if v.tzinfo is not None else v


class BabelfishDialect(TsqlDialect):
    name: ClassVar[str] = "babelfish"
    # 1 on Babelfish, NULL on SQL Server (an unknown property: "SERVERPROPERTY (Transact-SQL)");
    # cast, since FreeTDS cannot read sql_variant.
    ENGINE_PROBE: ClassVar[str | None] = "SELECT CAST(SERVERPROPERTY('Babelfish') AS nvarchar(10))"
    BRACKET_ESCAPES: ClassVar[bool] = False
    JSON_PATH_UNICODE: ClassVar[bool] = False
    UPDATE_OUTPUT_FROM_JOIN: ClassVar[bool] = False
    STAND_IN_THROWS: ClassVar[bool] = False
    PROC_NAME_UNSAFE: ClassVar[str] = "]"
    ALTER_COLUMN_RESTATES_NULL: ClassVar[bool] = False
    JSON_BASE64_DECODE: ClassVar[str | None] = "cast(decode({}, 'base64') as varbinary(max))"
    JSON_TEXT_UNESCAPED: ClassVar[bool] = False
    JSON_TEXT_SQL: ClassVar[str] = "json_extract_path_text(cast({row} as json), {name})"
    DROP_COLUMN_DROPS_DEPENDENTS: ClassVar[bool] = True
    # no hierarchyid type ("not currently supported"): its text form, as PostgreSQL stores it
    TYPE_MAP: ClassVar[dict[str, str]] = {**TsqlDialect.TYPE_MAP, "hierarchyid": "nvarchar(4000)"}
    CONSTRAINT_NAMED_AT: ClassVar[dict[int, tuple[re.Pattern[str], int]]] = {
        **TsqlDialect.CONSTRAINT_NAMED_AT,
        2627: (_PG_NAMED, 0),
        2601: (_PG_NAMED, 0),
    }

    TYPED_NULLS: ClassVar[bool] = True

    def null_param(self, t: SqlType | None) -> Any:
        """A datetimeoffset's NULL binds as a timestamp (pyodbc binds None as varchar: refused
        as the text is, below)."""
        if t is not None and t.kind == "datetimeoffset":
            return TypedNull(SQL_TYPE_TIMESTAMP, 0, 6)
        return super().null_param(t)

    def param_converter(self, t: SqlType) -> Callable[[Any], Any] | None:
        """A datetimeoffset binds as its instant in UTC, a ``datetime`` without offset (stored
        +00:00): Babelfish refuses a procedure parameter of type datetimeoffset bound as text
        ("found but cannot be used ... implicit casting", 22018), which SQL Server converts.
        Everything else as SQL Server's."""
        if t.kind == "datetimeoffset":
            return _utc_naive
        return super().param_converter(t)

    # CONCAT writes float and real with the shortest text that reads back as the same value, and
    # money and the date and time types with every digit (PostgreSQL's output functions); style 3
    # took 4 s for 140,000 floats where CONCAT's own took 0.2 s. Binary values as SQL Server's.
    ROW_TEXT_SQL: ClassVar[dict[str, str]] = {
        **{k: v for k, v in TsqlDialect.ROW_TEXT_SQL.items() if "HASHBYTES" in v},
        "text": "CAST({} AS varchar(max))",
        "ntext": "CAST({} AS nvarchar(max))",
        "xml": "CAST({} AS nvarchar(max))",
    }

    def classify(self, exc: BaseException) -> Classified:
        """As SQL Server's, with PostgreSQL's lock timeout (33557097 and its text) read as 1222."""
        c = super().classify(exc)
        if c.code == str(UNMAPPED) and not c.connection_lost and _PG_LOCK_TIMEOUT.search(c.message or ""):
            return dataclasses.replace(
                c, cls=ConflictClass.LOCK_TIMEOUT, code=str(LOCK_TIMEOUT), transient=True
            )
        return c

    LOCK_WAITS_SQL: ClassVar[str] = (
        "SELECT DISTINCT l.pid, CAST(pg_blocking_pids(l.pid) AS varchar(4000)) FROM pg_catalog.pg_locks l "
        "WHERE CAST(l.granted AS int) = 0 AND l.pid IN ({marks})"
    )
    # sys.tables and sys.columns give PostgreSQL's names (lower case; one longer than 63 bytes
    # cut, with a hash); the declared names are in pg_class.reloptions / pg_attribute.attoptions
    # (bbf_original_rel_name=, bbf_original_name=), as INFORMATION_SCHEMA reads them.
    CATALOG_DECLARED_NAMES_SQL: ClassVar[str | None] = (
        "SELECT s.name, t.name, c.name, "
        "COALESCE((SELECT SUBSTRING(o.v, 23, 4000) FROM pg_catalog.unnest(r.reloptions) AS o(v) "
        "WHERE o.v LIKE 'bbf_original_rel_name=%'), t.name), "
        "COALESCE((SELECT SUBSTRING(o.v, 19, 4000) FROM pg_catalog.unnest(a.attoptions) AS o(v) "
        "WHERE o.v LIKE 'bbf_original_name=%'), c.name) "
        "FROM sys.tables t JOIN sys.schemas s ON s.schema_id = t.schema_id "
        "JOIN sys.columns c ON c.object_id = t.object_id "
        "JOIN pg_catalog.pg_class r ON r.oid = t.object_id "
        "JOIN pg_catalog.pg_attribute a ON a.attrelid = t.object_id AND a.attnum = c.column_id "
        "WHERE t.is_ms_shipped = 0"
    )
