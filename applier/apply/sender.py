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
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from applier.apply.bulk import BulkCall, bulk_calls
from applier.apply.gate import GateClient
from applier.apply.locate import culprit, same_kind
from applier.dialects.base import Dialect
from applier.plan.calls import Call, Planner
from applier.records.schema import SHARE_FIELDS
from applier.targets.connection import RetryPolicy

Row = dict[str, Any]


@dataclass(frozen=True)
class Failure:
    """An error one stream hit, with the command that raised it (None if none is known).

    ``located``: how that command is known. ``single``: its chunk held no other command;
    ``rerun``: its chunk was run again and it raised that error again (:mod:`.locate`);
    ``rerun-other``: run again, no command raised it, and this one was the first to fail
    otherwise; ``unlocated``: none (the error did not happen again, the connection was lost,
    the chunk held no command, or the caller did not ask). ``constraint``: the constraint or
    index that fired (duplicates, foreign keys)."""

    cls: str
    code: str
    message: str
    lsn: int | None
    stream: int
    transient: bool = False
    connection_lost: bool = False
    constraint: str | None = None
    located: str = "unlocated"

    def to_json(self) -> dict[str, Any]:
        return self.__dict__.copy()

    @staticmethod
    def from_json(d: dict[str, Any]) -> Failure:
        return Failure(**d)


def short(message: str, limit: int = 400) -> str:
    m = " ".join(message.split())
    return m if len(m) <= limit else m[: limit - 3] + "..."


Chunk = Sequence[tuple[Row | None, Call]]
# A chunk of more than one command starts with this savepoint (and releases it at its end):
# after an error the sender rolls back to it to find the command that raised (:mod:`.locate`).
CHUNK_SAVEPOINT = "applier_chunk"
LOCATE_SAVEPOINT = "applier_locate"
LOCATE_LOCK_TIMEOUT_MS = 20  # lock waits while the culprit is looked for
# Chunks of one send (one transaction) that get the savepoint: PostgreSQL caches 64
# subtransaction ids per session, past that every snapshot taken meanwhile is "overflowed" and
# reads pg_subtrans. A later chunk goes without; its culprit is found by applying again.
GUARDED_CHUNKS = 48


def commands(chunk: Chunk, at_most: int | None = None) -> list[Row]:
    """The commands a chunk applies (a set-based call's rows each), the first ``at_most``."""
    out: list[Row] = []
    for r, call in chunk:
        if isinstance(call, BulkCall):
            out.extend(call.rows)
        elif r is not None:
            out.append(r)
        if at_most is not None and len(out) >= at_most:
            return out[:at_most]
    return out


class _Lost(Exception):
    """The connection was lost while the culprit was looked for."""


