"""Exactly once under a kill, for streams cut into segments by barrier events: a schema change
(add a column, then rows that use it), an rs_sqldml statement over the threshold, an applied
procedure, and a filtered subscription whose rows migrate in and out of its where clause.

Each stream (``tests/support/segmented.py``: ~70 transactions of increments, inserts and
deletes around the event) is applied by ``applier run`` killed with SIGKILL at a seeded moment
inside the event's segment (:mod:`applier.failpoints`): the event sent with its watermark and
not committed (``barrier.apply``), committed with the next segment not begun
(``barrier.applied``), or a round in the middle of the segment after it (``apply.commit``).
What the kill left is checked (the event rolled back, or recorded; segment 1's progress part
way), then ``--resume`` on the same subscriber finishes the run. It must converge, and an audit
trigger (custom SQL) must hold every row change of the stream once: the statement and the
procedure add to ``n`` (``n = n + delta``), so applied twice they would show in the rows too.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from tests.support.killing import run_killed
from tests.support.segmented import Case, Stream, make_case
from tests.support.subscriber import rows

pytestmark = pytest.mark.integration

STREAMS, BATCH = 2, 4
MID = -1  # the pass of apply.commit in the middle of segment 1 (computed from the stream)


def _stream(kind: str, name: str, seed: int) -> Stream:
    s = Stream(name, seed)
    s.traffic(30)
    if kind in ("ddl", "filtered"):
        s.add_column()
    elif kind == "sqldml":
        s.statement()
    else:
        s.procedure(1, 40, 5)
    s.traffic(30)
    return s


def _even(image: dict[str, Any]) -> bool:  # the filtered subscription's where clause: n % 2 = 0
    return bool(image["n"] % 2 == 0)


def _id(kind: str, point: str, at: int) -> str:
    return f"{kind}-{point}@{'mid-segment-1' if at == MID else at}"


# (stream, fail point, pass): one moment per stream in make test-faults, three more in
# make test-e2e (about 15 s each on an idle machine: a run cut into segments takes more Spark jobs
# than a plain one).
FAULTS = [
    ("ddl", "barrier.apply", 1),  # ALTER TABLE, the procedures and the watermark sent, not committed
    ("sqldml", "barrier.applied", 1),  # the statement committed: a resume must not run it again
    ("proc", "apply.commit", MID),  # the procedure committed, the rows after it half applied
    ("filtered", "apply.commit", MID),  # a filtered subscription, rows migrating, after a schema change
]
MORE = [
    ("ddl", "apply.commit", MID),  # rows that use the added column, half applied
    ("sqldml", "barrier.apply", 1),  # the statement executed, not committed
    ("proc", "barrier.applied", 1),
]
CASES = [pytest.param(*c, marks=pytest.mark.faults, id=_id(*c)) for c in FAULTS] + [
    pytest.param(*c, marks=pytest.mark.e2e, id=_id(*c)) for c in MORE
]


def _rounds(transactions: int) -> int:
    return math.ceil(transactions / BATCH)


def _case(pg: Any, tmp: Path, kind: str, name: str, seed: int) -> Case:
    return make_case(pg, tmp, kind, name, _stream(kind, name, seed), STREAMS, BATCH, _even)


def _progress(target: Any, subscription: str) -> list[tuple[Any, ...]]:
    """(stream, last_round) of the progress rows named ``subscription``."""
    sql = "SELECT stream, last_round FROM applier.progress WHERE subscription = ? ORDER BY stream"
    return rows(target, sql, subscription)


def _has_extra(target: Any, name: str) -> bool:
    sql = "SELECT 1 FROM information_schema.columns WHERE table_schema = 'dbo' AND table_name = ? AND column_name = 'extra'"
    return bool(rows(target, sql, name))


@pytest.mark.parametrize(("kind", "point", "at"), CASES)
def test_kill_9_in_a_segment_then_resume_applies_each_change_once(spark, pg, tmp_path, kind, point, at):
    name = f"b_{kind}_{point.replace('.', '_')}_{max(at, 0)}"
    case = _case(pg, tmp_path, kind, name, seed=len(name) + at)
    if at == MID:  # every stream passes apply.commit once a round (no round resets here)
        at = STREAMS * (_rounds(case.stream.transactions_before()) + _rounds(30) // 2)
    run_killed(case.args, point, at, tmp_path)

    # what the kill left: the event rolled back with its watermark, or both committed; segment 1
    # part way
    barrier = _progress(case.target, f"{name}/barriers")
    if point == "barrier.apply":
        assert barrier == [], barrier
        if kind == "ddl":
            assert not _has_extra(case.target, name), "the ALTER TABLE outlived the kill of its transaction"
    else:
        assert barrier == [(0, 1)], barrier
        assert _has_extra(case.target, name) == (kind in ("ddl", "filtered"))
    if point == "apply.commit":
        last = max(r for _, r in _progress(case.target, f"{name}/1"))
        assert last < _rounds(30) - 1, last

    sub, report = case.run(spark, pg, resume=True)
    assert report["outcomes"].get("resumed", 0) > 0, report["outcomes"]  # segment 0 was not applied again
    case.check(sub, report)


@pytest.mark.e2e
def test_a_rerun_killed_in_its_first_segment_forgets_the_earlier_runs_barriers(spark, pg, tmp_path):
    """The same stream run again where it ran whole before (a CI rerun: the install recreates the
    table from the snapshot), killed in segment 0 once the phase ``applying`` is recorded: the
    resume must run the statement again, not take the earlier run's barrier row for this run's
    (the increments would be lost)."""
    name = "b_rerun_sqldml"
    case = _case(pg, tmp_path, "sqldml", name, seed=7)
    sub, report = case.run(spark, pg, resume=False)
    case.check(sub, report)
    assert _progress(case.target, f"{name}/barriers") == [(0, 1)]
    run_killed(case.args, "apply.commit", 1, tmp_path)
    assert _progress(case.target, f"{name}/barriers") == []
    sub, report = case.run(spark, pg, resume=True)
    case.check(sub, report)
