"""What the summary, the timeline, the reset log, the schedule's size and the conflicts read
from a run's events: digested where the events are made, no Spark job of its own.

Each stream task digests the events it yields with pyarrow (vectorized): the outcome,
conflict and round tallies, the few rows read as they are (``log``, ``stream``, ``conflict``,
and the timeline's ``share`` and ``round`` rows), the independent model's per-(stream, round,
outcome) segments, and the schedule's size. The part travels back to the driver in a Spark
accumulator with the task's result (:func:`digesting`), and the driver merges the parts. These
were nine jobs (each a scheduling round trip: ~0.6 s of a warm 1,000-command run), then one
job over the written events (~0.15 s warm, ~0.4 s on a new JVM); events made elsewhere (a
statement's rows) are still digested in one job (:func:`digest_events`). What grows with the
stream (the commands' own events, the steps' lsns) is tallied on the executors, never collected.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import AccumulatorParam
from pyspark.sql import DataFrame

TIMELINE_ROUNDS = 2000  # rounds drawn in the timeline (the first ones; every round is in the events)
# a task's steps (the schedule's rows) travel in its digest while their texts take at most
# this many characters; past it the schedule reads them in a job of its own
STEP_CHARS = 1_000_000
STEP_COLUMNS = ("stream", "round", "outcome", "class", "code", "message", "n", "t_exec", "t_commit")
_KEPT = (
    "kind",
    "lsn",
    "stream",
    "round",
    "outcome",
    "class",
    "message",
    "n",
    "seconds",
    "t_exec",
    "t_commit",
)


@dataclass
class EventDigest:
    # (kind, outcome, class) -> count, for kinds command and batch (a batch counts its n),
    # conflict and round
    tallies: dict[tuple[str, str | None, str | None], int] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)  # the few rows, as they are
    # (stream, round, outcome) -> [t_exec min, t_commit-or-t_exec max, commands, class]
    segments: dict[tuple[Any, Any, Any], list[Any]] = field(default_factory=dict)
    steps: int = 0
    numbered_steps: int = 0
    step_chars: int = 0
    # every step (STEP_COLUMNS), where each task's were few enough to travel; else None
    step_rows: list[dict[str, Any]] | None = field(default_factory=list)

    def of(self, *kinds: str) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["kind"] in kinds]

    def add(self, part: dict[str, Any]) -> None:
        """Merge one task's part (:func:`_part`) in."""
        for kind, outcome, cls, c in part.get("tallies", ()):
            k = (kind, outcome, cls)
            self.tallies[k] = self.tallies.get(k, 0) + int(c)
        self.rows.extend(part.get("rows", ()))
        for stream, rnd, outcome, lo, hi, c, cls in part.get("segments", ()):
            seg = self.segments.get((stream, rnd, outcome))
            if seg is None:
                self.segments[(stream, rnd, outcome)] = [lo, hi, int(c), cls]
                continue
            seg[0] = min((t for t in (seg[0], lo) if t is not None), default=None)
            seg[1] = max((t for t in (seg[1], hi) if t is not None), default=None)
            seg[2] += int(c)
            seg[3] = seg[3] if seg[3] is not None else cls
        steps, numbered, chars = part.get("steps", (0, 0, 0))
        if self.step_rows is not None and steps:
            rows = part.get("step_rows")
            self.step_rows = None if rows is None else self.step_rows + rows
        self.steps += int(steps)
        self.numbered_steps += int(numbered)
        self.step_chars += int(chars)

    def part(self, step_chars: int = STEP_CHARS) -> dict[str, Any]:
        """This digest as one part (what :meth:`add` merges): the steps' rows only while their
        texts take at most ``step_chars`` characters."""
        out: dict[str, Any] = {}
        if self.tallies:
            out["tallies"] = [[k, o, c, n] for (k, o, c), n in self.tallies.items()]
        if self.rows:
            out["rows"] = self.rows
        if self.segments:
            out["segments"] = [[s, r, o, *v] for (s, r, o), v in self.segments.items()]
        if self.steps:
            out["steps"] = [self.steps, self.numbered_steps, self.step_chars]
            if self.step_rows is not None and self.step_chars <= step_chars:
                out["step_rows"] = self.step_rows
        return out

    @classmethod
    def of_parts(cls, parts: Iterable[dict[str, Any]]) -> EventDigest:
        d = cls()
        for p in parts:
            d.add(p)
        return d


def _groups(t: pa.Table, columns: tuple[str, ...]) -> tuple[list[tuple[Any, ...]], Any]:
    """The distinct values of ``columns`` in ``t`` (NULL a value of its own) and each row's
    group among them: a group-by in numpy. pyarrow's own (``Table.group_by``) runs in Acero,
    whose import pulls pyarrow.dataset and pandas into every worker (~0.35 s of a new
    process's first job)."""
    codes = []
    values = []
    for name in columns:
        enc = pc.dictionary_encode(t.column(name).combine_chunks())
        idx = pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64) + 1
        codes.append(idx)
        values.append([None, *enc.dictionary.to_pylist()])
    keys, groups = np.unique(np.stack(codes), axis=1, return_inverse=True)
    distinct = [tuple(values[j][int(keys[j, i])] for j in range(len(columns))) for i in range(keys.shape[1])]
    return distinct, np.asarray(groups).reshape(-1)


