"""Exactly once across a kill: a run killed with SIGKILL part-way through its apply and resumed on
the same subscriber applies each command once, skipping what the progress table shows
committed. A resume continues only the run the subscriber holds: other settings, or a
subscriber that holds no run but its tables, are refused with what differs named; one that holds
neither (a run stopped before it recorded its start) starts the run from the beginning; a run
stopped before its snapshot was wholly loaded loads it again."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import applier
from applier.errors import ConfigError, InputError
from applier.sources.generator import LANES, generate_lane
from applier.targets.progress import APPLIED, INSTALLED, ProgressTable
from tests.support.changes import write_jsonl
from tests.support.runs import run
from tests.support.subscriber import rows

pytestmark = pytest.mark.integration

CONFIG = """
[run]
subscription = "{name}"
streams = 4
commit_batch_size = 2

[workload]
kind = "key-chains"
initial_rows = 200
transactions = 240
key_update_share = 0.1
seed = 5

[[articles]]
name = "dbo.{name}"
columns = [
  {{ name = "id", type = "int", key = true }},
  {{ name = "v", type = "nvarchar(40)" }},
  {{ name = "n", type = "int" }},
]
"""


def _files(tmp_path: Path, name: str):  # type: ignore[no-untyped-def]
    """The config file, and the generated stream written as change and snapshot files."""
    cfg_file = tmp_path / f"{name}.toml"
    cfg_file.write_text(CONFIG.format(name=name), encoding="utf-8")
    cfg = applier.load_config(cfg_file)
    snap, changes = [], []
    for lane in range(LANES):
        for kind, r in generate_lane(cfg.articles, cfg.workload, lane):
            if kind == "snapshot":
                snap.append({"article": r[0], "image": json.loads(r[2])})
            else:
                lsn, x, c, art, op, _v, before, after, changed, _kb, _ka = r
                changes.append(
                    {
                        "lsn": lsn,
                        "xact_seqno": x,
                        "command_id": c,
                        "article": art,
                        "op": op,
                        "before": json.loads(before) if before else None,
                        "after": json.loads(after) if after else None,
                        "changed": changed,
                    }
                )
    ch = write_jsonl(tmp_path / f"{name}-changes.jsonl", sorted(changes, key=lambda r: r["lsn"]))
    sn = write_jsonl(tmp_path / f"{name}-snapshot.jsonl", snap)
    return cfg, cfg_file, ch, sn, len(changes)


def _last_round(target, name: str) -> int | None:  # type: ignore[no-untyped-def]
    try:
        got = rows(target, 'SELECT max(last_round) FROM "applier"."progress" WHERE subscription = ?', name)
    except Exception:  # noqa: BLE001 - the table is not there yet
        return None
    return got[0][0]


def _kill_during_apply(pg, target, cfg_file: Path, ch: Path, sn: Path, name: str, at_round: int) -> None:  # type: ignore[no-untyped-def]
    """`applier run` in its own process group, SIGKILLed once round ``at_round`` committed."""
    cmd = [sys.executable, "-m", "applier.cli", "run", "--config", str(cfg_file), "--changes", str(ch)]
    cmd += ["--snapshot", str(sn), "--target", pg.connection_string(), "--quiet"]
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            last = _last_round(target, name)
            if last is not None and last >= at_round:
                break
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"


def test_killed_run_resumes_and_applies_each_command_once(spark, pg, target, tmp_path):
    name = "resume_kill"
    cfg, cfg_file, ch, sn, total = _files(tmp_path, name)
    _kill_during_apply(pg, target, cfg_file, ch, sn, name, at_round=3)
    committed = _last_round(target, name)
    assert committed is not None and committed < 120 - 1  # killed part-way through its 120 rounds

    result, report = run(spark, cfg, target, changes=ch, snapshot=sn, resume=True)
    resumed = report["outcomes"]["resumed"]
    applied = report["outcomes"].get("applied", 0) + report["outcomes"].get("reapplied", 0)
    assert 0 < resumed < total
    assert resumed + applied == total  # each command once: committed before the kill, or now
    assert report["verdict"] == "converged", report["divergent"][:2]


def test_resume_refuses_another_run_naming_what_differs(spark, target, tmp_path):
    name = "resume_other"
    cfg, _f, ch, sn, _n = _files(tmp_path, name)
    run(spark, cfg, target, changes=ch, snapshot=sn)
    more = cfg.replace(run=dataclasses.replace(cfg.run, streams=8))
    with pytest.raises(ConfigError, match="streams is 8 now, 4 in the subscriber"):
        run(spark, more, target, changes=ch, snapshot=sn, resume=True)
    other = write_jsonl(tmp_path / "other.jsonl", [json.loads(x) for x in ch.read_text().splitlines()[:-1]])
    with pytest.raises(ConfigError, match="source differ"):
        run(spark, cfg, target, changes=other, snapshot=sn, resume=True)
    never = cfg.replace(run=dataclasses.replace(cfg.run, subscription="resume_never"))
    with pytest.raises(
        InputError,
        match=r"holds no run of subscription 'resume_never'.*table\(s\) dbo\.resume_other are there",
    ):
        run(spark, never, target, changes=ch, snapshot=sn, resume=True)


def test_resume_where_neither_the_run_nor_its_tables_are_starts_it_from_the_beginning(
    spark, target, tmp_path
):
    name = "resume_fresh"
    cfg, _f, ch, sn, total = _files(tmp_path, name)
    said: list[str] = []
    result, report = run(spark, cfg, target, changes=ch, snapshot=sn, resume=True, on_phase=said.append)
    started = [t for t in said if t.startswith("--resume:")]
    assert started == ["--resume: no run of 'resume_fresh' nor its tables here: starting from the beginning"]
    assert report["snapshot_rows"] == 200
    assert report["outcomes"].get("resumed", 0) == 0
    assert report["outcomes"].get("applied", 0) + report["outcomes"].get("reapplied", 0) == total
    assert report["verdict"] == "converged", report["divergent"][:2]
    # recorded as any run is: a later --resume continues it
    conn = target.connect()
    try:
        held = ProgressTable(target.dialect).read_run(conn.cursor(), name)
    finally:
        conn.close()
    assert held is not None and held.phase == APPLIED and held.snapshot_rows == 200


def test_a_run_stopped_before_its_snapshot_was_loaded_loads_it_again(spark, target, tmp_path):
    name = "resume_load"
    cfg, _f, ch, sn, total = _files(tmp_path, name)
    run(spark, cfg, target, changes=ch, snapshot=sn)
    # What a kill during the snapshot load leaves: phase "installed", part of the rows, no progress.
    endpoint = target
    conn = endpoint.connect()
    try:
        cur = conn.cursor()
        table = ProgressTable(endpoint.dialect)
        held = table.read_run(cur, name)
        assert held is not None
        table.write_run(cur, name, held.fingerprint, held.settings, INSTALLED, None)
        table.clear(cur, name)
        cur.execute(f'DELETE FROM "dbo"."{name}" WHERE id % 2 = 0')
        conn.commit()
    finally:
        conn.close()
    result, report = run(spark, cfg, target, changes=ch, snapshot=sn, resume=True)
    assert report["snapshot_rows"] == 200
    assert report["outcomes"].get("resumed", 0) == 0  # nothing was committed: everything applies
    assert report["verdict"] == "converged", report["divergent"][:2]
