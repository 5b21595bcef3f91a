"""Whole runs on a T-SQL engine (the embedded Babelfish; SQL Server where Docker runs): the
documented key-chains hazard at N = 4, set-based apply through OPENJSON, the error policies,
exact blame with SQL Server's whole-transaction rollback, and controlled schedules with a
recorded replay.

What differs on Babelfish is read from the dialect's flags (README, "SQL Server").
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pyodbc
import pytest

from applier.apply.bulk import BulkCall
from applier.apply.failure import Failure
from applier.apply.install import add_constraints, install
from applier.apply.sender import Sender
from applier.config import ErrorPolicy, RunSettings, Workload, demo_config, parse_config
from applier.config.files import with_overrides
from applier.plan.calls import Planner
from applier.targets.connection import connect
from tests.support.changes import key_update, write_jsonl
from tests.support.runs import run
from tests.support.subscriber import rows


def _q(endpoint: Any, schema: str, table: str) -> str:
    return endpoint.dialect.qualified(schema, table)


# -- the hazard the agent exists for -------------------------------------------------------
def test_key_chains_at_four_streams_raise_20598_reset_and_converge(spark, sqlserver) -> None:
    """The demo's workload: key updates in chains (k1 -> k2 -> k3) on key-hash streams. The
    second link reaches another stream first, finds no row, the generated sp_MSupd_ raises
    20598, the round is rolled back and re-applied on one connection, N = 4 resumes."""
    cfg = demo_config()
    cfg = cfg.replace(
        workload=dataclasses.replace(cfg.workload, transactions=600, seed=42),
        run=dataclasses.replace(cfg.run, subscription="tsql-key-chains", streams=4),
    )
    result, report = run(spark, cfg, sqlserver)
    assert report["verdict"] == "converged" and result.exit_code == 0, report["reason"]
    assert report["conflicts"]["row_not_found"] >= 1 and report["conflicts"]["other"] == 0
    assert report["resets"] >= 1
    assert any("reset from 4 to 1" in e["message"] for e in report["reset_log"])
    assert report["outcomes"].get("reapplied", 0) > 0
    assert report["outcomes"]["applied"] + report["outcomes"]["reapplied"] == report["commands"]
    assert report["rounds_parallel"] >= 1  # the other rounds ran on 4 streams


# -- set-based apply through OPENJSON ... WITH --------------------------------------------
def test_a_set_based_run_applies_through_the_set_procedures_and_converges(spark, sqlserver) -> None:
    cfg = demo_config()
    cfg = cfg.replace(
        workload=dataclasses.replace(cfg.workload, transactions=400, seed=7),
        run=dataclasses.replace(cfg.run, set_apply=True, subscription="tsql-set-run"),
    )
    result, report = run(spark, cfg, sqlserver)
    assert report["verdict"] == "converged" and result.exit_code == 0, report["reason"]
    assert report["resets"] >= 1 and report["conflicts"]["row_not_found"] >= 1
    # the set procedures exist: the rows went through OPENJSON, not row by row
    procs = rows(
        sqlserver,
        "SELECT p.name FROM sys.procedures p JOIN sys.schemas s ON s.schema_id = p.schema_id "
        "WHERE s.name = N'applier' AND p.name LIKE N'%set%' ORDER BY 1",
    )
    assert {r[0].split("_set_")[0] for r in procs} >= {"insert", "update", "delete"}, procs


# -- error policies -------------------------------------------------------------------------
def _policy_cfg(policy: str, name: str) -> Any:
    return demo_config().replace(
        workload=Workload(kind="key-chain", transactions=192, initial_rows=0, seed=11),
        run=RunSettings(
            subscription=name,
            streams=4,
            partition="key-hash",
            model="agent",
            lock_timeout_ms=300,
            error_policy=ErrorPolicy.parse(policy),
        ),
    )


@pytest.mark.parametrize("policy", ["continue-on-data-consistency-errors", "skip:20598"])
def test_skip_policies_skip_20598_under_xact_abort_and_count_the_rows_they_lost(
    spark, sqlserver, policy
) -> None:
    """The skipped calls are undone to their savepoint (XACT_ABORT OFF while the policy applies
    calls one by one), the rest of the transaction commits: no reset, and each skipped second
    link leaves its row at the middle key, exactly as counted."""
    result, report = run(spark, _policy_cfg(policy, f"tsql-{policy.replace(':', '-')}"), sqlserver)
    assert report["skipped"] > 0 and report["resets"] == 0
    assert report["verdict"] == "diverged" and result.exit_code == 1
    assert report["divergent_rows"] == 2 * report["skipped"]
    assert report["skips"]["rows_lost"] == report["divergent_rows"]


def test_the_strict_policy_resets_instead_and_converges(spark, sqlserver) -> None:
    result, report = run(spark, _policy_cfg("strict", "tsql-strict"), sqlserver)
    assert report["skipped"] == 0 and report["resets"] >= 1
    assert report["verdict"] == "converged" and result.exit_code == 0


# -- exact blame ----------------------------------------------------------------------------
COLS = [
    {"name": "id", "type": "int", "key": True},
    {"name": "code", "type": "int"},
    {"name": "v", "type": "nvarchar(20)"},
]
DECOYS = (1, 2, 5, 8, 9, 20)


def _img(i: int, code: int | None = None, v: str = "x") -> dict[str, Any]:
    return {"id": i, "code": i if code is None else code, "v": v}


def _row(lsn: int, art: Any, op: str, before: Any = None, after: Any = None, changed: Any = None) -> dict:
    def key(img: dict[str, Any] | None) -> str | None:
        return None if img is None else json.dumps([img["id"]])

    return {
        "lsn": lsn,
        "xact_seqno": lsn,
        "xact_index": 0,
        "article": art.name,
        "op": op,
        "before": None if before is None else json.dumps(before),
        "after": None if after is None else json.dumps(after),
        "changed": changed,
        "key_before": key(before),
        "key_after": key(after),
        "stream": 0,
        "round": 0,
    }


class _Table:
    """A table holding the decoy keys, its procedures and unique constraint, and a sender."""

    def __init__(
        self, endpoint: Any, table: str, set_apply: bool = False, lock_timeout_ms: int = 2000
    ) -> None:
        self.endpoint, self.d = endpoint, endpoint.dialect
        arts = [{"name": f"dbo.{table}", "columns": COLS, "unique": [["code"]]}]
        self.art = parse_config({"articles": arts}, "<blame>").articles[0]
        install(endpoint, [self.art], f"blame-{table}", set_apply=set_apply)
        add_constraints(endpoint, [self.art])
        self.conn = connect(endpoint.connection_string, self.d, lock_timeout_ms)
        self.sender = Sender(self.conn, self.d, Planner(self.d, [self.art]), 3, set_apply)
        seed = [_row(100 + k, self.art, "I", after=_img(k)) for k in DECOYS]
        assert self.sender.send(self.sender.calls(seed)) is None
        self.conn.commit()

    def send(self, batch: list[dict[str, Any]]) -> Failure | None:
        failure = self.sender.send(self.sender.calls(batch))
        self.d.rollback(self.conn)  # as every caller does after a failure
        return failure

    def ids(self) -> list[int]:
        return [r[0] for r in rows(self.endpoint, f"SELECT id FROM {self.d.table(self.art)} ORDER BY 1")]


@pytest.fixture
def table(sqlserver):  # type: ignore[no-untyped-def]
    made: list[_Table] = []

    def make(name: str, **kw: Any) -> _Table:
        made.append(_Table(sqlserver, name, **kw))
        return made[-1]

    yield make
    for t in made:
        t.conn.close()


def test_the_culprit_of_a_chunk_is_found_by_applying_again(table) -> None:
    """SQL Server (and Babelfish) roll the whole transaction back under XACT_ABORT ON: no
    savepoint survives the error, so the chunk's commands are applied again one by one."""
    t = table("tblame_delete")
    a = t.art
    assert t.d.SAVEPOINT_SURVIVES_ERROR is False
    f = t.send([_row(1, a, "U", _img(1), _img(1, v="new"), ["v"]), _row(2, a, "D", before=_img(999))])
    assert f is not None
    assert (f.cls, f.code, f.lsn, f.located, f.stream) == ("row_not_found", "20598", 2, "rerun", 3)
    assert t.ids() == list(DECOYS)  # nothing of the chunk stayed

    batch = [_row(10 + i, a, "U", _img(k), _img(k, v=f"v{i}"), ["v"]) for i, k in enumerate(DECOYS * 20)]
    batch.insert(77, _row(5000, a, "U", _img(404), _img(404, v="gone"), ["v"]))
    f = t.send(batch)
    assert f is not None and (f.cls, f.lsn, f.located) == ("row_not_found", 5000, "rerun")