class Sender:
    """One connection's way of sending calls: chunked multi-statement batches. ``reconnect``
    opens a replacement when the connection is lost (:meth:`renew`)."""

    _guarded = True  # the next chunk of several commands gets its savepoint (send says)

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

    def attach(self, gate: GateClient | None) -> None:
        """Take turns at ``gate`` (None: run free)."""
        self.gate = gate
        self._tell_session()

    def _tell_session(self) -> None:
        sql = self.dialect.backend_id_sql()
        if self.gate is not None and sql is not None:
            cur = self.conn.cursor()
            pid = cur.execute(sql).fetchone()[0]
            self.gate.pid(int(pid))

    def _turn(self, kind: str, lsns: list[int]) -> tuple[int | None, float]:
        seq = self.gate.turn(kind, lsns, self.anchor, self.round) if self.gate is not None else None
        return seq, time.time()

    def _done(self, seq: int | None, kind: str, lsns: list[int], result: Any, t0: float) -> str | None:
        """Record the step; in a controlled stage end the turn (why it was cancelled, if it was)."""
        cancelled = self.gate.done(result) if self.gate is not None else None
        self.steps.append(
            {
                "seq": seq,
                "kind": kind,
                "round": self.round,
                "lsns": lsns,
                "anchor": self.anchor,
                "result": result,
                "t0": t0,
                "t1": time.time(),
            }
        )
        if lsns:
            self.anchor = lsns[-1]
        return cancelled

    def commit(self) -> None:
        """Commit the connection's work (a step of the schedule)."""
        self._step("commit", self.conn.commit)

    def rollback(self) -> None:
        """Roll the connection's work back (a step of the schedule)."""
        self._step("rollback", self.conn.rollback)

    def _step(self, kind: str, action: Callable[[], Any]) -> None:
        seq, t0 = self._turn(kind, [])
        result: Any = "ok"
        try:
            action()
        except Exception as e:
            c = self.dialect.classify(e)
            result = {"class": c.cls.value, "code": c.code, "message": short(c.message, 200)}
            raise
        finally:
            self._done(seq, kind, [], result, t0)

    def renew(self) -> None:
        """Replace a lost connection with a new one (the server rolled back its open work)."""
        if self.reconnect is None:
            raise RuntimeError("the connection was lost and this sender cannot reconnect")
        with contextlib.suppress(Exception):  # already gone
            self.conn.close()
        self.conn = self.reconnect()
        self.reconnects += 1
        self._tell_session()

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
        # A controlled stage takes turns call by call: one call per chunk.
        limit = self.dialect.MAX_PARAMS_PER_BATCH
        one = self.gate is not None
        chunk: list[tuple[Row | None, Call]] = []
        sent: list[Chunk] = []  # the chunks that succeeded (applied again where savepoints cannot help)
        nparams = 0
        items: list[tuple[Row | None, Call]] = [*calls, *((None, t) for t in tail)]
        for i, (row, call) in enumerate(items):
            if chunk and (one or nparams + len(call.params) > limit):
                self._guarded = len(sent) < GUARDED_CHUNKS
                fail = self._execute(chunk)
                if fail:
                    return self._blamed(fail, chunk, sent, locate)
                sent.append(chunk)
                chunk, nparams = [], 0
            chunk.append((row, call))
            nparams += len(call.params)
            if i == len(items) - 1:
                self._guarded = len(sent) < GUARDED_CHUNKS
                fail = self._execute(chunk)
                return self._blamed(fail, chunk, sent, locate) if fail else None
        return None

    def _execute(self, chunk: Sequence[tuple[Row | None, Call]]) -> Failure | None:
        """Send one chunk as one step of the schedule (in a controlled stage: at its turn)."""
        lsns = [
            int(x["lsn"])
            for r, call in chunk
            for x in (call.rows if isinstance(call, BulkCall) else (r,))
            if x is not None
        ]
        seq, t0 = self._turn("exec", lsns)
        failure: Failure | None = None
        try:
            failure = self._execute_chunk(chunk)
        finally:
            result: Any = (
                "ok"
                if failure is None
                else {"class": failure.cls, "code": failure.code, "message": failure.message[:200]}
            )
            cancelled = self._done(seq, "exec", lsns, result, t0)
        if failure is not None and cancelled is not None:
            # The scheduler cancelled the statement: it waited in a wait-for cycle (a deadlock
            # the scheduler resolved) or for a stream parked at a barrier (a lock timeout).
            cls, code = ("deadlock", "40P01") if cancelled == "deadlock" else ("lock_timeout", "55P03")
            why = (
                "deadlock: a wait-for cycle among the streams (controlled schedule: this statement was the victim)"
                if cancelled == "deadlock"
                else "lock timeout: waiting for a lock a stream at the barrier holds (controlled schedule)"
            )
            failure = dataclasses.replace(failure, cls=cls, code=code, message=why, transient=True)
            self.steps[-1]["result"] = {"class": cls, "code": code, "message": why}
        return failure

    def _execute_chunk(self, chunk: Sequence[tuple[Row | None, Call]]) -> Failure | None:
        import pyodbc

        head, foot = self._guard(chunk)
        sql = ";\n".join([*head, *(c.sql for _, c in chunk), *foot])
        params = [p for _, c in chunk for p in c.params]
        t0 = time.perf_counter()
        self.round_trips += 1
        try:
            cur = self.conn.cursor()
            cur.execute(sql, params) if params else cur.execute(sql)
            while cur.nextset():  # surfaces errors of later statements (SQL Server)
                pass
        except pyodbc.Error as e:
            c = self.dialect.classify(e).keyed(self.primary_keys)
            rows = commands(chunk, at_most=2)
            # One command: it raised (a lost connection is nobody's); more: see _blamed.
            culprit = rows[0] if len(rows) == 1 and not c.connection_lost else None
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

    # -- the command that raised (applier.apply.locate) --------------------------------
    @functools.cached_property
    def primary_keys(self) -> frozenset[str]:
        """The names of the articles' primary keys: a duplicate naming another constraint or
        index is a unique index's (:meth:`Classified.keyed`)."""
        return frozenset(self.dialect.primary_key_name(a) for a in self.planner.articles.values())

    def _guard(self, chunk: Chunk) -> tuple[list[str], list[str]]:
        """Statements before and after a chunk's own: a savepoint to roll back to after an error
        when the chunk holds more than one command, the dialect can go on after one and the
        send has not spent its GUARDED_CHUNKS."""
        d = self.dialect
        if not d.SAVEPOINT_SURVIVES_ERROR or not self._guarded or len(commands(chunk, at_most=2)) < 2:
            return [], []
        release = d.release_savepoint_sql(CHUNK_SAVEPOINT)
        return [d.savepoint_sql(CHUNK_SAVEPOINT)], [release] if release else []

    def _blamed(
        self, fail: Failure, chunk: Chunk, sent: Sequence[Chunk], locate: Callable[[Failure], bool] | None
    ) -> Failure:
        """``fail`` with the command that raised it when its chunk held several: the chunk's
        statements run again (a set-based call as its row calls) and the first to fail is it
        (:mod:`applier.apply.locate`). The error's class, code and message stay the first
        ones. The transaction is left for the caller to roll back, as after any failure."""
        if fail.located != "unlocated" or fail.connection_lost or (locate is not None and not locate(fail)):
            return fail
        if len(commands(chunk, at_most=2)) < 2:
            return fail  # no command in the chunk: a tail statement failed
        stmts: list[tuple[Row | None, Call]] = []
        for r, call in chunk:
            if isinstance(call, BulkCall):
                stmts.extend(self.calls(call.rows, bulk=False))
            else:
                stmts.append((r, call))
        try:
            if self.dialect.SAVEPOINT_SURVIVES_ERROR and len(sent) < GUARDED_CHUNKS:
                hit = culprit(len(stmts), self._pieces(stmts), fail.cls)
            else:
                hit = self._replayed(sent, stmts, fail.cls)
        except _Lost:
            return dataclasses.replace(fail, transient=True, connection_lost=True)
        row = stmts[hit[0]][0] if hit is not None else None
        if hit is None or row is None:
            return fail  # the error did not happen again (or a tail statement raised it)
        return dataclasses.replace(fail, lsn=row["lsn"], located="rerun" if hit[1] else "rerun-other")

    def _pieces(self, stmts: Sequence[tuple[Row | None, Call]]) -> Callable[[int, int], str | None]:
        """Run pieces of ``stmts`` in turn after rolling back to the chunk's savepoint: each under
        a savepoint of its own and the short lock timeout, kept when it succeeds, rolled back
        (in the next piece's round trip) when it fails."""
        d = self.dialect
        sp = LOCATE_SAVEPOINT
        limit = d.local_lock_timeout_sql(LOCATE_LOCK_TIMEOUT_MS)
        release = d.release_savepoint_sql(sp)
        ends = [x for x in (release,) if x]
        pending = [d.rollback_to_savepoint_sql(CHUNK_SAVEPOINT)]

        def run(a: int, b: int) -> str | None:
            nonlocal pending
            piece = stmts[a:b]
            texts = [*pending, d.savepoint_sql(sp), *(x for x in (limit,) if x)]
            texts += [c.sql for _, c in piece] + ends
            err = self._try(texts, [p for _, c in piece for p in c.params])
            pending = [d.rollback_to_savepoint_sql(sp), *ends] if err is not None else []
            return err

        return run

    def _replayed(
        self, sent: Sequence[Chunk], stmts: Sequence[tuple[Row | None, Call]], cls: str
    ) -> tuple[int, bool] | None:
        """Where an error rolls the whole transaction back (SQL Server under XACT_ABORT ON), or
        the chunk had no savepoint (past GUARDED_CHUNKS): roll back, apply the chunks of this
        send that had succeeded again, then the failed chunk's statements one round trip each;
        the first to fail is the culprit. (Every caller begins its transaction with the send.)"""
        self.conn.rollback()
        for ch in sent:
            if self._try([c.sql for _, c in ch], [p for _, c in ch for p in c.params]) is not None:
                return None
        for i, (_, call) in enumerate(stmts):
            err = self._try([call.sql], list(call.params))
            if err is not None:
                return i, same_kind(err, cls)
        return None

    def _try(self, texts: Sequence[str], params: Sequence[Any]) -> str | None:
        """One round trip of the search: the class of the error it raised, or None."""
        import pyodbc

        t0 = time.perf_counter()
        self.round_trips += 1
        try:
            cur = self.conn.cursor()
            sql = ";\n".join(texts)
            cur.execute(sql, list(params)) if params else cur.execute(sql)
            while cur.nextset():
                pass
        except pyodbc.Error as e:
            c = self.dialect.classify(e).keyed(self.primary_keys)
            if c.connection_lost:
                raise _Lost(c.message) from None
            return c.cls.value
        finally:
            self.sql_seconds += time.perf_counter() - t0
        return None

    def savepoint_each(
        self, calls: Sequence[tuple[Row, Call]], skip: Any
    ) -> tuple[list[tuple[Row, Failure]], Failure | None]:
        """Apply one call at a time inside a savepoint; errors that ``skip(classified)`` accepts are
        rolled back to the savepoint and recorded. Returns (skipped, fatal failure or None).
        The dialect's skip-loop statements open and close the loop (SQL Server: XACT_ABORT off
        while it runs, so that an error leaves a savepoint to roll back to); an error the
        savepoint cannot undo stands, its message saying why it was not skipped."""
        opening, closing = self.dialect.skip_loop_sql()
        opened = self._execute([(None, Call(s, ())) for s in opening]) if opening and calls else None
        skipped, failure = ([], opened) if opened is not None else self._each(calls, skip)
        if closing and calls:  # also after a failure: the session goes back as it was
            done = self._execute([(None, Call(s, ())) for s in closing])
            if failure is None:
                failure = done
        return skipped, failure

    def _each(
        self, calls: Sequence[tuple[Row, Call]], skip: Any
    ) -> tuple[list[tuple[Row, Failure]], Failure | None]:
        skipped: list[tuple[Row, Failure]] = []
        sp = "applier_sp"
        for row, call in calls:
            fail = self._execute([(None, Call(self.dialect.savepoint_sql(sp), ())), (row, call)])
            if fail is None:
                continue
            if not skip(fail):
                return skipped, fail
            rb = self._execute([(None, Call(self.dialect.skip_rollback_sql(sp), ()))])
            if rb is not None:
                if rb.connection_lost:
                    return skipped, rb
                why = f"{fail.message} -- not skipped: {rb.message}"
                return skipped, dataclasses.replace(fail, message=short(why, 1200))
            skipped.append((row, fail))
        return skipped, None


