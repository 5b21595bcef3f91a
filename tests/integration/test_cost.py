"""The cost model of a run (issue 32): per phase its seconds, Spark jobs, stages, tasks and the
seconds Python workers spent starting, counted from Spark's own status, not estimated."""

from __future__ import annotations

import dataclasses
import os

import pytest

from applier.config import demo_config
from tests.support.runs import run

pytestmark = pytest.mark.integration

PHASES = ("prepare", "plan", "apply", "verify", "report")
# The jobs a generated run of one segment takes at most, phase by phase: a fold undone (a
# tally, a count, a sniff run as a job of its own) fails here first.
# the report runs none: the events' digest (verify) carries a small run's schedule
MAX_JOBS = {"prepare": 1, "plan": 1, "apply": 1, "verify": 1, "report": 0}


def _cfg(name: str):  # type: ignore[no-untyped-def]
    cfg = demo_config()
    return cfg.replace(
        workload=dataclasses.replace(cfg.workload, transactions=200),
        run=dataclasses.replace(cfg.run, subscription=name),
    )


def test_a_run_s_cost_counts_its_jobs_per_phase_and_a_warm_run_starts_no_worker(spark, target) -> None:
    first, _ = run(spark, _cfg("cost-1"), target)
    second, report = run(spark, _cfg("cost-2"), target)
    assert second.verdict.value == "converged"
    cost = second.cost
    assert tuple(cost) == PHASES
    for phase, c in cost.items():
        assert min(1, MAX_JOBS[phase]) <= c["jobs"] <= MAX_JOBS[phase], (phase, c)
        assert c["stages"] >= min(1, c["jobs"]) and c["tasks"] >= c["stages"], (phase, c)
        # one clock: the cost table and the report say the same seconds (each rounded to ms)
        assert c["seconds"] == pytest.approx(report["phases_seconds"][phase], abs=0.0015), phase
    # the same run twice: the same jobs (nothing in the count depends on timing)
    assert {p: c["jobs"] for p, c in first.cost.items()} == {p: c["jobs"] for p, c in cost.items()}
    # a local master: measured; the second run's workers were forked from the preloading
    # daemon (or reused): they spent next to nothing starting
    assert all(c["worker_start_seconds"] is not None for c in cost.values())
    assert sum(c["worker_start_seconds"] for c in cost.values()) < 0.1, cost
    assert sum(c["seconds"] for c in cost.values()) <= second.seconds
    # CPU per side, read at each phase's edges: the stream tasks are Python workers, the plan
    # is the JVM's; no side used more than every core for the phase's whole time
    cores = os.cpu_count() or 1
    cpu = {p: c["cpu_seconds"] for p, c in cost.items()}
    assert all(x is not None and set(x) == {"driver", "jvm", "jit", "workers"} for x in cpu.values()), cpu
    assert cpu["apply"]["workers"] > 0 and cpu["plan"]["jvm"] > 0, cpu
    for p, x in cpu.items():
        assert 0 <= x["jit"] <= x["jvm"], (p, x)
        assert all(v <= cores * cost[p]["seconds"] + 0.2 for v in x.values()), (p, x, cost[p]["seconds"])


def test_the_suite_s_jvm_compiles_with_c1_alone(spark) -> None:
    """Its runs are small (sparkenv.session.QUICK_JIT): the session asked for it, the JVM got it."""
    from applier.sparkenv.session import QUICK_JIT, quick_jit_chosen

    jvm = spark.sparkContext._jvm
    args = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert (QUICK_JIT in args) == quick_jit_chosen(True), args


# A small change file's reading: validation (one job a file set), the positions, snapshot keys
# and the stream's events read from the rows it gathered (no job), the snapshot's load.
MAX_READ_JOBS = {"prepare": 3, "plan": 1, "apply": 1, "verify": 1, "report": 0}