def test_the_culprit_of_a_set_based_call_is_found(table) -> None:
    s = table("tblame_set", set_apply=True)
    b = s.art
    batch = [_row(10 + k, b, "U", _img(k), _img(k, v="s"), ["v"]) for k in DECOYS]
    batch.insert(3, _row(777, b, "U", _img(31), _img(31, v="s"), ["v"]))
    calls = s.sender.calls(batch)
    assert len(calls) == 1 and isinstance(calls[0][1], BulkCall)
    f = s.send(batch)
    assert f is not None and (f.cls, f.code, f.lsn, f.located) == ("row_not_found", "20598", 777, "rerun")


def test_unique_index_and_primary_key_duplicates_are_told_apart_and_named(table) -> None:
    t = table("tblame_unique")
    a = t.art
    f = t.send(
        [
            _row(1, a, "U", _img(1), _img(1, v="ok"), ["v"]),
            _row(2, a, "U", _img(5), _img(5, code=8), ["code"]),  # code 8 is id 8's
            _row(3, a, "U", _img(9), _img(9, v="ok"), ["v"]),
        ]
    )
    assert f is not None and (f.cls, f.lsn, f.located) == ("unique_index", 2, "rerun")
    assert f.code in ("2601", "2627") and (f.constraint or "").casefold() == "uq_tblame_unique_0"
    f = t.send([_row(1, a, "U", _img(2), _img(2, v="ok"), ["v"]), _row(2, a, "I", after=_img(20, code=77))])
    assert f is not None and (f.cls, f.code, f.lsn, f.located) == ("duplicate_key", "2627", 2, "rerun")
    assert (f.constraint or "").casefold() == t.d.primary_key_name(a).casefold()
    f = t.send([_row(4, a, "I", after=_img(1))])
    assert f is not None and (f.cls, f.lsn, f.located) == ("duplicate_key", 4, "single")


