"""A killed snapshot load resumes where it stopped: ``applier run`` killed with SIGKILL (its whole
session, as a kill -9 would) after the k-th key range of its snapshot committed, then
``--resume`` on the same subscriber loads only the ranges not recorded in ``applier.ranges``
(:mod:`applier.apply.snapshot`) and applies the stream.

An audit in the subscriber (statement triggers, installed with the run's custom SQL) records
every row change that committed, the load's inserts included: the multiset of (operation, key)
it holds must equal the stream's own with the snapshot's rows as inserts, so a snapshot row
loaded twice shows as one more insert and one never loaded as one fewer. The killed run must
leave whole ranges only (the table's rows are those its recorded ranges count) and the resume
must insert exactly the rest.

``make test-faults`` runs the small cases (5,000 rows in ranges of 1,000, one loader, seconds);
``make test-faults-large`` the 1,000,000-row load (ranges of 25,000, the default: 40 ranges, four
loaders) killed at 80 % (the 32nd range committed), and prints the resume's rows and seconds
against a full load's.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import applier
from applier.apply.snapshot import RANGE_ROWS
from applier.targets.progress import INSTALLED, ProgressTable
from tests.support.faults import audit_file, expected_changes, kill_at
from tests.support.killing import audited
from tests.support.runs import run
from tests.support.subscriber import rows

CONFIG = """
[run]
subscription = "{name}"
streams = 4
commit_batch_size = 4
snapshot_range_rows = {range_rows}

[workload]
kind = "key-chains"
initial_rows = {initial_rows}
transactions = {transactions}
key_update_share = 0.15
seed = 11

