"""The Spark class-data archive: where it lives, when it is used, and that only a complete one
is ever published (a truncated archive crashes the JVM that maps it)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from applier.sparkenv.classdata import CDS_ENV, UNUSED_DAYS, ClassArchive, class_archive


def test_archive_is_keyed_per_build_in_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CDS_ENV, raising=False)
    a = class_archive(tmp_path)
    if a is None:
        pytest.skip("this machine's Java has no dynamic class-data archives (Java < 13)")
    assert a.path.parent == tmp_path and a.path.name.startswith("spark-cds-") and a.path.suffix == ".jsa"
    assert str(os.getpid()) in a.partial.name and a.partial.parent == tmp_path
    assert class_archive(tmp_path) == a  # same build, same key
    assert a.java_options().startswith(f"-XX:ArchiveClassesAtExit={a.partial} ")  # not recorded yet
    a.path.write_bytes(b"x")
    assert a.java_options().startswith(f"-XX:SharedArchiveFile={a.path} ")


@pytest.mark.parametrize("off", ["0", "off", "false"])
def test_archive_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, off: str) -> None:
    monkeypatch.setenv(CDS_ENV, off)
    assert class_archive(tmp_path) is None


def test_no_archive_for_a_java_without_dynamic_archives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "jdk11"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("")
    (home / "release").write_text('JAVA_VERSION="11.0.22"\n')
    monkeypatch.setenv("JAVA_HOME", str(home))
    monkeypatch.delenv(CDS_ENV, raising=False)
    assert class_archive(tmp_path / "cache") is None


def _archive(tmp_path: Path) -> ClassArchive:
    return ClassArchive(tmp_path / "spark-cds-new.jsa", tmp_path / "spark-cds-new.123.partial")


def test_publish_after_a_clean_exit_drops_builds_unused_for_weeks(tmp_path: Path) -> None:
    a = _archive(tmp_path)
    old = tmp_path / "spark-cds-old.jsa"
    other = tmp_path / "spark-cds-other-checkout.jsa"
    for f in (old, other):
        f.write_bytes(b"another build")
    weeks_ago = time.time() - (UNUSED_DAYS + 1) * 86400
    os.utime(old, (weeks_ago, weeks_ago))
    a.partial.write_bytes(b"archive")
    assert a.publish(0)
    assert a.path.read_bytes() == b"archive" and not a.partial.exists()
    assert not old.exists() and other.exists()  # another checkout's archive, in use, stays


def test_using_an_archive_marks_it(tmp_path: Path) -> None:
    a = _archive(tmp_path)
    a.path.write_bytes(b"archive")
    os.utime(a.path, (0, 0))
    a.used()
    assert a.path.stat().st_mtime > time.time() - 60


@pytest.mark.parametrize("code", [1, -9, None])
def test_no_publish_unless_the_jvm_exited_cleanly(tmp_path: Path, code: int | None) -> None:
    a = _archive(tmp_path)
    a.partial.write_bytes(b"maybe half")
    assert not a.publish(code)
    assert not a.path.exists() and not a.partial.exists()  # the partial file is never left behind


def test_no_publish_of_an_empty_or_missing_recording(tmp_path: Path) -> None:
    a = _archive(tmp_path)
    assert not a.publish(0)
    a.partial.write_bytes(b"")
    assert not a.publish(0)
    assert not a.path.exists()


def test_stale_recordings_of_dead_processes_are_removed(tmp_path: Path) -> None:
    import subprocess
    import sys

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    a = _archive(tmp_path)
    stale = tmp_path / f"spark-cds-old.{int(dead.stdout)}.partial"
    live = tmp_path / f"spark-cds-old.{os.getpid()}.partial"
    odd = tmp_path / "spark-cds-old.notapid.partial"
    for f in (stale, live, odd):
        f.write_bytes(b"x")
    a.clear_stale()
    assert not stale.exists() and live.exists() and odd.exists()


def test_quick_jit_is_asked_for_and_the_environment_rules(monkeypatch) -> None:
    from applier.sparkenv.session import JIT_ENV, quick_jit_chosen

    monkeypatch.delenv(JIT_ENV, raising=False)
    assert quick_jit_chosen(True) and not quick_jit_chosen(False) and not quick_jit_chosen(None)
    monkeypatch.setenv(JIT_ENV, "full")
    assert not quick_jit_chosen(True)
    monkeypatch.setenv(JIT_ENV, "QUICK")
    assert quick_jit_chosen(None)
    monkeypatch.setenv(JIT_ENV, "fast")  # not a choice: the caller's
    assert not quick_jit_chosen(False)


def test_a_small_run_is_a_small_generated_stream_or_small_change_files(tmp_path) -> None:
    import dataclasses

    from applier.api.session import small_run
    from applier.config import demo_config
    from applier.sources.formats import Options
    from applier.sparkenv.session import QUICK_JIT_COMMANDS

    cfg = demo_config()
    assert small_run(cfg, None)  # 10,000 commands
    big = cfg.replace(workload=dataclasses.replace(cfg.workload, transactions=QUICK_JIT_COMMANDS))
    assert big.workload.commands > QUICK_JIT_COMMANDS and not small_run(big, None)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "part-0.jsonl").write_bytes(b"x" * 1000)
    assert small_run(big, tmp_path / "c")  # the files' size, not the workload's
    (tmp_path / "c" / "part-1.jsonl").write_bytes(b"x" * (QUICK_JIT_COMMANDS * 100))
    assert not small_run(cfg, tmp_path / "c")
    assert not small_run(cfg, None, Options(format="mssql-cdc", source="Driver=x"))  # not known
    assert not small_run(cfg, tmp_path / "missing")