def test_a_row_locked_from_outside_names_the_command_waiting_for_it(table, sqlserver) -> None:
    t = table("tblame_lock", lock_timeout_ms=300)
    a = t.art
    holder = pyodbc.connect(sqlserver.connection_string, autocommit=False)
    try:
        holder.cursor().execute(f"UPDATE {t.d.table(a)} SET [v] = [v] WHERE [id] = 8")
        batch = [_row(10 + i, a, "U", _img(k), _img(k, v="w"), ["v"]) for i, k in enumerate(DECOYS)]
        f = t.send(batch)
    finally:
        holder.rollback()
        holder.close()
    assert f is not None
    assert f.cls == "lock_timeout", f  # Babelfish: 33557097 with PostgreSQL's text
    assert (f.lsn, f.located) == (10 + DECOYS.index(8), "rerun")


# -- controlled schedules ---------------------------------------------------------------------
def _steps(result: Any) -> list[tuple[Any, ...]]:
    return [
        (s["stream"], s["round"], s["kind"], tuple(s["lsns"]), json.dumps(s["result"], sort_keys=True))
        for s in result.subscriptions[0].schedule
    ]


def _outcome(result: Any) -> tuple[Any, ...]:
    sub = result.subscriptions[0]
    return (result.verdict.value, sub.conflict_events, tuple((d.article, d.key) for _, d in result.divergent))


def test_a_controlled_schedule_is_recorded_and_replayed_step_for_step(spark, sqlserver, tmp_path) -> None:
    """The streams take turns at the gate over real TDS connections (the engine's lock table
    watched through the dialect's query); the recorded schedule, replayed, gives the same
    steps and the same outcome."""
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
    first = run(spark, cfg, sqlserver, out_dir=tmp_path / "first")[0]
    assert first.verdict.value == "converged"
    assert len(_steps(first)) > 100 and first.subscriptions[0].summary.resets > 0
    again_cfg = cfg.replace(
        run=dataclasses.replace(
            cfg.run, schedule_strategy="recorded", schedule_file=str(tmp_path / "first" / "schedule.jsonl")
        )
    )
    again = run(spark, again_cfg, sqlserver)[0]
    assert _steps(again) == _steps(first)
    assert _outcome(again) == _outcome(first)


