"""Parallelism explained (issue 31): when most rounds of a run reset to one stream, the run
says which dependency forced it and what would let the traffic run in parallel, from the
analysis ``applier streams --explain`` shows (applier.partition.dependencies), in the JSON
report, the console summary, the JUnit XML and the HTML report. A run that resets little pays
nothing for it (tests/integration/test_console.py: the demo; test_cost.py: its jobs).

The hazard workloads make each dependency happen on purpose: key moves across streams (row
not found, 20598), a key freed and taken again (delete and re-insert, key swap: duplicate key),
a row changed by two streams in one round (a lock wait between the agent's own sessions), a
parent and its child on different streams (foreign key), a unique value handed on.
"""

from __future__ import annotations

import dataclasses
import html
import json
from pathlib import Path

import pytest
from rich.console import Console

from applier.config import RunSettings, Workload, demo_config
from applier.explain import stream_map
from applier.report.console import print_summary
from applier.report.html import render_run
from applier.report.junit import run_junit
from applier.sources.hazards import CHILD, PARENT, UNIQ
from tests.support.changes import write_jsonl
from tests.support.runs import config, run

pytestmark = pytest.mark.integration


def hazard(workload: str, partition: str, *, transactions: int = 96, batch: int = 16, name: str = ""):  # type: ignore[no-untyped-def]
    return demo_config().replace(
        workload=Workload(kind=workload, transactions=transactions, initial_rows=0, seed=11),
        run=RunSettings(
            subscription=name or f"rx-{workload}-{partition}",
            streams=4,
            partition=partition,
            commit_batch_size=batch,
            lock_timeout_ms=300,
        ),
    )


def _cmd(xact: int, op: str, before: int | None, after: int | None, n: int = 0, cmd: int = 1) -> dict:
    rec: dict = {"lsn": xact * 10 + cmd, "xact_seqno": xact, "command_id": cmd, "article": "dbo.rx", "op": op}
    if before is not None:
        rec["before"] = {"id": before, "v": "a", "n": n}
    if after is not None:
        rec["after"] = {"id": after, "v": "a", "n": n + 1}
    return rec


# Round-robin at N = 2 deals transaction i to stream (i - 1) % 2: each transaction below sits on
# another stream than the one before it, all in round 0 (a commit batch of 100).
CRAFTED = [
    _cmd(1, "I", None, 1),  # stream 0
    _cmd(2, "U", 1, 1),  # stream 1: the row stream 0 inserts (insert: row not found)
    _cmd(3, "U", 1, 2),  # stream 0: moves the row stream 1 changes (same row: a lock wait)
    _cmd(4, "U", 2, 2),  # stream 1: the row stream 0 moved to key 2 (key move: row not found)
    _cmd(5, "D", 2, None),  # stream 0: deletes the row stream 1 changes (same row)
    _cmd(6, "I", None, 2),  # stream 1: takes the key stream 0 freed (key reuse: duplicate key)
    _cmd(7, "I", None, 3),  # stream 0, both: one stream, no dependency
    _cmd(7, "U", 3, 3, cmd=2),
]


def test_each_dependency_of_a_crafted_stream_is_named(spark, tmp_path: Path) -> None:
    changes = write_jsonl(tmp_path / "crafted.jsonl", CRAFTED)
    cfg = config("rx", streams=2, batch=100)
    cfg = cfg.replace(run=dataclasses.replace(cfg.run, partition="round-robin"))
    sm = stream_map(spark, cfg, changes)
    par = sm.parallelism()
    kinds = {k["kind"]: k["commands"] for k in par.kinds}
    assert kinds == {"insert": 1, "same_row": 2, "key_move": 1, "key_reuse": 1}
    assert (par.dependent, par.rounds, par.within_transaction) == (5, 1, 0)
    by_kind = {k["kind"]: k["example"] for k in par.kinds}
    move = by_kind["key_move"]
    assert (move["key"], move["command"]["lsn"], move["depends_on"]["lsn"]) == ("[2]", 41, 31)
    assert (move["command"]["stream"], move["depends_on"]["stream"]) == (1, 0)
    assert by_kind["key_reuse"]["depends_on"]["op"] == "D" and by_kind["key_reuse"]["command"]["op"] == "I"
    # a commit batch of 2 keeps the pairs (xact 1, 2), (3, 4) and (5, 6) together; of 1, none
    batches = {b["commit_batch_size"]: (b["rounds_with"], b["rounds"], b["commands"]) for b in par.batches}
    assert batches[2] == (3, 4, 3) and batches[1] == (0, 7, 0)
    # 5: transactions 1-5 and 6-7, a dependency in the first only (half the rounds parallel)
    assert par.advice[0] == (
        "--commit-batch-size 5: a dependency in 1 of 2 rounds; 1: in 0 of 7 (now, at 100: in 1 of 1)"
    )


