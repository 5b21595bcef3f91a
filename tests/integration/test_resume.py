"""Exactly once across a kill: a run killed with SIGKILL part-way through its apply and resumed on
the same subscriber applies each command once, skipping what the progress table shows
committed. A resume continues only the run the subscriber holds: other settings, or a
subscriber that holds no run but its tables, are refused with what differs named; one that holds
neither (a run stopped before it recorded its start) starts the run from the beginning; a run
stopped during its snapshot load loads only the key ranges it had not committed."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import applier
from applier.apply.snapshot import key_ranges, load_snapshot
from applier.errors import ConfigError, InputError
from applier.sources.dataset import read_changes
from applier.sources.generator import LANES, generate_lane
from applier.targets.progress import APPLIED, INSTALLED, LoadedRange, ProgressTable
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


def _audit_inserts(target, name: str) -> None:  # type: ignore[no-untyped-def]
    """A trigger that records the key of every row inserted into ``dbo.<name>``."""
    conn = target.connect()
    try:
        cur = conn.cursor()
        cur.execute(f'CREATE TABLE "dbo"."loaded_{name}" (id integer NOT NULL)')
        cur.execute(
            f"""CREATE FUNCTION "dbo"."loaded_{name}"() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN INSERT INTO "dbo"."loaded_{name}" VALUES (NEW.id); RETURN NEW; END $$"""
        )
        cur.execute(
            f'CREATE TRIGGER "loaded_{name}" AFTER INSERT ON "dbo"."{name}" '
            f'FOR EACH ROW EXECUTE FUNCTION "dbo"."loaded_{name}"()'
        )
        conn.commit()
    finally:
        conn.close()


def _stopped_during_the_load(target, name: str) -> None:  # type: ignore[no-untyped-def]
    """The run record back at phase "installed", no progress (the rounds apply again)."""
    table = ProgressTable(target.dialect)
    conn = target.connect()
    try:
        cur = conn.cursor()
        held = table.read_run(cur, name)
        assert held is not None
        table.write_run(cur, name, held.fingerprint, held.settings, INSTALLED, None)
        table.clear(cur, name)
        conn.commit()
    finally:
        conn.close()


def test_a_run_stopped_during_its_snapshot_load_loads_only_the_key_ranges_not_recorded(
    spark, target, tmp_path
):
    name = "resume_load"
    cfg, _f, ch, sn, _total = _files(tmp_path, name)
    cfg = cfg.replace(run=dataclasses.replace(cfg.run, snapshot_range_rows=50))  # 200 rows: 4 ranges
    run(spark, cfg, target, changes=ch, snapshot=sn)
    # What a kill during the snapshot load leaves: phase "installed", the ranges committed (0 and
    # 2, loaded here as the load loads them) with their records, no progress.
    snapshot = read_changes(spark, cfg, ch, sn).snapshot
    ranges = key_ranges(snapshot, 50)
    assert ranges.count == 4, ranges
    _stopped_during_the_load(target, name)
    conn = target.connect()
    try:
        cur = conn.cursor()
        assert set(ProgressTable(target.dialect).read_ranges(cur, name)) == {0, 1, 2, 3}
        ProgressTable(target.dialect).clear_ranges(cur, name)
        cur.execute(f'DELETE FROM "dbo"."{name}"')
        conn.commit()
    finally:
        conn.close()
    skipped = {n: LoadedRange(0, ranges.layout) for n in (1, 3)}
    first = load_snapshot(snapshot, target, cfg.articles, name, ranges=ranges, done=skipped)
    assert (first.loaded, first.ranges, first.resumed) == (first.rows, 4, 2)
    kept = {i for (i,) in rows(target, f'SELECT id FROM "dbo"."{name}"')}
    lost = [k for k in range(1, 201) if k not in kept]
    assert len(lost) == 200 - first.loaded
    assert {ranges.of(f"dbo.{name}", json.dumps([k])) for k in lost} == {1, 3}
    _audit_inserts(target, name)

    said: list[str] = []
    result, report = run(spark, cfg, target, changes=ch, snapshot=sn, resume=True, on_phase=said.append)
    assert report["verdict"] == "converged", report["divergent"][:2]
    assert report["snapshot_rows"] == 200
    assert report["outcomes"].get("resumed", 0) == 0  # no round was committed: every one applies
    assert any(f"2 of its 4 key ranges ({first.loaded:,} rows)" in t for t in said), said
    assert any(f"snapshot loaded: {len(lost):,} rows in 2 of its 4 key ranges" in t for t in said), said
    # inserted by the resume: the snapshot rows of ranges 1 and 3 and the stream's inserts, each once
    loaded = Counter(i for (i,) in rows(target, f'SELECT id FROM "dbo"."loaded_{name}"'))
    stream = [json.loads(x) for x in ch.read_text().splitlines()]
    expected = Counter(lost) + Counter(r["after"]["id"] for r in stream if r["op"] == "I")
    assert loaded == expected, (loaded - expected, expected - loaded)

    # A resume whose ranges are cut otherwise (another snapshot_range_rows) loads it again.
    _stopped_during_the_load(target, name)
    other = cfg.replace(run=dataclasses.replace(cfg.run, snapshot_range_rows=40))
    said.clear()
    result, report = run(spark, other, target, changes=ch, snapshot=sn, resume=True, on_phase=said.append)
    assert any("were cut otherwise" in t for t in said), said
    assert report["snapshot_rows"] == 200
    assert report["verdict"] == "converged", report["divergent"][:2]