def test_a_wait_for_cycle_between_two_streams_is_a_deadlock_and_converges(spark, sqlserver, tmp_path) -> None:
    """Two transactions update rows 1 and 2 in opposite orders on two streams, interleaved by a
    recorded order so that each waits for the other: a deadlock (SQL Server and Babelfish
    choose the victim themselves: the scheduler cancels nothing on a T-SQL engine), a reset,
    and the round re-applied in commit order."""
    table = "tgate_deadlock"
    art = f"dbo.{table}"

    def upd(lsn: int, xact: int, key: int, v: str) -> dict[str, Any]:
        r = key_update(lsn, xact, art, key, key, v=v)
        r["before"]["v"] = "old"
        return r

    a0, b0, b1, a1 = 1 << 20 | 1, 1 << 20 | 2, 2 << 20 | 1, 2 << 20 | 2
    records = [upd(a0, 1, 1, "t1"), upd(b0, 1, 2, "t1"), upd(b1, 2, 2, "t2"), upd(a1, 2, 1, "t2")]
    for i, r in enumerate(records):
        r["command_id"] = i % 2 + 1
    changes = write_jsonl(tmp_path / "swap.jsonl", records)
    snap = write_jsonl(
        tmp_path / "snap.jsonl", [{"article": art, "image": {"id": k, "v": "old", "n": 0}} for k in (1, 2)]
    )
    order = write_jsonl(tmp_path / "order.jsonl", [{"kind": "exec", "lsns": [x]} for x in (a0, b1, b0, a1)])
    cfg = parse_config(
        {
            "run": {
                "streams": 2,
                "commit_batch_size": 100,
                "subscription": table,
                "partition": "round-robin",
                "schedule": "controlled",
                "schedule_strategy": "recorded",
                "schedule_file": str(order),
                "lock_timeout_ms": 10000,  # longer than the deadlock detection: 1205 decides
            },
            "articles": [
                {
                    "name": art,
                    "columns": [
                        {"name": "id", "type": "int", "key": True},
                        {"name": "v", "type": "nvarchar(40)"},
                        {"name": "n", "type": "int"},
                    ],
                }
            ],
        },
        "<tsql deadlock>",
    )
    result, report = run(spark, cfg, sqlserver, changes=changes, snapshot=snap)
    conflicts = result.subscriptions[0].conflict_events
    assert len(conflicts) == 1 and conflicts[0][2] == "deadlock" and conflicts[0][0] in (b0, a1), conflicts
    steps = result.subscriptions[0].schedule
    assert [s["lsns"] for s in steps if s["kind"] == "exec"][:4] == [[a0], [b1], [b0], [a1]]
    assert report["resets"] == 1 and result.verdict.value == "converged"
    got = rows(sqlserver, f"SELECT [id], [v] FROM {_q(sqlserver, 'dbo', table)} ORDER BY [id]")
    assert got == [(1, "t2"), (2, "t2")]  # re-applied in commit order: xact 2 wrote last


# -- datetimeoffset: an instant, whatever offset its text has -------------------------------
_DTO_CONFIG = """
[run]
streams = 2
set_apply = {set_apply}
subscription = "{name}"

[[articles]]
name = "dbo.dto_rows"
columns = [
  {{ name = "id", type = "int", key = true }},
  {{ name = "at", type = "datetimeoffset(6)" }},
]
"""
# (key, text): offsets of both signs, a half-hour zone, microseconds, a NULL
_DTO_VALUES = [
    (1, "2024-03-10T01:59:59.999999-05:00"),
    (2, "2024-11-03T01:30:00+05:30"),
    (3, "1999-12-31T23:59:59.000001+14:00"),
    (4, None),
]


@pytest.mark.parametrize("set_apply", [False, True], ids=["calls", "set"])
def test_datetimeoffset_values_arrive_as_their_instants(spark, sqlserver, tmp_path, set_apply) -> None:
    """Babelfish refuses a datetimeoffset procedure parameter bound as text (SQL Server converts
    it): the dialect binds the instant in UTC. Inserted, then updated, each value is read back
    as the instant it was (verify compares instants), in both apply modes."""
    import datetime as dt

    name = f"tsql-dto-{'set' if set_apply else 'calls'}"
    import tomllib

    cfg = parse_config(
        tomllib.loads(_DTO_CONFIG.format(set_apply=str(set_apply).lower(), name=name)), "dto.toml"
    )
    records = []
    lsn = 0
    for k, text in _DTO_VALUES:
        lsn += 1
        records.append(
            {
                "lsn": lsn,
                "xact_seqno": lsn,
                "command_id": 1,
                "article": "dbo.dto_rows",
                "op": "I",
                "after": {"id": k, "at": text},
            }
        )
    for k, text in _DTO_VALUES[:3]:  # then each moved by a day, still in its own offset
        lsn += 1
        later = (dt.datetime.fromisoformat(text) + dt.timedelta(days=1)).isoformat()
        records.append(
            {
                "lsn": lsn,
                "xact_seqno": lsn,
                "command_id": 1,
                "article": "dbo.dto_rows",
                "op": "U",
                "before": {"id": k, "at": text},
                "after": {"id": k, "at": later},
                "changed": ["at"],
            }
        )
    changes = write_jsonl(tmp_path / "dto.jsonl", records)
    result, report = run(spark, cfg, sqlserver, changes=changes)
    assert report["verdict"] == "converged" and result.exit_code == 0, (report["reason"], report["reset_log"])
    conn = sqlserver.connect()  # the dialect's connection: it reads a datetimeoffset
    try:
        got = dict(tuple(r) for r in conn.cursor().execute("SELECT id, at FROM dbo.dto_rows").fetchall())
    finally:
        conn.close()
    for k, text in _DTO_VALUES:
        want = (
            None if text is None else dt.datetime.fromisoformat(text) + dt.timedelta(days=1 if k < 4 else 0)
        )
        value = got[k]
        if want is None:
            assert value is None
            continue
        assert value == want, (k, value, want)  # aware datetimes: equal as instants
