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

import base64
import datetime as dt
import decimal
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from applier.apply.bulk import BulkCall, bulk_calls
from applier.apply.connection import RetryPolicy
from applier.articles import Article, SqlType, Syntax
from applier.dialects.base import Classified, ConflictClass, Dialect
from applier.plan.calls import Call, Planner, bitmap

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
        if all(_shown(v, msg) for v in values):
            if r["op"] in prefer:
                return r
            best = best or r
    return best


def _shown(v: Any, msg: str) -> bool:
    """Whether a key value (canonical encoding) appears in an error text: as itself, or for
    bytes (base64) in the hex form servers print (PostgreSQL \\x..., SQL Server 0x...)."""
    if str(v) in msg:
        return True
    if isinstance(v, str) and v:
        try:
            raw = base64.b64decode(v, validate=True)
        except (ValueError, TypeError):
            return False
        h = raw.hex()
        return ("\\x" + h) in msg or ("0x" + h) in msg.lower()
    return False


class Sender:
    """One connection's way of sending calls: chunked multi-statement batches."""

    def __init__(
        self, conn: Any, dialect: Dialect, planner: Planner, stream: int, set_apply: bool = False
    ) -> None:
        self.conn = conn
        self.dialect = dialect
        self.planner = planner
        self.stream = stream
        self.set_apply = set_apply
        self.round_trips = 0
        self.sql_seconds = 0.0
        self._compiled: dict[tuple[str, str], _CompiledPlan] = {}

    def _plan(self, r: Row) -> _CompiledPlan:
        key = (r["article"], r["op"])
        plan = self._compiled.get(key)
        if plan is None:
            plan = self._compiled[key] = _CompiledPlan(self.planner, *key)
        return plan

    def calls(self, rows: Sequence[Row], bulk: bool | None = None) -> list[tuple[Row, Call]]:
        """The call of every row (rows whose operation is not replicated are left out);
        set-based calls where ``bulk`` (default: the sender's ``set_apply``) allows.

        The same calls as ``Planner.plan`` (tests/unit/test_bench_sender.py checks it), through
        a per-(article, op) plan compiled once: planning is the stream's main CPU cost, on the
        same cores as the subscriber.
        """
        if self.set_apply if bulk is None else bulk:
            return bulk_calls(rows, self._plan)
        out = []
        for r in rows:
            call = self._plan(r).call(r)
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
            rows = [x for r, call in chunk for x in (call.rows if isinstance(call, BulkCall) else (r,))]
            culprit = attribute([r for r in rows if r is not None], c)
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


def _converter(t: SqlType) -> Callable[[Any], Any] | None:
    """``values.to_param`` for one type, decided once (None: the value binds as it is)."""
    kind = t.kind
    if kind == "decimal":
        return decimal.Decimal
    if kind == "bytes":
        return base64.b64decode
    if kind == "date":
        return dt.date.fromisoformat
    if kind in ("datetime", "datetimeoffset"):
        return dt.datetime.fromisoformat
    if kind == "time":
        return dt.time.fromisoformat
    return None


