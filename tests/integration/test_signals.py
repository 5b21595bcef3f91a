"""Signals and kill -9: ``applier run`` stopped by SIGINT (to its process group, as Ctrl-C) or
SIGTERM (to the process) while generating, loading the snapshot, applying or verifying exits
130 / 143 within seconds, prints no traceback but one line naming what it interrupted (``while
applying round 12 of 300: ...``), writes its report (verdict unknown, the reason), and leaves no
cluster, no server process and no temporary folder behind. After a kill -9 of the whole
process group, what it left (the embedded cluster runs in its own session) is found and
removed by ``applier clean`` (and the next run), and a live run's folders are never touched.

Each run has SPARK_LOCAL_DIRS and TMPDIR of its own (as clusters and CI images set the first):
Spark's ``blockmgr-*`` and ``spark-*`` folders live there, not in applier's folders, and both
must be empty afterwards, as must the JVM's /tmp/hsperfdata_<user>/<pid>."""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from applier import leftovers
from tests.support.killing import Scratch, clean, left
from tests.support.killing import scratch as scratch_folders

pytestmark = [pytest.mark.integration, pytest.mark.faults]

CMD = [
    "-m",
    "applier.cli",
    "run",
    "--workload",
    "uniform",
    "--transactions",
    "6000",
    "--commit-batch-size",
    "20",
]


def _mine(pid: int, root: Path) -> list[Path]:
    """The temporary folders the process ``pid`` owns in ``root``."""
    out = []
    for prefix in leftovers.PREFIXES:
        for folder in root.glob(prefix + "*"):
            owner = folder / leftovers.OWNER
            if owner.exists() and owner.read_text().split()[0] == str(pid):
                out.append(folder)
    return out


@pytest.fixture
def scratch() -> Iterator[Scratch]:
    with scratch_folders("sig") as s:
        yield s


def _jvm(pid: int) -> int:
    """The Spark JVM under the run ``pid``, once it has started."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for child in psutil.Process(pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if child.name() == "java":
                    return child.pid
        time.sleep(0.1)
    pytest.fail("no JVM started under the run")


def _perf_file(jvm: int) -> Path:
    """HotSpot's performance-counter file of ``jvm`` (always under /tmp on Linux)."""
    return Path("/tmp") / f"hsperfdata_{getpass.getuser()}" / str(jvm)


def _postmaster_alive(folder: Path) -> bool:
    try:
        pid = int((folder / "data" / "postmaster.pid").read_text().splitlines()[0])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return False
    return True


def _start(scratch: Scratch, report: Path) -> subprocess.Popen[str]:
    cmd = [sys.executable, *CMD, "--report", str(report)]
    return subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=scratch.env(),
    )


def _wait_for(proc: subprocess.Popen[str], phase: str) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if phase in line:
            return
    pytest.fail(f"the run ended before {phase!r}")


# (signal, the phase line it follows by 0.2 s, exit code, what the stop line says it interrupted).
# Generating lasts ~1.3 s here, loading the snapshot ~6 s (installing the tables ~0.2 s: too
# short to aim at), applying ~17 s, verifying ~3 s.
CASES = [
    (signal.SIGINT, "generating", 130, r"while generating the workload: this run applied nothing$"),
    (
        signal.SIGINT,
        "applying",
        130,
        r"while applying round [0-9]+ of 300: its open transactions were rolled back",
    ),
    (signal.SIGINT, "verifying", 130, r"while verifying: every round was applied and committed"),
    (
        signal.SIGTERM,
        "loading the snapshot",
        143,
        r"while loading the snapshot: the key ranges committed stay",
    ),
    (signal.SIGTERM, "applying", 143, r"while applying round [0-9]+ of 300: "),
    (signal.SIGTERM, "verifying", 143, r"while verifying: "),
]


@pytest.mark.parametrize(
    ("sig", "phase", "code", "said"), CASES, ids=[f"{c[0].name}-{c[1].split()[0]}" for c in CASES]
)
def test_signal_stops_cleanly(tmp_path, scratch, sig, phase, code, said):
    report = tmp_path / "report.json"
    proc = _start(scratch, report)
    try:
        _wait_for(proc, phase)
        time.sleep(0.2)
        jvm = _jvm(proc.pid)
        folders = _mine(proc.pid, scratch.tmp)
        assert any(f.name.startswith("applier-pg-") for f in folders)
        assert any(scratch.local.glob("applier-spark-*/blockmgr-*")), "Spark did not use SPARK_LOCAL_DIRS"
        t = time.monotonic()
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)  # Ctrl-C reaches the terminal's whole process group
        else:
            os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=60)
        seconds = time.monotonic() - t
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == code, err[-2000:]
    assert seconds < 30
    assert "Traceback" not in err and "\tat org.apache" not in err, err[-2000:]
    stop = [ln for ln in err.splitlines() if ln.startswith(f"stopped by {sig.name}")]
    assert len(stop) == 1 and re.search(said, stop[0]), err[-2000:]
    assert not any(f.exists() for f in folders), "a temporary folder was left behind"
    assert not any(_postmaster_alive(f) for f in folders)
    assert not left(scratch.local), f"left in SPARK_LOCAL_DIRS: {left(scratch.local)}"
    assert not left(scratch.tmp), f"left in TMPDIR: {left(scratch.tmp)}"
    assert not _perf_file(jvm).exists()
    doc = json.loads(report.read_text())
    assert (
        doc["verdict"] == "unknown" and doc["reason"] == f"stopped by {sig.name}" and doc["exit_code"] == code
    )


def test_kill_9_leftovers_are_removed_by_the_next_run(tmp_path, scratch):
    proc = _start(scratch, tmp_path / "report.json")
    try:
        _wait_for(proc, "applying")
        jvm = _jvm(proc.pid)
        folders = _mine(proc.pid, scratch.tmp)
        pg = [f for f in folders if f.name.startswith("applier-pg-")]
        assert pg and _postmaster_alive(pg[0])
        spark_local = _mine(proc.pid, scratch.local)
        assert spark_local and any(spark_local[0].glob("blockmgr-*"))
        assert not _perf_file(jvm).exists()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole group: the cluster runs in a session of its own
        proc.communicate(timeout=60)
    assert all(f.exists() for f in folders) and _postmaster_alive(pg[0]), "kill -9 left nothing to clean"
    assert all(f.exists() for f in spark_local)
    mine = leftovers.owned_dir("applier-work-", scratch.tmp)  # a live run's folder: never touched
    out = clean(scratch)
    removed = {Path(line.split(" ", 1)[1]) for line in out.splitlines() if line.startswith("removed ")}
    assert set(folders) | set(spark_local) <= removed and mine.exists()
    assert not any(f.exists() for f in folders) and not _postmaster_alive(pg[0])
    assert not left(scratch.local), f"left in SPARK_LOCAL_DIRS: {left(scratch.local)}"
    assert not left(scratch.tmp, mine), f"left in TMPDIR: {left(scratch.tmp, mine)}"
