"""A reachable subscriber database (:class:`Endpoint`) and the pre-flight that makes one.

An endpoint is one database of a started target, checked reachable: its connection string
with applier's driver options, its dialect and a description with secrets redacted. It is
plain data: Spark pickles it to every stream task, which connects with
:meth:`Endpoint.connect`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from applier.dialects import DIALECTS, for_server
from applier.dialects.base import Dialect
from applier.errors import TargetError
from applier.targets.connection import CONNECT, RetryPolicy, connect
from applier.targets.connstr import dialect_for, ensure_odbc_env, parse_connection_string, redact


@dataclass(frozen=True)
class Endpoint:
    """One reachable subscriber database: connection string (with applier's options), dialect."""

    connection_string: str
    dialect_name: str
    description: str
    # its tables and procedures were installed by an earlier run of the same articles
    # (apply.install.reusable): the next run empties them instead of installing again
    reuse_tables: bool = False

    @property
    def dialect(self) -> Dialect:
        return DIALECTS[self.dialect_name]()

    @property
    def redacted(self) -> str:
        return redact(self.connection_string)

    def connect(self, lock_timeout_ms: int = 30000, policy: RetryPolicy = CONNECT) -> Any:
        """A pyodbc connection, autocommit off, with the dialect's session set-up applied."""
        return connect(self.connection_string, self.dialect, lock_timeout_ms, policy)

    def __repr__(self) -> str:  # the connection string may hold a password
        return f"Endpoint({self.description!r}, dialect={self.dialect_name})"


def preflight(cs: str, description: str | None = None, timeout_s: int = 10, role: str = "target") -> Endpoint:
    """Validate the string, connect once, and return the Endpoint; TargetError when unreachable
    (``role``: what the message calls the database: the target, the publisher)."""
    import pyodbc

    ensure_odbc_env()
    parse_connection_string(cs)
    dialect = dialect_for(cs)
    full = dialect.odbc_connection_string(cs)
    try:
        conn = pyodbc.connect(full, autocommit=True, timeout=timeout_s)
    except pyodbc.Error as e:
        msg = redact(str(e.args[1] if len(e.args) > 1 else e))
        raise TargetError(f"cannot reach the {role} {redact(cs)}: {msg}") from None
    try:
        dialect = for_server(dialect, conn.cursor())  # the engine, as the server names itself
    finally:
        conn.close()
    return Endpoint(full, dialect.name, description or redact(cs))
