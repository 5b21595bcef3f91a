"""The ceiling: the same procedure calls sent by a minimal pyodbc loop, no Spark, no planning.

The calls are planned before the clock starts (the same :class:`~applier.plan.calls.Planner`
text and values applier sends), split by key into N streams and cut into the same rounds
(CommitBatchSize transactions) and the same chunks (the dialect's parameter limit per round
trip). Each stream is its own process (as Spark's Python workers are, so no GIL is shared),
holds one connection with applier's session set-up, sends its chunks and commits once per
round. Nothing else: no rendezvous between streams, no events, no progress rows.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from applier.bench.stream import Change, key_bucket
from applier.config import Config
from applier.dialects import DIALECTS
from applier.plan.calls import Call, Planner

Chunk = tuple[str, list[Any]]  # one round trip: statements joined by ";\n", their values


@dataclass(frozen=True)
class PlannedCall:
    round: int
    key: tuple[str, str]  # (article, key text): what the split hashes
    call: Call


def plan_stream(config: Config, dialect_name: str, stream: Iterable[Change]) -> list[PlannedCall]:
    """Plan every command once (untimed); round = transaction index // CommitBatchSize."""
    planner = Planner(DIALECTS[dialect_name](), config.articles)
    batch = config.run.commit_batch_size
    out: list[PlannedCall] = []
    index, last_xact = -1, None
    for c in stream:
        if c[1] != last_xact:
            index, last_xact = index + 1, c[1]
        call = planner.plan(c[3], c[4], c[6], c[7], c[8])
        if call is not None:
            out.append(PlannedCall(index // batch, (c[3], c[9] or c[10]), call))
    return out


def chunks_per_stream(planned: Sequence[PlannedCall], n: int, max_params: int) -> list[list[list[Chunk]]]:
    """[stream][round] -> chunks, cut as applier's Sender cuts them (parameter limit)."""
    rounds = (planned[-1].round + 1) if planned else 0
    calls: list[list[list[Call]]] = [[[] for _ in range(rounds)] for _ in range(n)]
    for p in planned:
        calls[key_bucket(p.key[0], p.key[1], n)][p.round].append(p.call)
    texts: dict[tuple[str, ...], str] = {}  # shared text objects: pickled once per stream

    def chunk(cs: list[Call]) -> Chunk:
        parts = tuple(c.sql for c in cs)
        sql = texts.setdefault(parts, ";\n".join(parts))
        return sql, [v for c in cs for v in c.params]

    out: list[list[list[Chunk]]] = []
    for s in range(n):
        per_round: list[list[Chunk]] = []
        for share in calls[s]:
            cut: list[Chunk] = []
            cur: list[Call] = []
            nparams = 0
            for c in share:
                if cur and nparams + len(c.params) > max_params:
                    cut.append(chunk(cur))
                    cur, nparams = [], 0
                cur.append(c)
                nparams += len(c.params)
            if cur:
                cut.append(chunk(cur))
            per_round.append(cut)
        out.append(per_round)
    return out


def _stream_main(
    cs: str,
    dialect_name: str,
    lock_timeout_ms: int,
    rounds: list[list[Chunk]],
    ready: Any,
    results: Any,
    stream: int,
) -> None:
    from applier.targets.connection import connect

    try:
        conn = connect(cs, DIALECTS[dialect_name](), lock_timeout_ms)
        cur = conn.cursor()
        ready.wait()
        t0, c0 = time.perf_counter(), time.process_time()
        n = 0
        for per_round in rounds:
            for sql, params in per_round:
                cur.execute(sql, params)
                n += 1
            conn.commit()
        t1, c1 = time.perf_counter(), time.process_time()
        conn.close()
        results.put((stream, t0, t1, n, None, c1 - c0))
    except Exception as e:  # noqa: BLE001 - reported to the parent, which raises
        results.put((stream, 0.0, 0.0, 0, f"{type(e).__name__}: {e}", 0.0))


@dataclass(frozen=True)
class CeilingResult:
    seconds: float
    round_trips: int
    stream_seconds: tuple[float, ...]
    client_cpu_seconds: float  # the stream processes' own CPU while sending


def run_ceiling(
    cs: str, dialect_name: str, per_stream: list[list[list[Chunk]]], lock_timeout_ms: int = 2000
) -> CeilingResult:
    """Send every stream's chunks from its own process; wall time from the common start to
    the last commit (CLOCK_MONOTONIC is shared by the processes of one machine)."""
    ctx = mp.get_context("spawn")
    n = len(per_stream)
    ready = ctx.Barrier(n)
    results = ctx.Queue()
    procs = [
        ctx.Process(
            target=_stream_main,
            args=(cs, dialect_name, lock_timeout_ms, per_stream[s], ready, results, s),
            daemon=True,
        )
        for s in range(n)
    ]
    for p in procs:
        p.start()
    got = [results.get(timeout=3600) for _ in range(n)]
    for p in procs:
        p.join(timeout=60)
    errors = [g[4] for g in got if g[4]]
    if errors:
        raise RuntimeError("ceiling loop failed: " + "; ".join(errors))
    start = min(g[1] for g in got)
    end = max(g[2] for g in got)
    return CeilingResult(
        end - start,
        sum(g[3] for g in got),
        tuple(round(g[2] - g[1], 3) for g in sorted(got)),
        sum(g[5] for g in got),
    )


def load_rows(cs: str, dialect_name: str, config: Config, rows: Iterable[tuple[str, str]]) -> int:
    """Insert snapshot rows (article, image JSON) in multi-row INSERTs; returns the count."""
    import json

    from applier.targets.connection import connect

    dialect = DIALECTS[dialect_name]()
    arts = {a.name: a for a in config.articles}
    conn = connect(cs, dialect, 30000)
    cur = conn.cursor()
    pending: dict[str, list[Any]] = {}
    total = 0

    def flush(name: str) -> None:
        vals = pending.pop(name, [])
        if not vals:
            return
        a = arts[name]
        width = len(a.replicated)
        one = "(" + ", ".join(dialect.param_marker(c.type) for c in a.replicated) + ")"
        cols = ", ".join(dialect.quote(c) for c in a.column_names)
        sql = f"INSERT INTO {dialect.table(a)} ({cols}) VALUES " + ", ".join([one] * (len(vals) // width))
        cur.execute(sql, vals)

    for name, image in rows:
        a = arts[name]
        img = json.loads(image)
        vals = pending.setdefault(name, [])
        vals.extend(dialect.to_param(c.type, v) for c in a.replicated for v in (img.get(c.name),))
        total += 1
        if len(vals) >= min(dialect.MAX_PARAMS_PER_BATCH, 1000 * len(a.replicated)):
            flush(name)
    for name in list(pending):
        flush(name)
    conn.commit()
    conn.close()
    return total
