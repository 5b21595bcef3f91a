"""A long schedule is sorted by Spark and streamed to a file, never collected: the same steps,
in the same order, as the schedule kept in memory."""

from __future__ import annotations

import gc
import importlib
import json
import pickle
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from applier.apply.digest import digest_events
from applier.apply.events import EVENT_SCHEMA
from applier.config import RunSettings, Workload, demo_config
from applier.pipeline.schedule import ScheduleFile, read_schedule, schedule_rows, write_schedule
from tests.support.runs import run

pytestmark = pytest.mark.integration


COLUMNS = [f.split()[0] for f in EVENT_SCHEMA.split(", ")]


def _step(stream, round_, kind, lsns, t0, n=None, error=None):
    """A ``step`` event as applier.apply.events writes it."""
    detail = {"lsns": lsns, "anchor": lsns[-1] if lsns else None, **({"error": error} if error else {})}
    row = {
        "kind": "step",
        "stream": stream,
        "round": round_,
        "outcome": kind,
        "class": "conflict" if error else None,
        "code": "23505" if error else None,
        "message": json.dumps(detail),
        "n": n,
        "t_exec": t0,
        "t_commit": t0 + 0.01,
    }
    return tuple(row.get(c) for c in COLUMNS)


def _steps(controlled: bool) -> list[tuple]:
    """41 steps on 3 streams, out of time order, no ties; the last a failed commit."""
    steps = []
    for i in range(40):
        stream, t0 = i % 3, 100.0 + (i * 7919 % 40) / 10
        lsns = list(range(i * 10, i * 10 + 1 + i % 4))
        steps.append(_step(stream, i // 6, "exec", lsns, t0, n=(i * 13 % 40) if controlled else None))
    steps.append(_step(1, 7, "commit", [], 200.0, n=40 if controlled else None, error="duplicate key"))
    return steps


@pytest.mark.parametrize("controlled", [False, True])
def test_a_long_schedule_is_a_file_with_the_same_steps(spark, tmp_path, controlled):
    steps = _steps(controlled)
    ev = spark.createDataFrame(steps, EVENT_SCHEMA).repartition(3)
    kept = schedule_rows(ev)
    assert isinstance(kept, list) and len(kept) == 41
    # the steps carried by the events' digest (no job of their own) are the same schedule
    digest = digest_events(ev)
    assert digest.step_rows is not None and len(digest.step_rows) == 41
    assert schedule_rows(ev, digest=digest) == kept
    big = digest_events(ev, step_chars=10)  # a task's steps too long to travel
    assert big.step_rows is None and big.steps == 41
    assert schedule_rows(ev, digest=big) == kept
    spilled = schedule_rows(ev, keep_chars=0)
    assert isinstance(spilled, ScheduleFile) and len(spilled) == 41
    assert list(spilled) == kept
    # partitions of ~300 characters (about ten), written by Spark under `work` and read by the
    # driver file by file in partition order; the folder goes once read
    spill = tmp_path / "spill"
    assert list(schedule_rows(ev, keep_chars=0, part_chars=300, work=spill)) == kept
    assert not spill.exists()
    assert spilled[3] == kept[3] and spilled[-1] == kept[-1] and spilled[2:5] == kept[2:5]
    assert kept[-1]["result"] == {"class": "conflict", "code": "23505", "message": "duplicate key"}
    out = write_schedule(spilled, tmp_path / "schedule.jsonl")
    assert read_schedule(out) == kept
    copy = pickle.loads(pickle.dumps(spilled))
    assert list(copy) == kept
    del copy
    gc.collect()
    assert spilled.path.exists()  # a copy owns nothing
    folder = spilled.path.parent
    del spilled
    gc.collect()
    assert not folder.exists()  # the file goes with its schedule


@pytest.mark.parametrize("controlled", [False, True])
def test_a_long_schedule_merges_the_stream_tasks_files_without_a_job(
    spark, tmp_path, monkeypatch, controlled
):
    """Each stream task writes its events file, its steps in the order it ran them: the driver
    merges those files into the schedule, with no Spark job, in the order Spark sorts them into;
    a file whose steps are out of order (or a count that differs) leaves it to Spark's sort."""
    import applier.pipeline.schedule as schedule
    from applier.pipeline.schedule import event_files
    from applier.sparkenv import write_run_parquet

    steps = _steps(controlled)
    noise = [tuple(("batch" if c == "kind" else None) for c in COLUMNS)] * 5  # other events between
    by = ["n", "stream"] if controlled else ["t_exec", "stream", "round"]
    ev = spark.createDataFrame(steps + noise, EVENT_SCHEMA)
    kept = schedule_rows(ev)
    in_order = tmp_path / "events-0"
    write_run_parquet(ev.repartition(3, "stream").sortWithinPartitions(*by), in_order)
    files = event_files([in_order])
    assert len(files) > 1  # several files to merge (streams hashed into 3 partitions)
    on_disk = spark.read.schema(EVENT_SCHEMA).parquet(str(in_order))
    digest = digest_events(on_disk, step_chars=10)  # too long to travel: the schedule is a file
    sorted_by_spark = []
    real_write = schedule.write_run_parquet
    monkeypatch.setattr(schedule, "write_run_parquet", lambda *a: sorted_by_spark.append(1) or real_write(*a))
    merged = schedule_rows(on_disk, keep_chars=0, digest=digest, files=files)
    assert isinstance(merged, ScheduleFile) and list(merged) == kept
    assert sorted_by_spark == []
    # one file out of order: Spark sorts them, and the schedule is the same
    shuffled = tmp_path / "events-1"
    write_run_parquet(ev.repartition(3, "stream").sortWithinPartitions(F.desc(by[0])), shuffled)
    again = spark.read.schema(EVENT_SCHEMA).parquet(str(shuffled))
    assert list(schedule_rows(again, keep_chars=0, digest=digest, files=event_files([shuffled]))) == kept
    assert sorted_by_spark == [1]
    # files that do not hold every step (here: one of the three): Spark sorts them
    assert list(schedule_rows(on_disk, keep_chars=0, digest=digest, files=files[:1])) == kept
    assert sorted_by_spark == [1, 1]


def _codecs(folder: Path) -> set[str]:
    """The compression of every column chunk of the Parquet files under ``folder``."""
    out = set()
    for f in folder.rglob("*.parquet"):
        md = pq.ParquetFile(f).metadata
        for g in range(md.num_row_groups):
            out |= {md.row_group(g).column(c).compression for c in range(md.num_columns)}
    return out


def test_what_a_run_writes_and_reads_back_is_zstd(spark, target, tmp_path, monkeypatch):
    # Snappy-compressed Parquet is read through decompressors holding direct buffers outside
    # the JVM's heap that grew with the text read (187 MiB for 450 MB of steps, 320 for 900):
    # the events and a spilled schedule are zstd.
    import applier.pipeline.schedule as schedule

    seen: list[set[str]] = []
    read = schedule._file_steps

    def recording(f: Path, columns):  # type: ignore[no-untyped-def]
        seen.append(_codecs(Path(f).parent))
        return read(f, columns)

    pipeline_run = importlib.import_module("applier.pipeline.run")  # the package exports run()

    def spilling(ev, **kw):  # type: ignore[no-untyped-def]
        return schedule.schedule_rows(ev, keep_chars=0, **kw)  # the run's schedule spills, however short

    monkeypatch.setattr(pipeline_run, "schedule_rows", spilling)
    monkeypatch.setattr(schedule, "_file_steps", recording)
    cfg = demo_config().replace(
        workload=Workload(kind="key-chains", transactions=60, initial_rows=20, seed=5),
        run=RunSettings(subscription="zstd-events", streams=2, commit_batch_size=10),
    )
    work = tmp_path / "work"
    result, report = run(spark, cfg, target, work_dir=work)
    assert report["verdict"] == "converged"
    events = [p for p in work.rglob("events-*") if p.is_dir()]
    assert events, f"no events folder under {work}: {sorted(p.name for p in work.iterdir())}"
    for folder in events:
        assert _codecs(folder) == {"ZSTD"}, folder
    # the schedule was merged from the stream tasks' events files (zstd), with no Spark sort
    assert seen and all(c == {"ZSTD"} for c in seen), "the schedule was not read from the events files"