def test_a_small_change_file_is_read_in_three_jobs(spark, target, tmp_path) -> None:
    from applier.api import generate

    changes, snap, commands = generate(_cfg("cost-read"), tmp_path / "gen", spark=spark)
    result, _ = run(spark, _cfg("cost-read"), target, changes=changes, snapshot=snap)
    assert result.verdict.value == "converged" and commands == 1000
    jobs = {p: c["jobs"] for p, c in result.cost.items()}
    assert all(jobs[p] <= MAX_READ_JOBS[p] for p in PHASES), jobs
    assert jobs["prepare"] >= 2, jobs  # the files are read: validation is a job


def test_without_aqe_sizes_the_shuffles_and_puts_the_settings_back(spark) -> None:
    from applier.sparkenv import AQE, SHUFFLE_PARTITIONS, without_aqe

    have = spark.conf.get(SHUFFLE_PARTITIONS)
    aqe = spark.conf.get(AQE)
    with without_aqe(spark, rows=1000):
        assert spark.conf.get(AQE) == "false" and spark.conf.get(SHUFFLE_PARTITIONS) == "1"
    assert spark.conf.get(SHUFFLE_PARTITIONS) == have and spark.conf.get(AQE) == aqe
    with without_aqe(spark, rows=250_000):
        assert spark.conf.get(SHUFFLE_PARTITIONS) == str(min(int(have), 3))
    with without_aqe(spark, rows=10**9):  # never more than the session's
        assert spark.conf.get(SHUFFLE_PARTITIONS) == have
    with without_aqe(spark):
        assert spark.conf.get(SHUFFLE_PARTITIONS) == have and spark.conf.get(AQE) == "false"
    assert spark.conf.get(AQE) == aqe


@pytest.mark.parametrize("model", ["agent", "independent"])
def test_the_stream_tasks_digest_is_the_digest_of_the_events_they_wrote(
    spark, target, tmp_path, model
) -> None:
    """The apply stage's tasks digest their own events (no job of their own): the summary made
    of it is the one a digest of the written events (one job over the Parquet) makes."""
    from applier.apply.streams import read_events
    from applier.apply.summary import summarize

    cfg = _cfg(f"digest-{model}")
    cfg = cfg.replace(
        run=dataclasses.replace(cfg.run, model=model),
        workload=dataclasses.replace(cfg.workload, key_update_share=0.3),
    )
    result, _ = run(spark, cfg, target, work_dir=tmp_path)
    sub = result.subscriptions[0]
    assert sub.summary.resets + sum(sub.summary.conflicts.values()) > 0  # key chains: something to digest
    (folder,) = tmp_path.glob("events-*")
    s = sub.summary
    again = summarize(
        read_events(spark, str(folder)),
        rounds=s.rounds,
        streams=s.streams,
        commands=s.commands,
        transactions=s.transactions,
        apply_seconds=s.apply_seconds,
        snapshot_rows=s.snapshot_rows,
        source=s.source,
    )
    assert again == dataclasses.replace(s, parallelism=None)  # the resets' explanation is added after


def test_the_workers_warm_up_runs_one_task_in_a_group_of_its_own(spark) -> None:
    """``api.session.warm_workers``: the daemon and the JVM's Arrow path started in the background (the
    CLI's session, while the target starts); it must run (it swallows what fails: a failure
    shows here as a job that did not succeed) and stay out of the runs' phases (its own group)."""
    import time

    from applier.api.session import warm_workers

    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup("applier-warm-up"))
    warm_workers(spark)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        new = [j for j in tracker.getJobIdsForGroup("applier-warm-up") if j not in before]
        info = tracker.getJobInfo(new[0]) if new else None
        if info is not None and info.status in ("SUCCEEDED", "FAILED"):
            break
        time.sleep(0.05)
    assert info is not None and info.status == "SUCCEEDED", info
    stages = [tracker.getStageInfo(s) for s in info.stageIds]
    assert sum(s.numCompletedTasks for s in stages if s is not None) == 1
    # the caller's thread keeps its own group: the warm-up set its group in its own thread
    assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") != "applier-warm-up"