class _CompiledPlan:
    """``plan.calls.call_params`` for one article and operation with its decisions taken once:
    column converters, parameter order, bitmaps per changed-column set. Updates and deletes
    take the key from ``key_before`` (the key text of the before image, values.key_text),
    so the before image is parsed only where XCALL passes it whole."""

    def __init__(self, planner: Planner, article_name: str, op: str) -> None:
        a: Article = planner.articles[article_name]
        self.planner = planner
        self.article = a
        self.op = op
        self.syntax = a.delivery(op).syntax
        # Procedure calls are compiled; any other delivery (NONE, SQL statements) is the
        # planner's own business.
        self.fast = self.syntax in _COMPILED
        self.sql = planner.call_sql(a, op) if self.fast else None
        cols = a.replicated
        self.cols = [(c.name, _converter(c.type), c.type.is_lob) for c in cols]
        self.index = {c.name: i for i, c in enumerate(cols)}
        self.keys = [(c.name, _converter(c.type)) for c in a.key_columns]
        self.bitmaps: dict[tuple[str, ...], bytes] = {}
        dialect = planner.dialect
        self.set_sql = dialect.set_call_sql(a, op) if dialect.set_eligible(a, op) else None
        self.mask_name = dialect.set_mask_name(a)
        self.mask_key = json.dumps(self.mask_name)
        self.names = [c.name for c in cols]
        self.masks: dict[tuple[str, ...] | None, str] = {}

    def mask(self, row: Row) -> str:
        """An update's changed-column mask for the set procedure ('1' = set the column)."""
        changed = tuple(row["changed"] or ()) if self.syntax != Syntax.CALL else None
        m = self.masks.get(changed)
        if m is None:
            chosen = set(self.names) if changed is None else set(changed)
            m = self.masks[changed] = "".join("1" if n in chosen else "0" for n in self.names)
        return m

    def _pk(self, row: Row, before: dict[str, Any] | None) -> tuple[Any, ...]:
        kb = row.get("key_before")
        if kb is not None and before is None:
            values = _loads(kb)
            return tuple(
                v if v is None or f is None else f(v) for (_, f), v in zip(self.keys, values, strict=True)
            )
        assert before is not None
        return tuple(_conv(f, before[n]) for n, f in self.keys)

    def _image(self, image: dict[str, Any]) -> tuple[Any, ...]:
        return tuple([_conv(f, image.get(n)) for n, f, _ in self.cols])

    def call(self, row: Row) -> Call | None:
        sql = self.sql
        if sql is None:
            return self.planner.plan(row["article"], self.op, row["before"], row["after"], row["changed"])
        op, syntax = self.op, self.syntax
        if op == "I":
            return Call(sql, self._image(_loads(row["after"])))
        if syntax == Syntax.XCALL:
            before = _loads(row["before"])
            old = tuple([None if lob else _conv(f, before.get(n)) for n, f, lob in self.cols])
            if op == "D":
                return Call(sql, old)
            return Call(sql, old + self._image(_loads(row["after"])))
        pk = self._pk(row, None if row.get("key_before") is not None else _loads(row["before"]))
        if op == "D":
            return Call(sql, pk)
        after = _loads(row["after"])
        if syntax == Syntax.SCALL:
            changed = tuple(row["changed"] or ())
            vals: list[Any] = [None] * len(self.cols)
            cols, index = self.cols, self.index
            for n in changed:
                i = index[n]
                vals[i] = _conv(cols[i][1], after.get(n))
            return Call(sql, (*vals, *pk, self._bitmap(changed)))
        new = self._image(after)
        if syntax == Syntax.MCALL:
            return Call(sql, (*new, *pk, self._bitmap(tuple(row["changed"] or ()))))
        return Call(sql, new + pk)

    def _bitmap(self, changed: tuple[str, ...]) -> bytes:
        b = self.bitmaps.get(changed)
        if b is None:
            b = self.bitmaps[changed] = bitmap(self.article, changed)
        return b


_COMPILED = (Syntax.CALL, Syntax.SCALL, Syntax.MCALL, Syntax.XCALL)


def _conv(f: Callable[[Any], Any] | None, v: Any) -> Any:
    return v if v is None or f is None else f(v)


_loads = json.JSONDecoder().decode  # json.loads without its per-call argument checks


SkipRule = Callable[[Failure], bool]
SHARE_FIELDS = (
    "lsn",
    "xact_seqno",
    "xact_index",
    "article",
    "op",
    "before",
    "after",
    "changed",
    "key_before",
    "key_after",
    "stream",
    "round",
)


def slim(rows: Sequence[Row]) -> list[Row]:
    """The fields a share needs to travel to another stream (the fallback gathers them)."""
    return [{k: row.get(k) for k in SHARE_FIELDS} for row in rows]


def send_with_policy(
    sender: Sender, calls: Sequence[tuple[Row, Call]], tail: Sequence[Call], skip: SkipRule
) -> tuple[list[tuple[Row, Failure]], Failure | None]:
    """Send the calls then the tail; on an error the error policy skips (-SkipErrors), roll
    back and apply one call at a time in savepoints, skipping those errors. Returns (skipped,
    the failure that stands or None); on None the transaction is open for the caller to commit."""
    failure = sender.send(calls, tail)
    if failure is None or not skip(failure) or failure.connection_lost:
        return [], failure
    sender.conn.rollback()
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

    def attempt() -> tuple[list[tuple[Row, Failure]], Failure | None]:
        skipped, f = send_with_policy(sender, calls, tail, skip)
        if f is not None and f.transient:
            sender.conn.rollback()
            raise _Transient(f.message)
        return skipped, f

    try:
        return retry.retrying(lambda e: isinstance(e, _Transient))(attempt)
    except _Transient as e:
        return [], Failure(
            "deadlock", "", f"transient errors persisted after {retry.attempts} attempts: {e}", None, 0, True
        )
