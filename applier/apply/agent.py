"""The ``agent`` apply model: the Distribution Agent with -SubscriptionStreams N.

One Spark barrier stage with N tasks; task i is stream i and holds one pyodbc connection for
the whole run. The stream is cut into rounds of CommitBatchSize transactions. In a round
every stream applies its share without committing and all meet at a barrier
(``BarrierTaskContext.allGather``). If every stream succeeded, all write their progress row
in the same transaction and commit, then meet again so that no stream starts the next round
before the others committed. If any stream failed (a conflict, or a lock wait past the lock
timeout), all roll back; the shares are gathered and stream 0 re-applies the whole round in
commit order on its single connection — "Number of subscription streams has been reset from
N to 1" — retrying transient errors with tenacity; the next round resumes with N streams.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from applier import failpoints
from applier.apply.events import RESET_LOG, Events
from applier.apply.failure import Failure, Row
from applier.apply.gate import GateClient, meet
from applier.apply.job import StreamJob
from applier.apply.pace import LagRecorder, agree_start, commits_of, wait_until
from applier.apply.policy import LostCommit, apply_serially, commit_surely, reapply, send_with_policy
from applier.apply.rendezvous import Address
from applier.apply.sender import Sender, slim
from applier.apply.share import Share, Shares
from applier.apply.streams import Streamed, Task, run_streams
from applier.errors import TargetError
from applier.plan.calls import Call, Planner
from applier.plan.reading import with_values
from applier.targets.progress import ProgressTable

log = logging.getLogger("applier.apply")


def _done_round(sender: Sender, progress: ProgressTable, job: StreamJob, stream: int) -> int:
    """The last round this stream committed (-1: none), read on a new connection again when
    the connection is lost."""
    seen = sender.read(lambda: progress.read(sender.conn.cursor(), job.subscription))
    return seen[stream][1] if stream in seen else -1


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """A stream task allocates a dict per command and keeps little alive: the cyclic garbage
    collector's default thresholds made it scan ~2x the time the rows take to build."""
    before = gc.get_threshold()
    gc.set_threshold(50_000, 20, 100)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def stream_task(job: StreamJob, rendezvous: Address) -> Task:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        with fewer_collections():
            yield from _stream(batches)

    def _stream(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import BarrierTaskContext

        cpu_start = time.process_time()  # the task's own CPU, in its figures (cpu_seconds)
        ctx = BarrierTaskContext.get()
        s = ctx.partitionId()
        dialect = job.endpoint.dialect
        planner = Planner(dialect, job.articles)
        ev = Events(batches=job.batch_events)
        t_start = time.perf_counter()
        sender = Sender(
            job.endpoint.connect(job.lock_timeout_ms),
            dialect,
            planner,
            s,
            job.set_apply,
            reconnect=lambda: job.endpoint.connect(job.lock_timeout_ms),
        )
        progress = ProgressTable(dialect)
        done_round = _done_round(sender, progress, job, s)
        upsert = progress.upsert_sql
        # procedure calls are planned from the value columns (a fed stream's batches have them)
        incoming = Shares(batches if job.set_apply else with_values(batches, job.articles))
        rdv = meet(rendezvous, s)
        sender.attach(rdv if isinstance(rdv, GateClient) else None)
        wait_s = 0.0
        take_cpu = 0.0  # CPU spent taking the shares and planning their calls
        n_cmds = 0
        live = job.live and not isinstance(rdv, GateClient)
        start = (
            agree_start(rdv.all_gather, pace=job.pace, done=done_round)
            if job.pace is not None
            else time.time()
        )
        lags = LagRecorder(job.pace, start) if job.pace is not None else None

        def tell(
            state: str,
            r: int,
            rows: Sequence[Row] = (),
            lagged: Sequence[float] = (),
            **more: Any,
        ) -> None:
            """A live report of this stream: its state, and what a commit carried (its commands
            but those the error policy skipped, its transactions, their lags)."""
            if live:
                skipped_n = int(more.pop("skipped", 0))
                msg: dict[str, Any] = {"state": state, "round": r, **more}
                if rows:
                    msg["commands"] = len(rows) - skipped_n
                    msg["xacts"] = sorted(set(_xacts(rows)))  # a transaction may span streams
                if lagged:
                    msg["lag"] = [round(x, 6) for x in lagged]
                rdv.report(msg)

        def lag_events() -> None:
            if lags is not None:
                for e in lags.drain():
                    ev.add("lag", **e)

        def skip(f: Failure) -> bool:
            return job.error_policy.skips(f.cls, f.code)

        def progress_calls(stream: int, rows: Sequence[Row], rnd: int) -> list[Call]:
            """The watermark of a commit of ``rows`` (and its audit, with audit_commands)."""
            lsns = rows.values("lsn") if isinstance(rows, Share) else [r["lsn"] for r in rows]
            up = Call(upsert, progress.upsert_params(job.subscription, stream, max(lsns), rnd))
            return [up, *job.audit_calls(stream, rnd, lsns)]

        def commit(r: int, share: Sequence[Row], calls: Sequence[tuple[Row, Call]]) -> None:
            """Commit this stream's share of a round every stream applied. A connection lost at
            the commit may or may not have committed: the progress row says. A share the
            server rolled back is applied again alone on a new connection (the other streams'
            shares of the round committed, and none of them depended on it: they all applied
            at once without a conflict)."""

            def again() -> Failure | None:
                log.warning(
                    "stream %d lost its connection at the commit of round %d: applying it again", s, r
                )
                return apply_serially(sender, calls, progress_calls(s, share, r), job.retry, skip)[1]

            try:
                commit_surely(
                    sender,
                    lambda: not share or _done_round(sender, progress, job, s) >= r,
                    again,
                    job.retry.attempts,
                    f"stream {s}: round {r}",
                )
            except LostCommit as e:
                raise TargetError(str(e)) from None

        def take(r: int) -> tuple[Sequence[Row], Sequence[tuple[Row, Call]] | None]:
            """Round r's share and, unless an earlier run committed it, its calls."""
            nonlocal take_cpu
            t_cpu = time.process_time()
            try:
                return _take(r)
            finally:
                take_cpu += time.process_time() - t_cpu

        def _take(r: int) -> tuple[Sequence[Row], Sequence[tuple[Row, Call]] | None]:
            share = incoming.take_round(r)
            if len(share):
                streams = share.values("stream")
                if streams.count(s) != len(streams):
                    row = share[next(i for i, x in enumerate(streams) if x != s)]
                    raise RuntimeError(f"row lsn {row['lsn']} of stream {row['stream']} reached task {s}")
            return share, (sender.share_calls(share) if r > done_round else None)

        fatal = False
        ahead: tuple[Sequence[Row], Sequence[tuple[Row, Call]] | None] | None = None
        for r in range(job.rounds):
            share, planned_calls = ahead if ahead is not None else take(r)
            ahead = None
            if r <= done_round:
                for row in share:
                    ev.command(row, "resumed")
                share = []
            if fatal:
                for row in share:
                    ev.command(row, "not_applied")
                continue
            n_cmds += len(share)
            sender.round = r
            if job.pace is not None and r > done_round:
                wait_until(start + job.pace.round_due(r))
            tell("applying", r)
            t_round = time.perf_counter()
            t_exec = time.time()
            calls = planned_calls if planned_calls is not None else sender.calls(share)
            skipped, failure = send_with_policy(
                sender, calls, progress_calls(s, share, r) if share else [], skip
            )
            if r + 1 < job.rounds:
                # The next share's calls are built while the other streams finish this round.
                ahead = take(r + 1)
            if failure is not None:
                tell("conflict", r, cls=failure.cls)
                ev.refused(failure.lsn, s, r, failure)
            for row, f in skipped:
                ev.refused(row["lsn"], s, r, f, "skipped")
            failpoints.reach("apply.share")
            t_wait = time.perf_counter()
            gathered = rdv.all_gather(json.dumps(failure.to_json() if failure else None))
            wait_s += time.perf_counter() - t_wait
            failures = [Failure.from_json(d) for d in map(json.loads, gathered) if d]
            if not failures:
                commit(r, share, calls)
                failpoints.reach("apply.commit")
                t_done = time.time()
                ev.committed(share, skipped, "applied", t_exec, t_done)
                ev.add(
                    "share",
                    stream=s,
                    round_=r,
                    outcome="committed",
                    n=len(share),
                    t_exec=t_exec,
                    t_commit=t_done,
                )
                t_wait = time.perf_counter()
                if lags is None:
                    rdv.barrier()  # everyone committed before anyone starts the next round
                    lagged: list[float] = []
                else:
                    # the same meeting, with when each stream committed which transactions:
                    # a transaction is applied when its last part is (stream 0 records it)
                    held = sorted(set(_xacts(share))) if share else []
                    lags.part(s, held, t_done, r)
                    parts = [json.loads(m) for m in rdv.all_gather(json.dumps([t_done, held]))]
                    lagged = lags.whole(commits_of(parts), r) if s == 0 else []
                    lag_events()
                wait_s += time.perf_counter() - t_wait
                tell(
                    "committed",
                    r,
                    share,
                    lagged,
                    skipped=len(skipped),
                    seconds=round(time.perf_counter() - t_round, 6),
                )
                if s == 0:
                    ev.add(
                        "round",
                        round_=r,
                        outcome="parallel",
                        n=None,
                        seconds=time.perf_counter() - t_round,
                        t_exec=t_exec,
                        t_commit=time.time(),
                    )
                ev.steps(s, sender.steps)
                yield from ev.drain()
                continue
            # -- reset to one stream --------------------------------------------------
            with contextlib.suppress(Exception):  # a lost connection cannot roll back; the server did
                sender.rollback()
            if failure is not None and failure.connection_lost:
                sender.renew()  # a lost connection in a parallel round is a reset, not a failure
            ev.add(
                "share",
                stream=s,
                round_=r,
                outcome="conflict" if failure is not None else "rolled_back",
                cls=failure.cls if failure is not None else None,
                n=len(share),
                t_exec=t_exec,
                t_commit=time.time(),
            )
            for row in share:
                if failure is not None and row["lsn"] == failure.lsn:
                    ev.conflict(row, failure, t_exec)
                else:
                    ev.command(row, "rolled_back")
            shares = rdv.all_gather(json.dumps(slim(share)))
            result: dict[str, Any] | None = None
            tell("reapplying" if s == 0 else "waiting", r)
            if s == 0:
                message = RESET_LOG.format(n=job.streams)
                # Said once, by the run's summary (the events keep it); here only for -v.
                log.info(
                    "%s (round %d: %s)", message, r, ", ".join(f"stream {f.stream} {f.cls}" for f in failures)
                )
                merged = sorted((row for sh in shares for row in json.loads(sh)), key=lambda x: x["lsn"])
                result = _reapply(sender, merged, job, r, skip, ev)
                if not result["fatal"] and merged:
                    lagged = []
                    if lags is not None:
                        for st in {int(x) for x in _streams(merged)}:
                            lags.part(
                                st,
                                [x for x, y in zip(_xacts(merged), _streams(merged), strict=True) if y == st],
                                result["t"],
                                r,
                            )
                        lagged = lags.whole(commits_of([(result["t"], _xacts(merged))]), r)
                        lag_events()
                    tell("reapplied", r, merged, lagged, skipped=result.get("skipped", 0))
                ev.add("log", round_=r, message=message, cls=",".join(sorted({f.cls for f in failures})))
                ev.add(
                    "round",
                    round_=r,
                    outcome="fatal" if result["fatal"] else "reset",
                    cls=",".join(sorted({f.cls for f in failures})),
                    n=len(merged),
                    seconds=time.perf_counter() - t_round,
                    t_exec=t_exec,
                    t_commit=time.time(),
                )
            outcome = rdv.all_gather(json.dumps(result))
            fatal = bool(json.loads(outcome[0])["fatal"])
            ev.steps(s, sender.steps)
            yield from ev.drain()
        tell("done", job.rounds)
        rdv.close()
        sender.close()
        ev.finished(
            s,
            n_cmds,
            time.perf_counter() - t_start,
            sender.figures(
                barrier_wait_seconds=round(wait_s, 4),
                cpu_seconds=round(time.process_time() - cpu_start, 4),
                take_cpu_seconds=round(take_cpu, 4),
            ),
        )
        ev.steps(s, sender.steps)
        yield from ev.drain()

    return run


def _reapply(
    sender: Sender, merged: list[Row], job: StreamJob, r: int, skip: Callable[[Failure], bool], ev: Events
) -> dict[str, Any]:
    """Stream 0 applies the whole round in commit order on its one connection."""
    t_exec = time.time()
    calls = sender.calls(merged, bulk=False)  # row by row: each error names its command
    by_stream: dict[int, list[Row]] = {}
    for row in merged:
        by_stream.setdefault(row["stream"], []).append(row)
    progress = ProgressTable(sender.dialect)
    tail = [
        call
        for st, rows in sorted(by_stream.items())
        for call in (
            Call(
                progress.upsert_sql,
                progress.upsert_params(job.subscription, st, max(x["lsn"] for x in rows), r),
            ),
            *job.audit_calls(st, r, [x["lsn"] for x in rows]),
        )
    ]

    def landed() -> bool:
        seen = progress.read(sender.conn.cursor(), job.subscription)
        return all(st in seen and seen[st][1] >= r for st in by_stream)

    skipped, failure = reapply(
        sender, calls, tail, job.retry, skip, landed, f"round {r} on the single connection"
    )
    if failure is None:
        failpoints.reach("apply.reapplied")
        t_done = time.time()
        ev.committed(merged, skipped, "reapplied", t_exec, t_done)
        ev.add(
            "share",
            stream=sender.stream,
            round_=r,
            outcome="reapplied",
            n=len(merged),
            t_exec=t_exec,
            t_commit=t_done,
        )
        return {"fatal": False, "t": t_done, "skipped": len(skipped)}
    with contextlib.suppress(Exception):  # a lost connection cannot roll back; the server did
        sender.rollback()
    ev.add(
        "share",
        stream=sender.stream,
        round_=r,
        outcome="failed",
        cls=failure.cls,
        n=len(merged),
        t_exec=t_exec,
        t_commit=time.time(),
    )
    for row in merged:
        if row["lsn"] == failure.lsn:
            ev.command(row, "failed", cls=failure.cls, code=failure.code, message=failure.message)
        else:
            ev.command(row, "not_applied")
    # No command failed: transient errors (a lock held from outside, a lost connection) outlasted
    # the retry policy; the run stopped, nothing says the subscriber is wrong. Else the command's
    # error, by its lsn: the report's reason names it.
    outcome = "stopped" if failure.lsn is None and failure.transient else "failed"
    ev.add("log", round_=r, outcome=outcome, cls=failure.cls, code=failure.code, message=failure.said())
    log.error("round %d failed on the single connection: %s", r, failure.message)
    return {"fatal": True, "message": failure.message}


def _xacts(rows: Sequence[Row]) -> list[int]:
    return rows.values("xact_index") if isinstance(rows, Share) else [r["xact_index"] for r in rows]


def _streams(rows: Sequence[Row]) -> list[int]:
    return rows.values("stream") if isinstance(rows, Share) else [r["stream"] for r in rows]


def run_agent(spark: SparkSession, laid_out: DataFrame, job: StreamJob, out_path: str) -> Streamed:
    """Apply ``laid_out`` (partition i = stream i's rows with their rounds) with the agent model."""
    return run_streams(spark, laid_out, job, stream_task, out_path)
