"""Kill -9 at size (``make test-faults-large``): runs of 50,000 commands killed with SIGKILL (the
whole session: driver, Spark's JVM and workers) at 10 seeded moments spread over generating,
loading the snapshot, applying (procedure calls with rounds reset to one connection, set-based,
the independent model) and a segment cut by a schema change or an rs_sqldml statement, each
resumed with ``--resume`` on the same subscriber.

Each must converge with every command applied once: an audit trigger (custom SQL, part of
every install) holds every row change that committed, and its (operation, key) multiset must
equal the stream's own, snapshot included (set-based apply: the commits' record of the
commands they carried, ``[run] audit_commands``, each lsn once). The segmented streams'
updates, statement and procedure add to ``n``: applied twice, the rows would show it too.

The generated stream: key chains (15 % key moves: rounds of 20 transactions reset to one
connection about half the time, so both the parallel commit and the re-apply are hit), 10,000
transactions of 5 commands over a 100,000-row snapshot loaded in ranges of 10,000 rows by
several loaders (the 10M-row load's behaviour, smaller). The segmented streams: 25,000
transactions (about 50,000 commands) over 5,000 rows, the event in the middle. Each moment's
pass number was chosen from a run that counted the passes (the kill must land inside its phase):
apply.commit passes 1,036 times (259 rounds on 4 streams), apply.reapply 241, apply.share
10,000 (independent with writeset: one share a transaction), generate.lane 16. The figures of each case are printed on the console.
"""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

import applier
from tests.support.faults import audit_file, each_once, kill_at
from tests.support.killing import run_killed
from tests.support.runs import run
from tests.support.segmented import Stream, make_case

pytestmark = [pytest.mark.faults_large, pytest.mark.timeout(1800)]

CONFIG = """
[run]
subscription = "{name}"
streams = 4
commit_batch_size = 20
model = "{model}"
partition = "{partition}"
set_apply = {set_apply}
audit_commands = {set_apply}
snapshot_range_rows = 10000

[workload]
kind = "key-chains"
initial_rows = 100000
transactions = 10000
commands_per_transaction = 5
key_update_share = 0.15
seed = {seed}

[[articles]]
name = "dbo.{name}"
columns = [
  {{ name = "id", type = "int", key = true }},
  {{ name = "v", type = "nvarchar(40)" }},
  {{ name = "n", type = "int" }},
]
"""

# (apply path, fail point, pass): 8 moments of the generated stream.
GENERATED = [
    ("agent", "generate.lane", 9),  # 8 of 16 lanes started: nothing installed yet
    ("agent", "load.range", 4),  # 4 of 10 key ranges committed, other loaders mid-range
    ("agent", "load.constraints", 1),  # every range loaded, the constraints not added
    ("agent", "apply.commit", 250),  # a quarter in: one stream of a round committed
    ("agent", "apply.reapply", 120),  # half way: a reset round re-applied on one connection
    ("agent", "apply.commit", 900),  # near the end
    ("set", "apply.commit", 600),
    ("independent", "apply.share", 5000),  # writeset: each transaction's share waits for its
    # dependencies, half of the 10,000 sent (key-hash would defer nearly all of them to one
    # connection after the first key move: README "Ordering hazards")
]

# (event, fail point, pass): 2 moments in a segmented stream's event segment. MID: a round in the
# middle of the segment after the event.
MID = -1
SEGMENTED = [("ddl", "barrier.apply", 1), ("sqldml", "apply.commit", MID)]
SEG_STREAMS, SEG_BATCH, SEG_XACTS, SEG_ROWS = 4, 100, 12_500, 5_000


def _figures(capsys: Any, **figures: Any) -> None:
    """The case's figures, on the console (never asserted on)."""
    with capsys.disabled():
        print("\n" + " ".join(f"{k}={v}" for k, v in figures.items()))


@pytest.mark.parametrize(("mode", "point", "at"), GENERATED, ids=[f"{m}-{p}@{n}" for m, p, n in GENERATED])
def test_a_generated_run_of_50000_commands_killed_and_resumed_applies_each_once(
    spark, pg, target, tmp_path, capsys, mode, point, at
):
    name = f"L_{mode}_{point.replace('.', '_')}_{at}"
    cfg_file = tmp_path / f"{name}.toml"
    cfg_file.write_text(
        CONFIG.format(
            name=name,
            model="independent" if mode == "independent" else "agent",
            partition="writeset" if mode == "independent" else "key-hash",
            set_apply=str(mode == "set").lower(),
            seed=len(name) + at,
        ),
        encoding="utf-8",
    )
    cfg = applier.load_config(cfg_file)
    assert cfg.workload.commands == 50_000
    custom = audit_file(tmp_path, name)
    t = time.perf_counter()
    kill_at(pg.connection_string(), cfg_file, custom, point, at, tmp_path)
    killed = time.perf_counter() - t
    t = time.perf_counter()
    _result, report = run(spark, cfg, target, resume=True, custom_sql=[custom])
    resumed = time.perf_counter() - t
    assert report["verdict"] == "converged", report.get("divergent", [])[:3]
    each_once(target, cfg, name, set_apply=mode == "set")
    _figures(
        capsys,
        case=f"{mode}-{point}@{at}",
        commands=cfg.workload.commands,
        snapshot_rows=report["snapshot_rows"],
        killed_run_s=round(killed, 1),
        resume_s=round(resumed, 1),
        outcomes=dict(report["outcomes"]),
    )


@pytest.mark.parametrize(("kind", "point", "at"), SEGMENTED, ids=[f"{k}-{p}@{n}" for k, p, n in SEGMENTED])
def test_a_segmented_run_of_50000_commands_killed_in_its_event_segment_and_resumed_applies_each_once(
    spark, pg, tmp_path, capsys, kind, point, at
):
    name = f"L_{kind}_{point.replace('.', '_')}_{max(at, 0)}"
    stream = Stream(name, seed=len(name) + at, rows=SEG_ROWS)
    stream.traffic(SEG_XACTS)
    if kind == "ddl":
        stream.add_column()
    else:
        stream.statement()
    stream.traffic(SEG_XACTS)
    assert len(stream.records) >= 49_000, len(stream.records)
    case = make_case(pg, tmp_path, kind, name, stream, SEG_STREAMS, SEG_BATCH, lambda _: True)
    if at == MID:  # every stream passes apply.commit once a round (updates move no key: no reset)
        at = SEG_STREAMS * (math.ceil(stream.transactions_before() / SEG_BATCH) + SEG_XACTS // SEG_BATCH // 2)
    t = time.perf_counter()
    run_killed(case.args, point, at, tmp_path)
    killed = time.perf_counter() - t
    t = time.perf_counter()
    sub, report = case.run(spark, pg, resume=True)
    resumed = time.perf_counter() - t
    assert report["outcomes"].get("resumed", 0) > 0, report["outcomes"]  # segment 0 not applied again
    case.check(sub, report)
    _figures(
        capsys,
        case=f"{kind}-{point}@{at}",
        commands=len(stream.records),
        killed_run_s=round(killed, 1),
        resume_s=round(resumed, 1),
        outcomes=dict(report["outcomes"]),
    )
