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

import json
import math
from typing import Any

import pytest

import applier
from applier.report.json import subscription_report
from tests.integration.helpers import rows, table_exists
from tests.support.killing import audited, once_each, run_killed
from tests.support.segmented import CONFIG, FILTERED, PG_CUSTOM, Stream, everything

pytestmark = [pytest.mark.integration, pytest.mark.faults]

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


def _even(image: dict[str, Any]) -> bool:  # the filtered subscription's where clause
    return image["n"] % 2 == 0


# (stream, fail point, pass)
CASES = [
    ("ddl", "barrier.apply", 1),  # ALTER TABLE, the procedures and the watermark sent, not committed
    ("ddl", "apply.commit", MID),  # rows that use the added column, half applied
    ("sqldml", "barrier.apply", 1),  # the statement executed, not committed
    ("sqldml", "barrier.applied", 1),  # committed: a resume must not run it again
    ("proc", "barrier.applied", 1),
    ("proc", "apply.commit", MID),
    ("filtered", "apply.commit", MID),  # a filtered subscription, rows migrating, after a schema change
]


def _rounds(transactions: int) -> int:
    return math.ceil(transactions / BATCH)


@pytest.mark.parametrize(("kind", "point", "at"), CASES, ids=[f"{k}-{p}@{a}" for k, p, a in CASES])
def test_kill_9_in_a_segment_then_resume_applies_each_change_once(spark, pg, tmp_path, kind, point, at):
    name = f"b_{kind}_{point.replace('.', '_')}_{max(at, 0)}"
    stream = _stream(kind, name, seed=len(name) + at)
    changes, snapshot = stream.write(tmp_path)
    custom = tmp_path / f"{name}.sql"
    custom.write_text(PG_CUSTOM.format(name=name), encoding="utf-8")
    cfg_text = CONFIG.format(name=name, streams=STREAMS, batch=BATCH)
    where = everything
    target: Any = pg.endpoint()
    if kind == "filtered":
        target = pg.subscriber(name)
        cfg_text += FILTERED.format(name=name, target=json.dumps(target.connection_string), where="n % 2 = 0")
        where = _even
    cfg_file = tmp_path / f"{name}.toml"
    cfg_file.write_text(cfg_text, encoding="utf-8")
    if at == MID:  # every stream passes apply.commit once a round (no round resets here)
        at = STREAMS * (_rounds(stream.transactions_before()) + _rounds(30) // 2)
    args = ["--config", str(cfg_file), "--changes", str(changes), "--snapshot", str(snapshot)]
    args += ["--custom-sql", str(custom), "--target", pg.connection_string()]
    run_killed(args, point, at, tmp_path)

    # what the kill left: the event rolled back with its watermark, or both committed, or
    # segment 1 part way
    barrier = rows(
        target, "SELECT stream, last_round FROM applier.progress WHERE subscription = ?", f"{name}/barriers"
    )
    added = bool(
        rows(
            target,
            "SELECT 1 FROM information_schema.columns WHERE table_schema = 'dbo' AND table_name = ? "
            "AND column_name = 'extra'",
            name,
        )
    )
    if point == "barrier.apply":
        assert barrier == [], barrier
        if kind == "ddl":
            assert not added, "the ALTER TABLE outlived the kill of its transaction"
    else:
        assert barrier == [(0, 1)], barrier
        if kind in ("ddl", "filtered"):
            assert added
    if point == "apply.commit":
        seg1 = rows(
            target, "SELECT max(last_round) FROM applier.progress WHERE subscription = ?", f"{name}/1"
        )
        assert seg1[0][0] is not None and seg1[0][0] < _rounds(30) - 1, seg1

    cfg = applier.load_config(cfg_file)
    result = applier.run(
        cfg,
        pg if kind == "filtered" else target,
        spark=spark,
        changes=changes,
        snapshot=snapshot,
        custom_sql=[custom],
        resume=True,
    )
    sub = result.subscriptions[0]
    report = subscription_report(sub, result.settings)
    assert report["verdict"] == "converged", (report["reason"], report.get("divergent", [])[:3])
    assert report["outcomes"].get("resumed", 0) > 0, report["outcomes"]  # segment 0 was not applied again
    if kind == "sqldml":
        assert [s["sent_as"] for s in sub.statements] == ["statement"], sub.statements
    if kind == "proc":
        assert [p["sent_as"] for p in sub.procedures] == ["procedure"], sub.procedures
    assert table_exists(target, "dbo", f"audit_{name}")
    wrong = once_each(stream.expected(where), audited(target, f'"dbo"."audit_{name}"'))
    assert wrong is None, wrong
    if kind != "filtered":  # the statement's and the procedure's increments, once
        got = dict(rows(target, f'SELECT id, n FROM "dbo"."{name}" WHERE id <= 60'))
        assert got == {k: v["n"] for k, v in stream.final().items() if k <= 60}
    if kind == "filtered":  # rows did migrate both ways
        routing = sub.routing
        assert routing.get("U>D", 0) > 0 and routing.get("U>I", 0) > 0, routing
