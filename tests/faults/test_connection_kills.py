"""Connections killed at 10 seeded moments: the subscriber's server terminates the apply
connections (``pg_terminate_backend``) once or several times, after a seeded number of rounds
and a seeded delay (so the kill finds a connection idle in its transaction at the barrier, or
in the middle of a statement), under both models, row by row and set-based. Each run
converges without a rerun, every command applied once, and the streams report their
reconnects."""

from __future__ import annotations

import dataclasses
import random

import pytest

from tests.support.connection_killer import Killer
from tests.support.runs import config, run

pytestmark = [pytest.mark.integration, pytest.mark.faults]


def _moment(seed: int) -> dict[str, object]:
    rng = random.Random(f"connection-kill:{seed}")
    times = rng.randint(1, 3)
    return {
        "model": rng.choice(["agent", "agent", "independent"]),
        "set_apply": rng.random() < 0.4,
        "partition": rng.choice(["key-hash", "round-robin"]),
        "rounds": sorted(rng.sample(range(2, 150), times)),
        "delays": [rng.choice([0.0, 0.0, rng.uniform(0.001, 0.04)]) for _ in range(times)],
    }


@pytest.mark.parametrize("seed", range(10))
def test_connections_killed_at_a_seeded_moment_reconnect_and_converge(spark, target, seed):
    m = _moment(seed)
    name = f"ckill_{seed}"
    cfg = config(name, streams=4, batch=2, kind="uniform", transactions=400, initial_rows=100, seed=seed)
    cfg = cfg.replace(
        run=dataclasses.replace(cfg.run, model=m["model"], partition=m["partition"], set_apply=m["set_apply"])
    )
    killer = Killer(target.connection_string, name, m["rounds"], m["delays"])
    killer.start()
    try:
        _result, report = run(spark, cfg, target)
    finally:
        killer.stop.set()
        killer.join(timeout=10)
    assert len(killer.killed) == len(m["rounds"]) and sum(killer.killed) >= 1, (m, killer.killed)
    assert report["verdict"] == "converged", (m, report["reason"], report["divergent"][:2])
    assert sum(s.get("reconnects", 0) for s in report["streams"]) >= 1, m
    applied = report["outcomes"].get("applied", 0) + report["outcomes"].get("reapplied", 0)
    assert applied == report["commands"], (m, report["outcomes"])