@pytest.mark.parametrize(
    ("workload", "partition", "kinds"),
    [
        ("key-chain", "key-hash", {"key_move"}),
        ("key-swap", "key-hash", {"key_move", "key_reuse"}),
        ("delete-reinsert", "round-robin", {"key_reuse"}),
        ("hot-key", "round-robin", {"same_row"}),
        ("unique-shuffle", "round-robin", {"unique_reuse"}),
        ("parent-child", "round-robin", {"parent_child", "insert", "same_row"}),
    ],
)
def test_each_hazard_is_explained_by_its_own_dependency(spark, workload, partition, kinds) -> None:
    # 96 transactions: 6 for each of the 16 lanes, where every pattern fits (hot-key's takes 8)
    sm = stream_map(spark, hazard(workload, partition, transactions=128 if workload == "hot-key" else 96))
    par = sm.parallelism()
    assert {k["kind"] for k in par.kinds} == kinds, par.reason
    assert par.dependent == sum(k["commands"] for k in par.kinds) > 0
    for k in par.kinds:  # every example: two commands of one round on two streams
        c, p = k["example"]["command"], k["example"]["depends_on"]
        assert c["round"] == p["round"] and c["stream"] != p["stream"] and p["lsn"] < c["lsn"], k
    examples = {k["kind"]: k["example"] for k in par.kinds}
    if workload == "hot-key":
        # every update of a hot row after its first depends on the one before it (round-robin
        # deals consecutive transactions to different streams; a lane's 8 stay in one round)
        rows = sm.keys.count()
        assert par.dependent == sm.commands - rows
    if workload == "parent-child":
        ex = examples["parent_child"]
        assert ex["article"] == PARENT  # the parent's key
        assert {ex["command"]["article"], ex["depends_on"]["article"]} == {PARENT, CHILD}
    if workload == "unique-shuffle":
        assert examples["unique_reuse"]["article"] == f"{UNIQ}#unique0"


def test_a_run_whose_rounds_reset_says_why_in_every_report(spark, pg) -> None:
    result, report = run(spark, hazard("key-chain", "key-hash"), pg.subscriber("rx_chain"))
    assert report["verdict"] == "converged"
    resets, rounds = report["resets"], report["rounds"]
    assert 2 * resets > rounds, (resets, rounds)
    par = report["parallelism"]
    assert par is not None
    assert par["reason"].startswith(f"{resets} of {rounds} rounds reset to one stream: ")
    assert f"(in {resets} of the {resets} reset rounds)" in par["reason"]  # every reset explained
    assert [k["kind"] for k in par["kinds"]] == ["key_move"]
    ex = par["kinds"][0]["example"]
    assert ex["depends_on"]["key_after"] == ex["key"] == ex["command"]["key_before"]
    # the run's conflicts are those commands: row not found
    assert report["conflicts"]["row_not_found"] > 0
    assert {c for c, v in report["conflicts"].items() if v} == {"row_not_found"}
    assert par["advice"] and par["advice"][-1].startswith("--model independent --partition writeset")
    # its cost: one Spark job, in a phase of its own
    assert result.cost["explain"]["jobs"] == 1, result.cost
    assert "explain" in report["phases_seconds"]

    # the console summary: the reason and the advice, each in its row (a console wide enough)
    console = Console(record=True, width=600)
    print_summary(report, console)
    cells = [[c.strip() for c in ln.split("│")[1:-1]] for ln in console.export_text().splitlines()]
    assert ["why they reset", par["reason"]] in cells
    assert ["to run in parallel", par["advice"][0]] in cells

    junit = run_junit(report)
    assert f"why they reset: {par['reason']}" in html.unescape(junit)
    assert f"to run in parallel: {par['advice'][0]}" in html.unescape(junit)
    page = render_run(report)
    assert 'id="resets-why"' in page and html.escape(par["reason"], quote=True) in page
    assert json.loads(json.dumps(report))["parallelism"] == par  # plain JSON


def test_parent_and_child_on_two_streams_are_a_foreign_key_dependency(spark, pg) -> None:
    result, report = run(spark, hazard("parent-child", "round-robin"), pg.subscriber("rx_fk"))
    assert report["verdict"] == "converged"
    par = report["parallelism"]
    assert par is not None and 2 * report["resets"] > report["rounds"]
    assert "parent_child" in {k["kind"] for k in par["kinds"]}
    assert "on a parent or child row (foreign key)" in par["reason"]
    assert report["conflicts"]["foreign_key"] + report["conflicts"]["lock_timeout"] > 0
    assert par["resets_explained"] == report["resets"]


def test_a_run_that_does_not_reset_explains_nothing_and_pays_nothing(spark, pg) -> None:
    """The uniform workload with the default run settings: a key update now and then resets a
    round, not most of them."""
    cfg = demo_config()
    cfg = cfg.replace(
        workload=dataclasses.replace(cfg.workload, kind="uniform", transactions=400),
        run=dataclasses.replace(cfg.run, subscription="rx_uniform"),
    )
    result, report = run(spark, cfg, pg.subscriber("rx_uniform"))
    assert report["verdict"] == "converged" and 2 * report["resets"] <= report["rounds"]
    assert report["parallelism"] is None
    assert "explain" not in result.cost and "explain" not in report["phases_seconds"]
    console = Console(record=True, width=200)
    print_summary(report, console)
    text = console.export_text()
    assert "why they reset" not in text and "to run in parallel" not in text
    assert "why they reset" not in run_junit(report) and 'id="resets-why"' not in render_run(report)
