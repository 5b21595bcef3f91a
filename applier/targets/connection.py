"""Connections and retries: tenacity policies written as data, one per kind of work.

A policy is a frozen dataclass turned into a ``tenacity.Retrying`` with the dialect's
classification deciding what is transient (deadlock victim, serialization failure, lost
connection). Nothing else is retried: a conflict is the agent's business, not tenacity's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import tenacity

from applier.dialects.base import Dialect


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5
    wait_initial_s: float = 0.05
    wait_max_s: float = 2.0

    def retrying(self, is_transient: Callable[[BaseException], bool]) -> tenacity.Retrying:
        return tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.attempts),
            wait=tenacity.wait_exponential(multiplier=self.wait_initial_s, max=self.wait_max_s)
            + tenacity.wait_random(0, self.wait_initial_s),
            retry=tenacity.retry_if_exception(is_transient),
            reraise=True,
        )


CONNECT = RetryPolicy(attempts=5, wait_initial_s=0.2, wait_max_s=3.0)
REAPPLY = RetryPolicy(attempts=5, wait_initial_s=0.05, wait_max_s=1.0)
# A stream replacing a lost connection, or reading its progress on one, when the replacement
# is lost too (a failover in progress, an administrator terminating every backend again).
RENEW = RetryPolicy(attempts=6, wait_initial_s=0.05, wait_max_s=1.0)


def _connect_transient(exc: BaseException) -> bool:
    import pyodbc

    if not isinstance(exc, pyodbc.Error):
        return False
    state = str(exc.args[0]) if exc.args else ""
    # 57P01/57P02: the new session was terminated while it was being set up (an administrator
    # or a failover terminating every backend); 57P03: the server is starting.
    return state.startswith("08") or state in ("HYT00", "57P01", "57P02", "57P03")


def connect(
    connection_string: str, dialect: Dialect, lock_timeout_ms: int, policy: RetryPolicy = CONNECT
) -> Any:
    """A pyodbc connection, autocommit off, with the dialect's session set-up applied."""
    import pyodbc

    from applier.targets.connstr import ensure_odbc_env

    ensure_odbc_env()

    def once() -> Any:
        conn = pyodbc.connect(connection_string, autocommit=False, timeout=30)
        dialect.on_connect(conn)
        cur = conn.cursor()
        for stmt in dialect.session_setup(lock_timeout_ms):
            cur.execute(stmt)
        conn.commit()
        return conn

    def transient(exc: BaseException) -> bool:
        # also an error the driver could not name while the session was being set up (FreeTDS's
        # "Unknown error" when Babelfish ends the new session): a new connection is the answer
        return _connect_transient(exc) or (
            isinstance(exc, pyodbc.Error) and dialect.ambiguous(dialect.classify(exc))
        )

    return policy.retrying(transient)(once)
