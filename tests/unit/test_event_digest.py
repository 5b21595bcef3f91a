"""The events' digest (applier.apply.digest): what one task makes of its part of the events,
and the merge of the parts, against the same figures counted row by row."""

from __future__ import annotations

import random

import pyarrow as pa

from applier.apply.digest import TIMELINE_ROUNDS, EventDigest, _part
from applier.apply.events import _ARROW


def _event(**kw):  # type: ignore[no-untyped-def]
    return {f.name: kw.get(f.name) for f in _ARROW}


def _events(seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(400):
        kind = rng.choice(["command", "batch", "conflict", "round", "share", "log", "stream", "step"])
        rnd = rng.choice([None, 0, 1, 5, TIMELINE_ROUNDS - 1, TIMELINE_ROUNDS, TIMELINE_ROUNDS + 3])
        out.append(
            _event(
                kind=kind,
                lsn=i,
                stream=rng.choice([None, 0, 1, 2]),
                round=rnd,
                outcome=rng.choice([None, "applied", "reapplied", "parallel", "reset"]),
                **{"class": rng.choice([None, "row_not_found", "deadlock"])},
                message=rng.choice([None, "", "x" * rng.randrange(1, 40), '{"a": 1}']),
                n=rng.choice([None, 1, 3, 100]),
                seconds=rng.random(),
                t_exec=rng.choice([None, 1000 + rng.random()]),
                t_commit=rng.choice([None, 1001 + rng.random()]),
            )
        )
    return out


def _digest(rows: list[dict], parts: int) -> EventDigest:
    d = EventDigest()
    for k in range(parts):
        chunk = rows[k::parts]
        batches = [
            pa.RecordBatch.from_pylist(chunk[i : i + 50], schema=_ARROW) for i in range(0, len(chunk), 50)
        ]
        d.add(_part(iter(batches)))
    return d


def test_the_digest_counts_what_row_by_row_counting_counts_in_any_number_of_parts() -> None:
    rows = _events(7)
    one, four = _digest(rows, 1), _digest(rows, 4)
    tallies: dict = {}
    for r in rows:
        if r["kind"] in ("command", "batch", "conflict", "round"):
            k = (r["kind"], r["outcome"], r["class"])
            tallies[k] = tallies.get(k, 0) + ((r["n"] or 0) if r["kind"] == "batch" else 1)
    assert one.tallies == four.tallies == tallies
    kept = [
        r["lsn"]
        for r in rows
        if r["kind"] in ("log", "stream", "conflict")
        or (
            r["kind"] in ("share", "round")
            and r["t_exec"] is not None
            and (r["round"] is None or r["round"] < TIMELINE_ROUNDS)
        )
    ]
    assert sorted(r["lsn"] for r in four.rows) == sorted(kept)
    steps = [r for r in rows if r["kind"] == "step"]
    assert (four.steps, four.numbered_steps, four.step_chars) == (
        len(steps),
        sum(r["n"] is not None for r in steps),
        sum(len(r["message"] or "") for r in steps),
    )
    segs: dict = {}
    for r in rows:
        if (
            r["kind"] in ("batch", "command")
            and r["t_exec"] is not None
            and r["round"] is not None
            and r["round"] < TIMELINE_ROUNDS
        ):
            s = segs.setdefault((r["stream"], r["round"], r["outcome"]), [r["t_exec"], None, 0, None])
            s[0] = min(s[0], r["t_exec"])
            end = r["t_commit"] if r["t_commit"] is not None else r["t_exec"]
            s[1] = end if s[1] is None else max(s[1], end)
            s[2] += r["n"] if r["n"] is not None else 1
    want = {k: v[:3] for k, v in segs.items()}
    assert {k: v[:3] for k, v in four.segments.items()} == want == {k: v[:3] for k, v in one.segments.items()}


def test_an_empty_part_adds_nothing() -> None:
    d = EventDigest()
    d.add(_part(iter([])))
    assert (d.tallies, d.rows, d.segments, d.steps) == ({}, [], {}, 0)


def _fields(d: EventDigest) -> tuple:  # type: ignore[type-arg]
    rows = sorted(d.rows, key=lambda r: r["lsn"])
    return (d.tallies, rows, d.segments, d.steps, d.numbered_steps, d.step_chars, d.step_rows)


def test_a_digest_as_one_part_merges_to_the_same_digest() -> None:
    """A stream task sends its digest as one part (EventDigest.part): merged, it is the digest."""
    d = _digest(_events(11), 3)
    again = EventDigest.of_parts([d.part()])
    assert _fields(again) == _fields(d)
    # steps too long to travel: the part leaves their rows out, the merge knows it
    short = EventDigest.of_parts([d.part(step_chars=d.step_chars - 1)])
    assert short.step_rows is None and short.steps == d.steps


class _Accumulator:
    """What a Spark accumulator does for a task: keeps what it adds."""

    def __init__(self) -> None:
        self.value: list = []  # type: ignore[type-arg]

    def add(self, v: list) -> None:  # type: ignore[type-arg]
        self.value.extend(v)


def test_a_task_s_events_are_digested_as_it_yields_them(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """digesting(): the batches pass through unchanged, in chunks of DIGEST_ROWS, and the part
    added to the accumulator is the digest of everything the task yielded; of a partition's
    attempts, the last one counts."""
    import applier.apply.digest as digest_mod
    from applier.apply.digest import collected, digesting

    rows = _events(5)
    batches = [pa.RecordBatch.from_pylist(rows[i : i + 30], schema=_ARROW) for i in range(0, len(rows), 30)]
    ctx = type("Ctx", (), {"partitionId": lambda self: 2, "taskAttemptId": lambda self: 17})()
    monkeypatch.setattr("pyspark.TaskContext.get", classmethod(lambda cls: ctx))
    monkeypatch.setattr(digest_mod, "DIGEST_ROWS", 70)  # several chunks
    acc = _Accumulator()
    out = list(digesting(lambda it: iter(batches), acc)(iter([])))
    assert out == batches
    ((partition, attempt, part),) = acc.value
    assert (partition, attempt) == (2, 17)
    assert _fields(EventDigest.of_parts([part])) == _fields(_digest(rows, 1))
    # an earlier attempt of partition 2 (reported before its retry) does not count twice
    stale = _digest(rows[:10], 1).part()
    other = _digest(rows[:5], 1).part()
    merged = collected([(2, 9, stale), *acc.value, (0, 3, other)])
    assert merged.tallies == EventDigest.of_parts([part, other]).tallies
