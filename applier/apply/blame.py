"""Which command raised an error: a chunk of several commands runs under a savepoint, and after
an error its statements run again in pieces (:mod:`applier.apply.locate`'s search) or, where an
error ends the transaction, the send is applied again one statement a round trip. A mixin of
:class:`applier.apply.sender.Sender`, whose connection and dialect it uses."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Sequence
from typing import Any

from applier.apply.bulk import BulkCall
from applier.apply.failure import Chunk, Failure, Row, commands
from applier.apply.locate import culprit, same_kind
from applier.dialects.base import Dialect
from applier.dialects.conflicts import Classified
from applier.plan.calls import Call, Planner

# A chunk of more than one command starts with this savepoint (and releases it at its end):
# after an error the sender rolls back to it to find the command that raised (:mod:`.locate`).
CHUNK_SAVEPOINT = "applier_chunk"
LOCATE_SAVEPOINT = "applier_locate"
LOCATE_LOCK_TIMEOUT_MS = 20  # lock waits while the culprit is looked for
# Chunks of one send (one transaction) that get the savepoint: PostgreSQL caches 64
# subtransaction ids per session, past that every snapshot taken meanwhile is "overflowed" and
# reads pg_subtrans. A later chunk goes without; its culprit is found by applying again.
GUARDED_CHUNKS = 48


class Lost(Exception):
    """The connection was lost while the culprit was looked for."""


class Blame:
    """The blame half of a Sender (see the module docstring)."""

    conn: Any
    dialect: Dialect
    planner: Planner
    round_trips: int
    sql_seconds: float
    _guarded: bool = True  # the next chunk of several commands gets its savepoint (send says)

    def classify(self, exc: BaseException) -> Classified:
        raise NotImplementedError

    def calls(self, rows: Sequence[Row], bulk: bool | None = None) -> list[tuple[Row, Call]]:
        raise NotImplementedError

    # -- the command that raised (applier.apply.locate) --------------------------------
    @functools.cached_property
    def primary_keys(self) -> frozenset[str]:
        """The names of the articles' primary keys: a duplicate naming another constraint or
        index is a unique index's (:meth:`Classified.keyed`)."""
        return frozenset(self.dialect.primary_key_name(a) for a in self.planner.articles.values())

    def _guard(self, n_commands: int) -> tuple[list[str], list[str]]:
        """Statements before and after a chunk's own: a savepoint to roll back to after an error
        when the chunk holds more than one command, the dialect can go on after one and the
        send has not spent its GUARDED_CHUNKS."""
        d = self.dialect
        if not d.SAVEPOINT_SURVIVES_ERROR or not self._guarded or n_commands < 2:
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
        except Lost:
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
        self.dialect.rollback(self.conn)
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
            bound, sizes = self.dialect.bind(list(params))
            if self.dialect.TYPED_NULLS:
                cur.setinputsizes(sizes)
            cur.execute(sql, bound) if bound else cur.execute(sql)
            while self.dialect.ERRORS_IN_LATER_RESULTS and cur.nextset():
                pass
        except pyodbc.Error as e:
            c = self.classify(e).keyed(self.primary_keys)
            if c.connection_lost:
                raise Lost(c.message) from None
            return c.cls.value
        finally:
            self.sql_seconds += time.perf_counter() - t0
        return None
