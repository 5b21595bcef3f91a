"""Signals and kill -9: ``applier run`` stopped by SIGINT (to its process group, as Ctrl-C) or
SIGTERM (to the process) while installing, applying or verifying exits 130 / 143 within
seconds, prints no traceback, writes its report (verdict unknown, the reason), and leaves no
cluster, no server process and no temporary folder behind. After a kill -9 of the whole
process group, what it left (the embedded cluster runs in its own session) is found and
removed by ``applier clean`` (and the next run), and a live run's folders are never touched."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from applier import leftovers

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


def _mine(pid: int) -> list[Path]:
    """The temporary folders the process ``pid`` owns."""
    out = []
    for prefix in leftovers.PREFIXES:
        for folder in Path(tempfile.gettempdir()).glob(prefix + "*"):
            owner = folder / leftovers.OWNER
            if owner.exists() and owner.read_text().split()[0] == str(pid):
                out.append(folder)
    return out


def _postmaster_alive(folder: Path) -> bool:
    try:
        pid = int((folder / "data" / "postmaster.pid").read_text().splitlines()[0])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return False
    return True


def _start(tmp_path: Path, report: Path) -> subprocess.Popen[str]:
    cmd = [sys.executable, *CMD, "--report", str(report)]
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def _wait_for(proc: subprocess.Popen[str], phase: str) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if phase in line:
            return
    pytest.fail(f"the run ended before {phase!r}")


CASES = [
    (signal.SIGINT, "installing tables", 130),
    (signal.SIGINT, "applying", 130),
    (signal.SIGINT, "verifying", 130),
    (signal.SIGTERM, "installing tables", 143),
    (signal.SIGTERM, "applying", 143),
    (signal.SIGTERM, "verifying", 143),
]


@pytest.mark.parametrize(
    ("sig", "phase", "code"), CASES, ids=[f"{c[0].name}-{c[1].split()[0]}" for c in CASES]
)
def test_signal_stops_cleanly(tmp_path, sig, phase, code):
    report = tmp_path / "report.json"
    proc = _start(tmp_path, report)
    try:
        _wait_for(proc, phase)
        time.sleep(0.2)
        folders = _mine(proc.pid)
        assert any(f.name.startswith("applier-pg-") for f in folders)
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
    assert f"stopped by {sig.name}" in err
    assert not any(f.exists() for f in folders), "a temporary folder was left behind"
    assert not any(_postmaster_alive(f) for f in folders)
    doc = json.loads(report.read_text())
    assert (
        doc["verdict"] == "unknown" and doc["reason"] == f"stopped by {sig.name}" and doc["exit_code"] == code
    )


def test_kill_9_leftovers_are_removed_by_the_next_run(tmp_path):
    proc = _start(tmp_path, tmp_path / "report.json")
    try:
        _wait_for(proc, "applying")
        folders = _mine(proc.pid)
        pg = [f for f in folders if f.name.startswith("applier-pg-")]
        assert pg and _postmaster_alive(pg[0])
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole group: the cluster runs in a session of its own
        proc.communicate(timeout=60)
    assert all(f.exists() for f in folders) and _postmaster_alive(pg[0]), "kill -9 left nothing to clean"
    mine = leftovers.owned_dir("applier-work-")  # a live run's folder: never touched
    try:
        out = subprocess.run(
            [sys.executable, "-m", "applier.cli", "clean"], capture_output=True, text=True, check=True
        ).stdout
        removed = {Path(line.split(" ", 1)[1]) for line in out.splitlines() if line.startswith("removed ")}
        assert set(folders) <= removed and mine.exists()
        assert not any(f.exists() for f in folders) and not _postmaster_alive(pg[0])
    finally:
        import shutil

        shutil.rmtree(mine, ignore_errors=True)
