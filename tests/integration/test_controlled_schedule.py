"""Controlled schedules (``--schedule controlled``): the streams take turns at a gate on the
driver over real connections. One seed gives one interleaving and one outcome; locks are
real: a wait-for cycle among the streams is reported as a deadlock."""

from __future__ import annotations

import json
from typing import Any

import pytest

from applier.config.demo import demo_config
from applier.config.files import with_overrides
from tests.support.changes import key_update, write_jsonl
from tests.support.runs import config, run
from tests.support.subscriber import rows, table_ref

pytestmark = pytest.mark.integration


def _steps(result: Any) -> list[tuple[Any, ...]]:
    """The schedule without its timings."""
    return [
        (s["stream"], s["round"], s["kind"], tuple(s["lsns"]), json.dumps(s["result"], sort_keys=True))
        for s in result.subscriptions[0].schedule
    ]


def _outcome(result: Any) -> tuple[Any, ...]:
    sub = result.subscriptions[0]
    return (result.verdict.value, sub.conflict_events, tuple((d.article, d.key) for _, d in result.divergent))


@pytest.mark.e2e
def test_one_seed_five_runs_give_one_schedule_and_one_outcome(spark, target, tmp_path):
    # unique-shuffle: streams wait for each other's locks on a unique index (real lock waits).
    cfg = with_overrides(
        demo_config(),
        workload={"kind": "unique-shuffle", "transactions": 120, "initial_rows": 60},
        run={"streams": 3, "commit_batch_size": 20, "schedule": "controlled", "schedule_seed": 11},
    )
    runs = [run(spark, cfg, target, out_dir=tmp_path / f"run{i}")[0] for i in range(5)]
    schedules = [_steps(r) for r in runs]
    outcomes = [_outcome(r) for r in runs]
    assert len(schedules[0]) > 120
    assert sum(s.summary.resets for r in runs for s in r.subscriptions) > 0  # conflicts happened
    assert all(s == schedules[0] for s in schedules[1:])
    assert all(o == outcomes[0] for o in outcomes[1:])
    # the folder holds what replay needs, the schedule as it ran
    written = [json.loads(line) for line in (tmp_path / "run4" / "schedule.jsonl").read_text().splitlines()]
    assert [(s["stream"], s["kind"], s["lsns"]) for s in written] == [
        (s[0], s[2], list(s[3])) for s in schedules[4]
    ]
    assert json.loads((tmp_path / "run4" / "outcome.json").read_text())["verdict"] == outcomes[0][0]
    # another seed, another interleaving (random strategy: near certain over two seeds)
    other = [
        _steps(
            run(spark, cfg.replace(run=_with(cfg, schedule_seed=s, schedule_strategy="random")), target)[0]
        )
        for s in (1, 2)
    ]
    assert any(o != schedules[0] for o in other)


def _with(cfg: Any, **kw: Any) -> Any:
    import dataclasses

    return dataclasses.replace(cfg.run, **kw)


def test_a_recorded_schedule_is_followed_again(spark, target, tmp_path):
    cfg = with_overrides(
        demo_config(),
        workload={"kind": "key-chain", "transactions": 100},
        run={
            "streams": 3,
            "commit_batch_size": 25,
            "schedule": "controlled",
            "schedule_seed": 5,
            "schedule_strategy": "random",
        },
    )
    first = run(spark, cfg, target, out_dir=tmp_path / "first")[0]
    again_cfg = cfg.replace(
        run=_with(cfg, schedule_strategy="recorded", schedule_file=str(tmp_path / "first" / "schedule.jsonl"))
    )
    again = run(spark, again_cfg, target)[0]
    assert _steps(again) == _steps(first)
    assert _outcome(again) == _outcome(first)


def test_a_wait_for_cycle_is_reported_as_a_deadlock(spark, target, tmp_path):
    """Two transactions update rows 1 and 2 in opposite orders on two streams (round-robin);
    the recorded order interleaves them so that each waits for the other."""
    table = "gate_deadlock"
    art = f"dbo.{table}"

    def upd(lsn: int, xact: int, key: int, v: str) -> dict[str, Any]:
        r = key_update(lsn, xact, art, key, key, v=v)
        r["before"]["v"] = "old"
        return r

    # xact 1 (stream 0): row 1 then row 2; xact 2 (stream 1): row 2 then row 1
    a0, b0, b1, a1 = 1 << 20 | 1, 1 << 20 | 2, 2 << 20 | 1, 2 << 20 | 2
    records = [upd(a0, 1, 1, "t1"), upd(b0, 1, 2, "t1"), upd(b1, 2, 2, "t2"), upd(a1, 2, 1, "t2")]
    for i, r in enumerate(records):
        r["command_id"] = i % 2 + 1
    changes = write_jsonl(tmp_path / "swap.jsonl", records)
    snap = write_jsonl(
        tmp_path / "snap.jsonl", [{"article": art, "image": {"id": k, "v": "old", "n": 0}} for k in (1, 2)]
    )
    order = write_jsonl(
        tmp_path / "order.jsonl",
        [{"kind": "exec", "lsns": [x]} for x in (a0, b1, b0, a1)],
    )
    cfg = with_overrides(
        config(table, streams=2),
        run={
            "partition": "round-robin",
            "schedule": "controlled",
            "schedule_strategy": "recorded",
            "schedule_file": str(order),
        },
    )
    result, report = run(spark, cfg, target, changes=changes, snapshot=snap)
    conflicts = result.subscriptions[0].conflict_events
    # the stream that closed the cycle is the victim; its transaction aborted, stream 0 goes on
    assert conflicts == ((a1, 1, "deadlock"),)
    steps = result.subscriptions[0].schedule
    assert [s["lsns"] for s in steps if s["kind"] == "exec"][:4] == [[a0], [b1], [b0], [a1]]
    assert report["resets"] == 1 and result.verdict.value == "converged"
    # reapplied in commit order: xact 2 wrote last
    assert rows(target, f"SELECT id, v FROM {table_ref(target, table)} ORDER BY id") == [(1, "t2"), (2, "t2")]