SkipRule = Callable[[Failure], bool]


def slim(rows: Sequence[Row]) -> list[Row]:
    """The fields a share needs to travel to another stream (the fallback gathers them)."""
    return [{k: row.get(k) for k in SHARE_FIELDS} for row in rows]


def _never(f: Failure) -> bool:
    return False


def send_with_policy(
    sender: Sender,
    calls: Sequence[tuple[Row, Call]],
    tail: Sequence[Call],
    skip: SkipRule,
    retried: SkipRule = _never,
) -> tuple[list[tuple[Row, Failure]], Failure | None]:
    """Send the calls then the tail; on an error the error policy skips (-SkipErrors), roll
    back and apply one call at a time in savepoints, skipping those errors. Returns (skipped,
    the failure that stands or None); on None the transaction is open for the caller to commit.
    The command that raised is looked for unless the policy skips the error (the calls are
    applied one by one anyway) or ``retried`` says the caller tries the work again."""
    failure = sender.send(calls, tail, locate=lambda f: not skip(f) and not retried(f))
    if failure is None or not skip(failure) or failure.connection_lost:
        return [], failure
    sender.rollback()
    skipped, failure = sender.savepoint_each(sender.per_row(calls), skip)
    if failure is None:
        failure = sender.send([], tail)
    return skipped, failure


