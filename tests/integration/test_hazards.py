"""Ordering hazards made to happen on purpose, and explained (issue 4); the tests taking
``any_target`` run on the embedded Babelfish too (the tsql marker)."""

from __future__ import annotations

import dataclasses

import pytest

from applier.config import HAZARD_WORKLOADS, ErrorPolicy, RunSettings, Workload, demo_config
from tests.support.runs import run

pytestmark = pytest.mark.integration


def cfg(
    workload: str,
    partition: str,
    model: str,
    *,
    streams: int = 4,
    policy: str = "strict",
    transactions: int = 192,
):
    return demo_config().replace(
        workload=Workload(kind=workload, transactions=transactions, initial_rows=0, seed=11),
        run=RunSettings(
            subscription=f"hz-{workload}-{partition}-{model}-{policy}",
            streams=streams,
            partition=partition,
            model=model,
            lock_timeout_ms=300,
            error_policy=ErrorPolicy.parse(policy),
        ),
    )


@pytest.mark.parametrize("workload", HAZARD_WORKLOADS)
def test_agent_key_hash_converges_on_every_hazard(spark, any_target, workload):
    result, report = run(spark, cfg(workload, "key-hash", "agent"), any_target)
    assert report["verdict"] == "converged", report["divergent"][:2]
    assert report["conflicts"]["other"] == 0
    for s in report["streams"]:  # each stream task's own CPU, and the part taking its shares
        assert 0 < s["take_cpu_seconds"] < s["cpu_seconds"], s
    if workload == "parent-child":
        assert report["conflicts"]["foreign_key"] > 0  # classified as such, not as "other"
    if workload == "unique-shuffle":
        # the unique secondary key, told apart from the primary key by the constraint that fired
        assert report["conflicts"]["unique_index"] + report["conflicts"]["lock_timeout"] > 0
        assert report["conflicts"]["duplicate_key"] == 0


@pytest.mark.parametrize("workload", HAZARD_WORKLOADS)
def test_writeset_raises_no_conflict_and_converges_at_8_streams(spark, any_target, workload):
    result, report = run(spark, cfg(workload, "writeset", "independent", streams=8), any_target)
    assert sum(report["conflicts"].values()) == 0, report["conflicts"]
    assert report["deferred"] == 0
    assert report["verdict"] == "converged", report["divergent"][:2]
    busy = [s for s in report["streams"] if s["commands"]]
    assert len(busy) == 8  # the work really is spread over the streams


def test_independent_round_robin_loses_the_newer_value_and_names_the_inverted_pair(spark, any_target):
    result, report = run(spark, cfg("reorder", "round-robin", "independent"), any_target)
    assert report["verdict"] == "diverged" and result.exit_code == 1
    assert sum(report["conflicts"].values()) == 0  # silent: no error at all
    d = report["divergent"][0]
    assert d["kind"] == "different" and d["columns"] == ["n"]
    assert d["expected"]["n"] == 2 and d["found"]["n"] == 1
    first, second = [c for c in d["commands"]][-2:]
    assert d["inverted"]["first"] == first["lsn"] and d["inverted"]["second"] == second["lsn"]
    assert first["stream"] != second["stream"]


def test_continue_on_data_consistency_errors_counts_exactly_the_rows_it_lost(spark, any_target):
    c = cfg("key-chain", "key-hash", "agent", policy="continue-on-data-consistency-errors")
    result, report = run(spark, c, any_target)
    assert report["skipped"] > 0
    assert report["resets"] == 0  # skipping is what replaces the reset to one stream
    assert report["verdict"] == "diverged"
    # Each skipped second link leaves its row at the middle key: one row missing, one extra.
    assert report["divergent_rows"] == 2 * report["skipped"]
    assert report["skips"]["rows_lost"] == report["divergent_rows"]
    assert {d["kind"] for d in report["divergent"]} == {"missing", "extra"}
    lost = report["divergent"][0]
    assert lost["skipped"] and lost["inverted"] is not None


def test_strict_policy_converges_on_the_same_stream(spark, target):
    c = cfg("key-chain", "key-hash", "agent")
    c = c.replace(run=dataclasses.replace(c.run, subscription="hz-strict-again"))
    result, report = run(spark, c, target)
    assert report["verdict"] == "converged" and report["resets"] > 0


@pytest.mark.e2e
def test_matrix_has_one_row_per_cell(spark, target):
    from applier.matrix import cells, run_matrix

    grid = cells(["reorder"], ["key-hash", "round-robin", "writeset"], ["agent", "independent"], ["strict"])
    rows = run_matrix(demo_config(), target, grid, streams=4, transactions=96, seed=2, spark=spark)
    assert len(rows) == 6
    by = {(r["partition"], r["model"]): r for r in rows}
    assert by[("writeset", "agent")]["verdict"] == "n/a"
    assert by[("key-hash", "agent")]["verdict"] == "converged"
    assert by[("round-robin", "independent")]["verdict"] == "diverged"
    assert by[("round-robin", "independent")]["inverted_pairs"] > 0
    assert by[("writeset", "independent")]["verdict"] == "converged"
    for r in rows:
        if r["verdict"] != "n/a":
            assert {
                "conflicts",
                "resets",
                "deferred",
                "skipped",
                "divergent_rows",
                "throughput_cmds_per_s",
            } <= set(r)
