"""What a dead run left, removed by ``applier clean`` (``leftovers.clean``): its own folders in the
temporary directory, and the folders they recorded as theirs elsewhere (Spark's local folders
under SPARK_LOCAL_DIRS), never a folder some other process owns."""

from __future__ import annotations

import os
from pathlib import Path

from applier import leftovers

DEAD = "999999999 1\n"  # no such PID: its owner is gone


def _owned(root: Path, prefix: str, owner: str) -> Path:
    folder = leftovers.owned_dir(prefix, root)
    (folder / leftovers.OWNER).write_text(owner, encoding="utf-8")
    (folder / "blockmgr-1").mkdir()  # something inside, as Spark leaves it
    return folder


def test_a_dead_runs_folders_go_with_what_they_recorded_elsewhere(tmp_path: Path) -> None:
    tmp, local = tmp_path / "tmp", tmp_path / "local"
    tmp.mkdir()
    local.mkdir()
    run = _owned(tmp, "applier-spark-", DEAD)
    spark_local = _owned(local, "applier-spark-", DEAD)
    leftovers.record_elsewhere(run, spark_local)
    removed = leftovers.clean(tmp)
    assert set(removed) == {run, spark_local}
    assert not run.exists() and not spark_local.exists()


def test_a_recorded_folder_owned_by_another_process_is_left(tmp_path: Path) -> None:
    tmp, local = tmp_path / "tmp", tmp_path / "local"
    tmp.mkdir()
    local.mkdir()
    run = _owned(tmp, "applier-spark-", DEAD)
    live = leftovers.owned_dir("applier-spark-", local)  # this process's: alive
    stranger = local / "someone-elses"  # no owner file at all
    stranger.mkdir()
    other_dead = _owned(local, "applier-spark-", "999999998 1\n")  # dead, but another owner
    for f in (live, stranger, other_dead):
        leftovers.record_elsewhere(run, f)
    assert leftovers.clean(tmp) == [run]
    assert live.exists() and stranger.exists() and other_dead.exists()


def test_a_live_runs_folder_and_its_record_are_never_touched(tmp_path: Path) -> None:
    (tmp_path / "local").mkdir()
    run = leftovers.owned_dir("applier-spark-", tmp_path)
    elsewhere = leftovers.owned_dir("applier-spark-", tmp_path / "local")
    leftovers.record_elsewhere(run, elsewhere)
    assert (run / leftovers.OWNER).read_text().split()[0] == str(os.getpid())
    assert leftovers.clean(tmp_path) == []
    assert run.exists() and elsewhere.exists()
    leftovers.remove(run)  # the owner's own exit removes both
    assert not run.exists() and not elsewhere.exists()


def test_the_owner_is_told_by_its_start_time_as_the_kernel_counts_it(tmp_path: Path) -> None:
    """The owner file holds the start time in clock ticks since boot, the kernel's own figure
    (the text earlier versions wrote, so their live runs' folders stay theirs); the same PID with
    another start time is a PID reused since: its folders are a dead run's."""
    folder = leftovers.owned_dir("applier-work-", tmp_path)
    pid, started = (folder / leftovers.OWNER).read_text(encoding="utf-8").split()
    kernel = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]  # field 22: the oracle
    assert (int(pid), started) == (os.getpid(), kernel)
    assert leftovers.owner_alive(folder)
    reused = _owned(tmp_path, "applier-work-", f"{pid} {int(started) - 1}\n")
    assert not leftovers.owner_alive(reused)
    assert leftovers.clean(tmp_path) == [reused]
    assert folder.exists()
