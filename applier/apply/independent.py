"""The ``independent`` apply model: streams commit on their own, transaction by transaction.

A naive parallel applier, for exposing reorderings. Each stream applies its transactions in
commit order, each in its own database transaction with its progress row. A transaction that
conflicts is rolled back and deferred, with everything after it in its stream; when all
streams are done, stream 0 applies the deferred work on its one connection in commit order.

With ``writeset`` partitioning a transaction carries ``deps``, (stream, lsn) pairs: it is
applied only once every such stream's progress row shows that lsn committed. A dependency
that never commits (its stream deferred it) ends the wait after ``DEPENDENCY_WAIT_S``: the
transaction is deferred too.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from applier import failpoints
from applier.apply.events import Events
from applier.apply.failure import Failure, Row
from applier.apply.gate import GateClient, meet
from applier.apply.job import StreamJob
from applier.apply.policy import reapply, send_with_policy
from applier.apply.rendezvous import Address
from applier.apply.sender import Sender, slim
from applier.apply.streams import Streamed, Task, run_streams
from applier.plan.calls import Call, Planner
from applier.targets.progress import ProgressTable

DEPENDENCY_WAIT_S = 30.0


def _transactions(batches: Iterator[pa.RecordBatch]) -> Iterator[list[Row]]:
    """The stream's rows grouped by transaction (rows arrive in lsn order)."""
    current: list[Row] = []
    for b in batches:
        for row in b.to_pylist():
            if current and row["xact_index"] != current[0]["xact_index"]:
                yield current
                current = []
            current.append(row)
    if current:
        yield current


class _Progress:
    """Committed lsn per stream, read from the progress table when a dependency is not yet met."""

    def __init__(self, sender: Sender, table: ProgressTable, subscription: str) -> None:
        self.sender, self.table, self.subscription = sender, table, subscription
        self.seen: dict[int, int] = {}

    def refresh(self) -> None:
        """Read on the sender's connection; on a new one when it is lost (:meth:`Sender.read`)."""
        sender = self.sender
        rows = sender.read(lambda: self.table.read(sender.conn.cursor(), self.subscription))
        self.seen = {s: lsn for s, (lsn, _r) in rows.items()}

    def wait(self, deps: Sequence[dict[str, int]], timeout_s: float) -> bool:
        def met() -> bool:
            return all(self.seen.get(d["stream"], -1) >= d["lsn"] for d in deps)

        if not deps or met():
            return True
        deadline = time.monotonic() + timeout_s
        pause = 0.0005
        while True:
            self.refresh()
            if met():
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.02)


def independent_task(job: StreamJob, rendezvous: Address) -> Task:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import BarrierTaskContext

        ctx = BarrierTaskContext.get()
        s = ctx.partitionId()
        dialect = job.endpoint.dialect
        ev = Events()

        def reconnect() -> Any:
            return job.endpoint.connect(job.lock_timeout_ms)

        sender = Sender(reconnect(), dialect, Planner(dialect, job.articles), s, job.set_apply, reconnect)
        table = ProgressTable(dialect)
        progress = _Progress(sender, table, job.subscription)
        progress.refresh()
        done = progress.seen.get(s, -1)
        rdv = meet(rendezvous, s)
        sender.attach(rdv if isinstance(rdv, GateClient) else None)

        def skip(f: Failure) -> bool:
            return job.error_policy.skips(f.cls, f.code)

        deferred: list[Row] = []
        t_start = time.perf_counter()
        n_cmds = 0
        rdv.barrier()  # all streams start together
        for txn in _transactions(batches):
            if txn[-1]["lsn"] <= done:
                for row in txn:
                    ev.command(row, "resumed")
                continue
            n_cmds += len(txn)
            if deferred:
                deferred.extend(txn)
                for row in txn:
                    ev.command(row, "deferred")
                continue
            deps = txn[0].get("deps") or []
            if not progress.wait(deps, DEPENDENCY_WAIT_S):
                ev.add(
                    "conflict",
                    lsn=txn[0]["lsn"],
                    stream=s,
                    round_=txn[0]["round"],
                    cls="dependency",
                    message=f"dependencies {deps} not committed within {DEPENDENCY_WAIT_S:.0f} s",
                )
                deferred.extend(txn)
                for row in txn:
                    ev.command(row, "deferred")
                continue
            sender.round = txn[0]["round"]
            calls = sender.calls(txn)
            tail = [
                Call(
                    table.upsert_sql,
                    table.upsert_params(job.subscription, s, txn[-1]["lsn"], txn[-1]["xact_index"]),
                ),
                *job.audit_calls(s, txn[-1]["xact_index"], [r["lsn"] for r in txn]),
            ]
            t_exec = time.time()
            skipped, failure = send_with_policy(sender, calls, tail, skip)
            failpoints.reach("apply.share")
            if failure is None:
                failure = _commit(sender, progress, s, txn[-1]["lsn"])
            if failure is None:
                failpoints.reach("apply.commit")
                ev.committed(txn, skipped, "applied", t_exec, time.time())
                for row, f in skipped:
                    ev.refused(row["lsn"], s, row["round"], f, "skipped")
            else:
                with contextlib.suppress(Exception):  # a lost connection cannot roll back
                    sender.rollback()
                if failure.connection_lost:  # a new connection; the transaction is deferred
                    sender.renew()
                ev.refused(failure.lsn, s, txn[0]["round"], failure)
                for row in txn:
                    if row["lsn"] == failure.lsn:
                        ev.conflict(row, failure, t_exec)
                    ev.command(row, "deferred")
                deferred.extend(txn)
            ev.steps(s, sender.steps)
            yield from ev.drain()
        shares = rdv.all_gather(json.dumps(slim(deferred)))
        if s == 0:
            merged = sorted((row for sh in shares for row in json.loads(sh)), key=lambda x: x["lsn"])
            if merged:
                _apply_deferred(sender, merged, job, ev, skip)
        rdv.close()
        sender.close()
        ev.finished(s, n_cmds, time.perf_counter() - t_start, sender.figures(deferred=len(deferred)))
        ev.steps(s, sender.steps)
        yield from ev.drain()

    return run


