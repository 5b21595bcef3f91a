"""Sending a share of calls with as few round trips as the driver allows.

Calls travel as one multi-statement text per chunk (``CALL a(?,..);CALL b(?,..)``) with
every value bound; psqlODBC with UseServerSidePrepare=0 substitutes the parameters and
sends the chunk in one round trip (reference/postgres-odbc-notes.md: ~100k calls/s against
~15k one call per round trip). A chunk holds at most the dialect's parameter limit.

Set-based apply (``run.set_apply``, :mod:`applier.apply.bulk`): runs of commands of one
operation on one article become one call of the article's set procedure. Re-applies after a
reset and skips go row by row (per-row errors).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from applier.apply import blame
from applier.apply.blame import Blame
from applier.apply.bulk import BulkCall, bulk_calls
from applier.apply.failure import Chunk, Failure, Row, commands, short
from applier.apply.gate import GateClient
from applier.apply.planned import Piece, PlannedShare, Run
from applier.apply.share import Share
from applier.apply.steps import Stepping
from applier.dialects.base import Dialect
from applier.dialects.conflicts import Classified
from applier.plan.calls import Call, Planner
from applier.records.schema import SHARE_FIELDS
from applier.targets.connection import RENEW

T = TypeVar("T")


class _ReadAgain(Exception):
    """A read lost its connection and the sender has a new one: read again."""


class Sender(Blame, Stepping):
    """One connection's way of sending calls: chunked multi-statement batches. ``reconnect``
    opens a replacement when the connection is lost (:meth:`renew`)."""

    def __init__(
        self,
        conn: Any,
        dialect: Dialect,
        planner: Planner,
        stream: int,
        set_apply: bool = False,
        reconnect: Callable[[], Any] | None = None,
    ) -> None:
        self.conn = conn
        self.dialect = dialect
        self.planner = planner
        self.stream = stream
        self.set_apply = set_apply
        self.reconnect = reconnect
        self.round_trips = 0
        self.sql_seconds = 0.0
        self.reconnects = 0
        # The schedule as this stream ran it: a step per chunk, commit and rollback (drained
        # into "step" events by the task). In a controlled stage every step waits for its turn
        # at the gate (applier.apply.gate) and a chunk holds one call.
        self.gate: GateClient | None = None
        self.round: int | None = None
        self.anchor: int | None = None  # the lsn of the last command sent
        self.steps: list[dict[str, Any]] = []
        self._texts: dict[tuple[str, ...], str] = {}
        self._batch_cursor: Any = None
        self._cursor_of: Any = None

    def figures(self, **extra: Any) -> str:
        """This connection's figures for its stream's summary event, as JSON: SQL seconds,
        ``extra`` (the apply model's own), round trips, reconnects and which executor (and
        host) ran the stream."""
        from applier.sparkenv.slots import executor_id

        return json.dumps(
            {
                "sql_seconds": round(self.sql_seconds, 4),
                **extra,
                "round_trips": self.round_trips,
                "reconnects": self.reconnects,
                "executor": executor_id(),
            }
        )

    def commit(self) -> None:
        """Commit the connection's work (a step of the schedule)."""
        self._step("commit", self.conn.commit)

    def rollback(self) -> None:
        """Roll the connection's work back (a step of the schedule)."""
        self._step("rollback", lambda: self.dialect.rollback(self.conn))

    def _step(self, kind: str, action: Callable[[], Any]) -> None:
        seq, t0 = self._turn(kind, [])
        result: Any = "ok"
        try:
            action()
        except Exception as e:
            c = self.classify(e)
            result = {"class": c.cls.value, "code": c.code, "message": short(c.message, 200)}
            raise
        finally:
            self._done(seq, kind, [], result, t0)

    def close(self) -> None:
        """Close the connection (one already lost is gone: nothing to do)."""
        with contextlib.suppress(Exception):
            self.conn.close()

    def renew(self) -> None:
        """Replace a lost connection with a new one (the server rolled back its open work). A
        replacement lost before it is ready is replaced again (tenacity, ``RENEW``); a server
        that cannot be reached fails at once (the connect has its own retries: ``CONNECT``)."""
        reconnect = self.reconnect
        if reconnect is None:
            raise RuntimeError("the connection was lost and this sender cannot reconnect")
        unreachable: list[BaseException] = []

        def once() -> None:
            with contextlib.suppress(Exception):  # already gone
                self.conn.close()
            try:
                self.conn = reconnect()
            except Exception as e:
                unreachable.append(e)
                raise
            self.reconnects += 1
            self._tell_session()

        RENEW.retrying(lambda e: not unreachable and self.lost(e))(once)

    def lost(self, exc: BaseException) -> bool:
        """Whether ``exc`` says the connection is gone."""
        return self.classify(exc).connection_lost

    def classify(self, exc: BaseException) -> Classified:
        """The dialect's class of ``exc``; an error the driver could not name
        (:meth:`Dialect.ambiguous`) is a lost connection when the connection no longer answers."""
        c = self.dialect.classify(exc)
        if c.connection_lost or not self.dialect.ambiguous(c) or self._answers():
            return c
        return dataclasses.replace(c, transient=True, connection_lost=True)

    def _answers(self) -> bool:
        """Whether the connection still runs a statement (an error that is not a lost
        connection is an answer too: the session is there). The batch cursor is closed first:
        while the statement that met the ended session is open on it, FreeTDS refuses any other
        with "Invalid cursor state" (24000), which is no answer (the next batch gets a new one)."""
        import pyodbc

        if self._batch_cursor is not None:
            with contextlib.suppress(pyodbc.Error):
                self._batch_cursor.close()
            self._batch_cursor = self._cursor_of = None
        try:
            cur = self.conn.cursor()
            cur.execute("SELECT 1")
            cur.fetchall()
            return True
        except pyodbc.Error as e:
            return not self.dialect.classify(e).connection_lost

    def read(self, fn: Callable[[], T]) -> T:
        """``fn()``, a read on :attr:`conn`, then a commit; when the connection is lost on the
        way, on a new one again (tenacity, ``RENEW``): a stream reads its progress right after
        a reconnect, the moment a second termination or a failover can hit again. An error of
        :meth:`renew` (the server cannot be reached) ends the read: it is not retried here too."""
        lost: list[BaseException] = []

        def once() -> T:
            try:
                out = fn()
                self.conn.commit()
                return out
            except Exception as e:
                if self.reconnect is None or not self.lost(e):
                    raise
                lost[:] = [e]
            self.renew()
            raise _ReadAgain

        try:
            return RENEW.retrying(lambda e: isinstance(e, _ReadAgain))(once)
        except _ReadAgain:
            raise lost[0] from None

    def calls(self, rows: Sequence[Row], bulk: bool | None = None) -> list[tuple[Row, Call]]:
        """The call of every row (rows whose operation is not replicated are left out);
        set-based calls where ``bulk`` (default: the sender's ``set_apply``) allows."""
        if self.set_apply if bulk is None else bulk:
            return bulk_calls(rows, self.planner.of_row)
        of_row = self.planner.of_row
        out = []
        for r in rows:
            call = of_row(r).call(r)
            if call is not None:
                out.append((r, call))
        return out

    def share_calls(self, share: Share) -> Sequence[tuple[Row, Call]]:
        """:meth:`calls` of a round's share (:class:`PlannedShare` unless set-based)."""
        return self.calls(share) if self.set_apply else self._planned(share)

    def _planned(self, share: Share) -> PlannedShare:
        """The calls of a share: each run of rows of one article and operation planned column by
        column from the value columns where its plan can (:class:`~applier.plan.calls.FastParameters`),
        row by row otherwise."""
        parts: list[Run | list[tuple[Row, Call]]] = []
        compiled = self.planner.compiled
        for (a, o), start, stop in share.runs("article", "op"):
            plan = compiled(a, o)
            fast = plan.fast
            flat = fast.flat(share, start, stop) if fast is not None and fast.usable(share) else None
            if flat is not None:
                assert plan.sql is not None
                parts.append(Run(plan.sql, fast.width if fast else 0, start, stop - start, flat))
            else:
                pairs = []
                for row in share.rows[start:stop]:
                    call = plan.call(row)
                    if call is not None:
                        pairs.append((row, call))
                parts.append(pairs)
        return PlannedShare(share, parts)

    def per_row(self, calls: Sequence[tuple[Row, Call]]) -> list[tuple[Row, Call]]:
        """``calls`` with every set-based call replaced by the row calls of its rows."""
        out: list[tuple[Row, Call]] = []
        for r, c in calls:
            if isinstance(c, BulkCall):
                out.extend(self.calls(c.rows, bulk=False))
            else:
                out.append((r, c))
        return out

    def send(
        self,
        calls: Sequence[tuple[Row, Call]],
        tail: Sequence[Call] = (),
        locate: Callable[[Failure], bool] | None = None,
    ) -> Failure | None:
        """Execute the calls (then the tail statements) in chunks; the first failure or None.
        The failure names the command that raised it (:meth:`_blamed`) unless ``locate``
        (default: every failure) says it need not: the caller rolls back after a failure."""
        if isinstance(calls, PlannedShare) and self.gate is None:
            return self._send_planned(calls, tail, locate)
        # A controlled stage takes turns call by call: one call per chunk.
        limit = self.dialect.MAX_PARAMS_PER_BATCH
        one = self.gate is not None
        chunk: list[tuple[Row | None, Call]] = []
        sent: list[Chunk] = []  # the chunks that succeeded (applied again where savepoints cannot help)
        nparams = 0
        items: list[tuple[Row | None, Call]] = [*calls, *((None, t) for t in tail)]
        for i, (row, call) in enumerate(items):
            if chunk and (one or nparams + len(call.params) > limit):
                self._guarded = len(sent) < blame.GUARDED_CHUNKS
                fail = self._execute(chunk)
                if fail:
                    return self._blamed(fail, chunk, sent, locate)
                sent.append(chunk)
                chunk, nparams = [], 0
            chunk.append((row, call))
            nparams += len(call.params)
            if i == len(items) - 1:
                self._guarded = len(sent) < blame.GUARDED_CHUNKS
                fail = self._execute(chunk)
                return self._blamed(fail, chunk, sent, locate) if fail else None
        return None

    def _send_planned(
        self, planned: PlannedShare, tail: Sequence[Call], locate: Callable[[Failure], bool] | None
    ) -> Failure | None:
        """:meth:`send` of a planned share: the same chunks, cut run by run (a run's calls all
        have its width) instead of call by call; (row, call) pairs are built only for a chunk
        that failed and the chunks sent before it (to find the culprit)."""
        limit = self.dialect.MAX_PARAMS_PER_BATCH
        chunk: list[Piece] = []
        sent: list[list[Piece]] = []
        nparams = 0

        def flush() -> Failure | None:
            self._guarded = len(sent) < blame.GUARDED_CHUNKS
            fail = self._execute_pieces(planned, chunk)
            if fail:
                return self._blamed(
                    fail, self._pairs(planned, chunk), [self._pairs(planned, c) for c in sent], locate
                )
            sent.append(chunk)
            return None

        singles: list[tuple[Row | None, Call]] = [(None, t) for t in tail]
        for part in [*planned.parts, singles]:
            if isinstance(part, Run):
                w, i = part.width, 0
                while i < part.count:
                    if chunk and nparams + w > limit:
                        fail = flush()
                        if fail:
                            return fail
                        chunk, nparams = [], 0
                    room = part.count - i if w == 0 else (limit - nparams) // w
                    take = min(max(room, 1), part.count - i)
                    chunk.append((part, i, i + take))
                    nparams += take * w
                    i += take
                continue
            for row, call in part:
                if chunk and nparams + len(call.params) > limit:
                    fail = flush()
                    if fail:
                        return fail
                    chunk, nparams = [], 0
                chunk.append((row, call))
                nparams += len(call.params)
        if chunk:
            return flush()
        return None

    @staticmethod
    def _pairs(planned: PlannedShare, pieces: Sequence[Piece]) -> list[tuple[Row | None, Call]]:
        out: list[tuple[Row | None, Call]] = []
        for piece in pieces:
            if isinstance(piece[0], Run):
                run, a, b = piece
                out.extend(planned.pairs(run, a, b))
            else:
                out.append(piece)
        return out

    def _execute_pieces(self, planned: PlannedShare, pieces: Sequence[Piece]) -> Failure | None:
        """:meth:`_execute` of a chunk cut from a planned share."""
        lsns: list[int] = []
        texts: list[str] = []
        params: list[Any] = []
        n_commands = 0
        first: Row | None = None
        all_lsns = planned.share.values("lsn")
        for piece in pieces:
            if isinstance(piece[0], Run):
                run, a, b = piece
                lsns.extend(all_lsns[run.start + a : run.start + b])
                texts.extend([run.sql] * (b - a))
                params.extend(run.params[a * run.width : b * run.width])
                if first is None and b > a:
                    first = planned.share.row(run.start + a)
                n_commands += b - a
            else:
                r, call = piece
                if isinstance(call, BulkCall):
                    lsns.extend(int(x["lsn"]) for x in call.rows)
                    n_commands += len(call.rows)
                    if first is None and call.rows:
                        first = call.rows[0]
                elif r is not None:
                    lsns.append(int(r["lsn"]))
                    n_commands += 1
                    if first is None:
                        first = r
                texts.append(call.sql)
                params.extend(call.params)
        return self._step_exec(lsns, lambda: self._send_text(texts, params, n_commands, first))

    def _execute(self, chunk: Sequence[tuple[Row | None, Call]]) -> Failure | None:
        """Send one chunk as one step of the schedule (in a controlled stage: at its turn)."""
        lsns = [
            int(x["lsn"])
            for r, call in chunk
            for x in (call.rows if isinstance(call, BulkCall) else (r,))
            if x is not None
        ]
        return self._step_exec(lsns, lambda: self._execute_chunk(chunk))

    def _execute_chunk(self, chunk: Sequence[tuple[Row | None, Call]]) -> Failure | None:
        rows = commands(chunk, at_most=2)
        return self._send_text(
            [c.sql for _, c in chunk],
            [p for _, c in chunk for p in c.params],
            len(rows),
            rows[0] if rows else None,
        )

    def _send_text(
        self, texts: Sequence[str], params: list[Any], n_commands: int, first: Row | None
    ) -> Failure | None:
        """One round trip: the statements (in the chunk's savepoint when it holds several
        commands, :meth:`_guard`) with their values; ``n_commands``: how many commands they
        apply (2 for two or more), ``first`` the first of them."""
        import pyodbc

        head, foot = self._guard(n_commands)
        sql = self._text((*head, *texts, *foot))
        t0 = time.perf_counter()
        self.round_trips += 1
        try:
            cur = self._cursor()
            params, sizes = self.dialect.bind(params)
            if self.dialect.TYPED_NULLS:  # None reverts what an earlier chunk declared
                cur.setinputsizes(sizes)
            cur.execute(sql, params) if params else cur.execute(sql)
            while self.dialect.ERRORS_IN_LATER_RESULTS and cur.nextset():
                pass
        except pyodbc.Error as e:
            c = self.classify(e).keyed(self.primary_keys)
            # One command: it raised (a lost connection is nobody's); more: see _blamed.
            culprit = first if n_commands == 1 and not c.connection_lost else None
            return Failure(
                c.cls.value,
                c.code,
                short(c.message),
                culprit["lsn"] if culprit else None,
                self.stream,
                c.transient,
                c.connection_lost,
                c.constraint,
                "single" if culprit else "unlocated",
            )
        finally:
            self.sql_seconds += time.perf_counter() - t0
        return None

    def _text(self, statements: tuple[str, ...]) -> str:
        """The batch of ``statements``, the same text object each time they come again: pyodbc
        prepares a cursor's statement again only for another object, and psqlODBC's prepare
        parses the whole batch (~100 KB of CALLs a round)."""
        sql = self._texts.get(statements)
        if sql is None:
            if len(self._texts) >= 64:
                self._texts.clear()
            sql = self._texts[statements] = ";\n".join(statements)
        return sql

    def _cursor(self) -> Any:
        """One cursor per connection for the batches (a new connection gets a new one)."""
        if self._cursor_of is not self.conn:
            self._batch_cursor, self._cursor_of = self.conn.cursor(), self.conn
        return self._batch_cursor


def slim(rows: Sequence[Row]) -> list[Row]:
    """The fields a share needs to travel to another stream (the fallback gathers them)."""
    return [{k: row.get(k) for k in SHARE_FIELDS} for row in rows]