[[articles]]
name = "dbo.{name}"
columns = [
  {{ name = "id", type = "int", key = true }},
  {{ name = "v", type = "nvarchar(40)" }},
  {{ name = "n", type = "int" }},
]
"""


def _config(tmp: Path, name: str, initial_rows: int, range_rows: int, transactions: int) -> tuple[Any, Path]:
    path = tmp / f"{name}.toml"
    path.write_text(
        CONFIG.format(name=name, initial_rows=initial_rows, range_rows=range_rows, transactions=transactions),
        encoding="utf-8",
    )
    return applier.load_config(path), path


def _timed(said: list[tuple[float, str]]) -> Callable[[str], None]:
    return lambda text: said.append((time.perf_counter(), text))


def _load_seconds(said: list[tuple[float, str]]) -> float:
    """The load's seconds, as the run says them: the ranges loaded, from the cache a generated
    snapshot's sample filled (its generation is not the load's)."""
    loaded = [text for _t, text in said if "snapshot loaded:" in text]
    assert len(loaded) == 1, said
    seconds = re.search(r"key ranges?(?:\(s\))? \(([0-9.]+) s\)", loaded[0])
    assert seconds, loaded
    return float(seconds.group(1))


def _killed_during_the_load(
    pg: Any, target: Any, tmp: Path, name: str, cfg_file: Path, point: str, at: int
) -> tuple[int, int]:
    """Kill the run at ``point@at``; what it left: the key ranges recorded and their rows, which
    are all the table holds (whole ranges) and all the audit saw inserted."""
    custom = audit_file(tmp, name)
    kill_at(pg.connection_string(), cfg_file, custom, point, at, tmp)
    conn = target.connect()
    try:
        table = ProgressTable(target.dialect)
        cur = conn.cursor()
        held = table.read_run(cur, name)
        recorded = table.read_ranges(cur, name)
        conn.commit()
    finally:
        conn.close()
    assert held is not None and held.phase == INSTALLED, held
    committed = sum(r.rows for r in recorded.values())
    (in_table,) = rows(target, f'SELECT count(*) FROM "dbo"."{name}"')[0]
    assert in_table == committed, f"{in_table} rows in the table, {committed} in its {len(recorded)} ranges"
    seen = audited(target, f'"dbo"."audit_{name}"')
    assert sum(seen.values()) == committed and max(seen.values(), default=1) == 1, seen.most_common(3)
    return len(recorded), committed


def _resume_exactly_once(
    spark: Any, target: Any, cfg: Any, tmp: Path, name: str, ranges_before: int, rows_before: int
) -> tuple[int, int, float, float]:
    """Resume the killed run; check it converged, loaded only the ranges not recorded and left
    every snapshot row and stream change in the audit once. Returns the snapshot's key ranges,
    the rows the resume loaded, the load's seconds and the resumed run's."""
    said: list[tuple[float, str]] = []
    t = time.perf_counter()
    _result, report = run(
        spark, cfg, target, resume=True, custom_sql=[tmp / f"{name}-audit.sql"], on_phase=_timed(said)
    )
    seconds = time.perf_counter() - t
    assert report["verdict"] == "converged", report.get("divergent", [])[:3]
    total = cfg.workload.initial_rows
    assert report["snapshot_rows"] == total
    lines = [text for _t, text in said]
    resumed = [t for t in lines if "resuming the snapshot load:" in t]
    assert len(resumed) == 1 and f": {ranges_before} of its " in resumed[0], lines
    assert f"({rows_before:,} rows) were committed before the stop" in resumed[0], resumed
    count = int(resumed[0].split(" of its ")[1].split()[0])
    audit = audited(target, f'"dbo"."audit_{name}"')
    expected = expected_changes(cfg)
    doubled, lost = audit - expected, expected - audit
    assert not doubled and not lost, (
        f"{sum(doubled.values())} row changes doubled {list(doubled.items())[:5]}, "
        f"{sum(lost.values())} lost {list(lost.items())[:5]}"
    )
    # the resume inserted the snapshot rows the killed run had not committed, and the stream's
    stream_inserts = sum(n for (op, _k), n in expected_changes(cfg, snapshot=False).items() if op == "I")
    loaded_now = sum(n for (op, _k), n in audit.items() if op == "I") - rows_before - stream_inserts
    assert loaded_now == total - rows_before
    if count > ranges_before:
        assert (
            f"snapshot loaded: {loaded_now:,} rows in {count - ranges_before} of its {count} key ranges"
            in (" ".join(lines))
        ), lines
    return count, loaded_now, _load_seconds(said), seconds


# (fail point, pass): after the 2nd of about 5 ranges committed (one loader: exactly 2), and
# after the last one, before the constraints and the load's phase (the resume loads no range).
SMALL = [("load.range", 2), ("load.constraints", 1)]


@pytest.mark.integration
@pytest.mark.faults
@pytest.mark.parametrize(("point", "at"), SMALL, ids=[f"{p}@{n}" for p, n in SMALL])
def test_a_killed_snapshot_load_resumes_with_the_ranges_not_committed(spark, pg, target, tmp_path, point, at):
    name = "snap_" + point.replace(".", "_") + f"_{at}"
    cfg, cfg_file = _config(tmp_path, name, initial_rows=5_000, range_rows=1_000, transactions=60)
    ranges, committed = _killed_during_the_load(pg, target, tmp_path, name, cfg_file, point, at)
    if point == "load.range":
        assert ranges == at and 0 < committed < 5_000
    count, loaded, _load, _run = _resume_exactly_once(spark, target, cfg, tmp_path, name, ranges, committed)
    assert count >= 4, count  # several ranges: the sample cut 5,000 rows in ranges of about 1,000
    if point == "load.constraints":
        assert (ranges, committed, loaded) == (count, 5_000, 0)


@pytest.mark.faults_large
@pytest.mark.timeout(3600)  # three runs of 1,000,000 rows: minutes on a busy machine
def test_a_million_row_snapshot_load_killed_at_80_percent_loads_only_the_rest(
    spark, pg, target, tmp_path, capsys, record_property
):
    rows_, transactions = 1_000_000, 200
    # the reference: the same snapshot loaded whole, uninterrupted, by the same Spark session into
    # a table audited the same way
    full_cfg, _ = _config(tmp_path, "snap_full_1m", rows_, RANGE_ROWS, transactions)
    said: list[tuple[float, str]] = []
    audit = audit_file(tmp_path, "snap_full_1m")
    t = time.perf_counter()
    _result, report = run(spark, full_cfg, target, custom_sql=[audit], on_phase=_timed(said))
    full_run = time.perf_counter() - t
    assert report["verdict"] == "converged" and report["snapshot_rows"] == rows_
    full_load = _load_seconds(said)

    name = "snap_kill_1m"
    cfg, cfg_file = _config(tmp_path, name, rows_, RANGE_ROWS, transactions)
    ranges, committed = _killed_during_the_load(pg, target, tmp_path, name, cfg_file, "load.range", 32)
    # the 32nd commit kills the run; another loader may commit its range while the kill lands
    assert 32 <= ranges < 40, ranges
    count, loaded, resume_load, resume_run = _resume_exactly_once(
        spark, target, cfg, tmp_path, name, ranges, committed
    )
    assert count == 40, count  # 1,000,000 rows in ranges of about 25,000
    assert loaded == rows_ - committed <= rows_ * 0.25  # the ranges not committed: about 8 of 40
    figures = {
        "ranges": count,
        "committed_before_the_kill": committed,
        "loaded_by_the_resume": loaded,
        "resume_load_s": round(resume_load, 1),
        "resume_run_s": round(resume_run, 1),
        "full_load_s": round(full_load, 1),
        "full_run_s": round(full_run, 1),
    }
    for k, v in figures.items():
        record_property(k, v)
    with capsys.disabled():  # the figures, on the console (a benchmark's, never asserted on)
        print(
            f"\n1M snapshot load killed at its 32nd range committed: {ranges} of {count} ranges committed "
            f"({committed:,} rows, {committed / rows_:.0%}); the resume loaded {loaded:,} rows in {count - ranges} ranges, "
            f"load {resume_load:.1f} s (whole resumed run {resume_run:.1f} s); a full load "
            f"{full_load:.1f} s (whole run {full_run:.1f} s)"
        )
