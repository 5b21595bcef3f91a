"""Sending a share of calls with as few round trips as the driver allows.

Calls travel as one multi-statement text per chunk (``CALL a(?,..);CALL b(?,..)``) with
every value bound; psqlODBC with UseServerSidePrepare=0 substitutes the parameters and
sends the chunk in one round trip (reference/postgres-odbc-notes.md: ~100k calls/s against
~15k one call per round trip). A chunk holds at most the dialect's parameter limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from applier.dialects.base import Classified, ConflictClass, Dialect
from applier.plan.calls import Call, Planner

Row = dict[str, Any]


@dataclass(frozen=True)
class Failure:
    """An error one stream hit, with the command it is attributed to (None if unknown)."""

    cls: str
    code: str
    message: str
    lsn: int | None
    stream: int
    transient: bool = False
    connection_lost: bool = False

    def to_json(self) -> dict[str, Any]:
        return self.__dict__.copy()

    @staticmethod
    def from_json(d: dict[str, Any]) -> Failure:
        return Failure(**d)


def short(message: str, limit: int = 400) -> str:
    m = " ".join(message.split())
    return m if len(m) <= limit else m[: limit - 3] + "..."


def attribute(rows: Sequence[Row], c: Classified) -> Row | None:
    """The command of a failed chunk that raised: the first whose key values all appear in
    the error text, preferring the operations that can raise that class."""
    if not rows:
        return None
    import json

    msg = c.message
    prefer = {"row_not_found": ("U", "D"), "duplicate_key": ("I", "U")}.get(c.cls.value, ("I", "U", "D"))
    best: Row | None = None
    for r in rows:
        key = (
            r["key_before"]
            if r["op"] in ("U", "D") and c.cls == ConflictClass.ROW_NOT_FOUND
            else (r["key_after"] or r["key_before"])
        )
        if key is None:
            continue
        values = json.loads(key)
        if all(str(v) in msg for v in values):
            if r["op"] in prefer:
                return r
            best = best or r
    return best


class Sender:
    """One connection's way of sending calls: chunked multi-statement batches."""

    def __init__(self, conn: Any, dialect: Dialect, planner: Planner, stream: int) -> None:
        self.conn = conn
        self.dialect = dialect
        self.planner = planner
        self.stream = stream
        self.round_trips = 0
        self.sql_seconds = 0.0

    def calls(self, rows: Sequence[Row]) -> list[tuple[Row, Call]]:
        out = []
        for r in rows:
            call = self.planner.plan(r["article"], r["op"], r["before"], r["after"], r["changed"])
            if call is not None:
                out.append((r, call))
        return out

    def send(self, calls: Sequence[tuple[Row, Call]], tail: Sequence[Call] = ()) -> Failure | None:
        """Execute the calls (then the tail statements) in chunks; the first failure or None."""
        limit = self.dialect.MAX_PARAMS_PER_BATCH
        chunk: list[tuple[Row | None, Call]] = []
        nparams = 0
        items: list[tuple[Row | None, Call]] = [*calls, *((None, t) for t in tail)]
        for i, (row, call) in enumerate(items):
            if chunk and nparams + len(call.params) > limit:
                fail = self._execute(chunk)
                if fail:
                    return fail
                chunk, nparams = [], 0
            chunk.append((row, call))
            nparams += len(call.params)
            if i == len(items) - 1:
                return self._execute(chunk)
        return None

    def _execute(self, chunk: Sequence[tuple[Row | None, Call]]) -> Failure | None:
        import time

        import pyodbc

        sql = ";\n".join(c.sql for _, c in chunk)
        params = [p for _, c in chunk for p in c.params]
        t0 = time.perf_counter()
        self.round_trips += 1
        try:
            cur = self.conn.cursor()
            cur.execute(sql, params) if params else cur.execute(sql)
            while cur.nextset():  # surfaces errors of later statements (SQL Server)
                pass
        except pyodbc.Error as e:
            c = self.dialect.classify(e)
            culprit = attribute([r for r, _ in chunk if r is not None], c)
            return Failure(
                c.cls.value,
                c.code,
                short(c.message),
                culprit["lsn"] if culprit else None,
                self.stream,
                c.transient,
                c.connection_lost,
            )
        finally:
            self.sql_seconds += time.perf_counter() - t0
        return None

    def savepoint_each(
        self, calls: Sequence[tuple[Row, Call]], skip: Any
    ) -> tuple[list[tuple[Row, Failure]], Failure | None]:
        """Apply one call at a time inside a savepoint; errors that ``skip(classified)`` accepts are
        rolled back to the savepoint and recorded. Returns (skipped, fatal failure or None)."""
        skipped: list[tuple[Row, Failure]] = []
        sp = "applier_sp"
        for row, call in calls:
            fail = self._execute([(None, Call(self.dialect.savepoint_sql(sp), ())), (row, call)])
            if fail is None:
                continue
            if not skip(fail):
                return skipped, fail
            rb = self._execute([(None, Call(self.dialect.rollback_to_savepoint_sql(sp), ()))])
            if rb is not None:
                return skipped, rb
            skipped.append((row, fail))
        return skipped, None