def _part(batches: Iterator[pa.RecordBatch], step_chars: int = STEP_CHARS) -> dict[str, Any]:
    got = list(batches)
    if not got:
        return {}
    t = pa.Table.from_batches(got)
    if t.num_rows == 0:
        return {}
    kind = t.column("kind")
    out: dict[str, Any] = {}
    counted = t.filter(pc.is_in(kind, pa.array(["command", "batch", "conflict", "round"])))
    if counted.num_rows:
        one = pc.if_else(
            pc.equal(counted.column("kind"), "batch"),
            pc.fill_null(counted.column("n"), 0),
            pa.scalar(1, pa.int64()),
        )
        keys, groups = _groups(counted, ("kind", "outcome", "class"))
        sums = np.bincount(groups, weights=one.to_numpy(zero_copy_only=False), minlength=len(keys))
        out["tallies"] = [[*k, int(c)] for k, c in zip(keys, sums, strict=True)]
    timed = pc.is_valid(t.column("t_exec"))
    early = pc.or_kleene(pc.is_null(t.column("round")), pc.less(t.column("round"), TIMELINE_ROUNDS))
    few = pc.or_kleene(
        pc.is_in(kind, pa.array(["log", "stream", "conflict", "lag"])),
        pc.and_kleene(pc.and_kleene(pc.is_in(kind, pa.array(["share", "round"])), timed), early),
    )
    kept = t.filter(pc.fill_null(few, False)).select(list(_KEPT))
    if kept.num_rows:
        out["rows"] = kept.to_pylist()
    own = t.filter(
        pc.fill_null(
            pc.and_kleene(
                pc.and_kleene(pc.is_in(kind, pa.array(["batch", "command"])), timed),
                pc.less(t.column("round"), TIMELINE_ROUNDS),
            ),
            False,
        )
    )
    if own.num_rows:
        keys, groups = _groups(own, ("stream", "round", "outcome"))
        n = len(keys)
        t_exec = own.column("t_exec").to_numpy(zero_copy_only=False).astype(float)
        t_commit = own.column("t_commit")
        t_end = pc.coalesce(t_commit, own.column("t_exec")).to_numpy(zero_copy_only=False).astype(float)
        c = pc.coalesce(own.column("n"), pa.scalar(1, pa.int64())).to_numpy(zero_copy_only=False)
        lo = np.full(n, np.inf)
        hi = np.full(n, -np.inf)
        np.minimum.at(lo, groups, t_exec)
        np.maximum.at(hi, groups, t_end)
        sums = np.bincount(groups, weights=c, minlength=n)
        # the first class of a group in row order, NULLs skipped (as F.first(ignorenulls=True))
        cls = own.column("class").to_pylist()
        first: list[Any] = [None] * n
        for g, v in zip(groups.tolist(), cls, strict=True):
            if v is not None and first[g] is None:
                first[g] = v
        out["segments"] = [
            [*k, float(lo[i]), float(hi[i]), int(sums[i]), first[i]] for i, k in enumerate(keys)
        ]
    steps = t.filter(pc.equal(kind, "step"))
    if steps.num_rows:
        chars = int(pc.sum(pc.utf8_length(steps.column("message"))).as_py() or 0)
        out["steps"] = [steps.num_rows, steps.num_rows - steps.column("n").null_count, chars]
        if chars <= step_chars:
            out["step_rows"] = steps.select(list(STEP_COLUMNS)).to_pylist()
    return out


DIGEST_ROWS = 50_000  # events a stream task holds before it digests them (pyarrow, per call)

Batches = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


class Parts(AccumulatorParam):  # type: ignore[type-arg]  # pyspark's class is not generic
    """A Spark accumulator of digest parts: ``[(partition, task attempt id, part)]``."""

    def zero(self, value: list[Any]) -> list[Any]:
        return []

    def addInPlace(self, value1: list[Any], value2: list[Any]) -> list[Any]:  # noqa: N802 - pyspark's name
        value1.extend(value2)
        return value1


def digesting(task: Batches, parts: Any, step_chars: int = STEP_CHARS) -> Batches:
    """``task`` whose events are digested as it yields them, the digest added to ``parts`` (an
    accumulator of :class:`Parts`) when it ends. Held in chunks of ``DIGEST_ROWS`` events, so
    a task never keeps its whole output."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        d = EventDigest()
        held: list[pa.RecordBatch] = []
        rows = 0

        def digest() -> None:
            d.add(_part(iter(held), step_chars))
            if d.step_chars > step_chars:  # the schedule reads them from the events instead
                d.step_rows = None

        for b in task(batches):
            held.append(b)
            rows += b.num_rows
            if rows >= DIGEST_ROWS:
                digest()
                held, rows = [], 0
            yield b
        if held:
            digest()
        ctx = TaskContext.get()
        assert ctx is not None
        parts.add([(ctx.partitionId(), ctx.taskAttemptId(), d.part(step_chars))])

    return run


def collected(parts: list[Any]) -> EventDigest:
    """The digest of a stage's tasks, from its accumulator's value: each partition's part from
    its last attempt (a retried task or stage reports again; attempt ids only grow)."""
    last: dict[int, tuple[int, dict[str, Any]]] = {}
    for partition, attempt, part in parts:
        seen = last.get(partition)
        if seen is None or attempt > seen[0]:
            last[partition] = (attempt, part)
    return EventDigest.of_parts(p for _, p in last.values())


def digest_events(events: DataFrame, step_chars: int = STEP_CHARS) -> EventDigest:
    """The digest of ``events`` (EVENT_SCHEMA), in one Spark job; a task's steps travel in it
    while their texts take at most ``step_chars`` characters."""

    def digest(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield pa.RecordBatch.from_pydict({"part": [json.dumps(_part(batches, step_chars))]})

    d = EventDigest()
    for row in events.mapInArrow(digest, "part string").collect():
        d.add(json.loads(row["part"]))
    return d