class _Transient(Exception):
    pass


def apply_serially(
    sender: Sender,
    calls: Sequence[tuple[Row, Call]],
    tail: Sequence[Call],
    retry: RetryPolicy,
    skip: SkipRule,
) -> tuple[list[tuple[Row, Failure]], Failure | None]:
    """The single-connection re-apply: :func:`send_with_policy`, with transient errors (deadlock
    victim, serialization failure) rolled back and retried by tenacity per ``retry``."""

    last: list[Failure] = []

    def attempt() -> tuple[list[tuple[Row, Failure]], Failure | None]:
        skipped, f = send_with_policy(sender, calls, tail, skip, retried=lambda f: f.transient)
        if f is not None and f.transient:
            last[:] = [f]
            if f.connection_lost:
                sender.renew()  # a new connection: the lost one's work was rolled back by the server
            else:
                sender.rollback()
            raise _Transient(f.message)
        return skipped, f

    try:
        return retry.retrying(lambda e: isinstance(e, _Transient))(attempt)
    except _Transient as e:
        f = last[0]
        why = f"transient errors persisted after {retry.attempts} attempts: {e}"
        return [], Failure(f.cls, f.code, why, None, sender.stream, True, f.connection_lost)


class LostCommit(Exception):
    """Work lost at its commit could not be applied again."""


def commit_surely(
    sender: Sender,
    landed: Callable[[], bool],
    again: Callable[[], Failure | None],
    attempts: int,
    what: str,
) -> None:
    """Commit the connection's open work. A connection lost at the commit may or may not have
    committed: on a new connection ``landed()`` reads the progress rows written with the work;
    when they are not there, ``again()`` applies the work again (a Failure: it could not) and
    the commit is tried again, up to ``attempts`` times."""
    for _ in range(max(1, attempts)):
        try:
            sender.commit()
            return
        except Exception as e:  # noqa: BLE001 - pyodbc's errors, classified below
            if not sender.dialect.classify(e).connection_lost:
                raise
        sender.renew()
        if landed():
            return  # the commit reached the server before the connection broke
        f = again()
        if f is not None:
            raise LostCommit(f"{what} could not be applied again after a lost commit: {f.message}")
    raise LostCommit(f"{what}: the connection was lost at {attempts} commits in a row")