def _commit(sender: Sender, progress: _Progress, stream: int, lsn: int) -> Failure | None:
    """Commit one transaction; a connection lost at the commit may or may not have committed
    (the progress row says): None when it did, else the failure (the transaction is deferred)."""
    try:
        sender.commit()
        return None
    except Exception as e:  # noqa: BLE001 - pyodbc's errors, classified below
        c = sender.classify(e)
        if not c.connection_lost:
            raise
    sender.renew()
    progress.refresh()
    if progress.seen.get(stream, -1) >= lsn:
        return None
    return Failure(c.cls.value, c.code, c.message[:400], None, stream, True, True)


def _apply_deferred(
    sender: Sender, merged: list[Row], job: StreamJob, ev: Events, skip: Callable[[Failure], bool]
) -> None:
    """Stream 0 applies the deferred transactions in commit order, one commit each."""
    table = ProgressTable(sender.dialect)
    by_txn: dict[int, list[Row]] = {}
    for row in merged:
        by_txn.setdefault(row["xact_index"], []).append(row)
    ev.add(
        "log",
        message=f"{len(merged)} deferred commands in {len(by_txn)} transactions applied on one connection",
    )
    fatal: Failure | None = None

    for x, txn in sorted(by_txn.items()):
        if fatal is not None:
            for row in txn:
                ev.command(row, "not_applied")
            continue
        calls = sender.calls(txn, bulk=False)
        by_stream: dict[int, int] = {}
        for row in txn:
            by_stream[row["stream"]] = max(by_stream.get(row["stream"], -1), row["lsn"])
        tail = [
            Call(table.upsert_sql, table.upsert_params(job.subscription, st, lsn, txn[-1]["xact_index"]))
            for st, lsn in sorted(by_stream.items())
        ] + job.audit_calls(0, txn[-1]["xact_index"], [r["lsn"] for r in txn])

        def landed(by_stream: dict[int, int] = by_stream) -> bool:
            seen = table.read(sender.conn.cursor(), job.subscription)
            return all(st in seen and seen[st][0] >= lsn for st, lsn in by_stream.items())

        t_exec = time.time()
        skipped, failure = reapply(sender, calls, tail, job.retry, skip, landed, f"transaction {x}")
        if failure is None:
            failpoints.reach("apply.reapplied")
            ev.committed(txn, skipped, "reapplied", t_exec, time.time())
            continue
        with contextlib.suppress(Exception):  # a lost connection cannot roll back; the server did
            sender.rollback()
        fatal = failure
        for row in txn:
            ev.command(
                row,
                "failed" if row["lsn"] == failure.lsn else "not_applied",
                cls=failure.cls,
                code=failure.code,
                message=failure.message,
            )
        ev.add("round", outcome="fatal", cls=failure.cls, message=failure.message)
        # transient errors that outlasted the retries stop the run; a command's error fails it
        outcome = "stopped" if failure.lsn is None and failure.transient else "failed"
        ev.add("log", outcome=outcome, cls=failure.cls, code=failure.code, message=failure.said())


def run_independent(spark: SparkSession, laid_out: DataFrame, job: StreamJob, out_path: str) -> Streamed:
    """Apply ``laid_out`` (partition i = stream i's rows) with the independent model."""
    return run_streams(spark, laid_out, job, independent_task, out_path)
