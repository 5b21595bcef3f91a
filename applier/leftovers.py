"""Temporary folders owned by a process, and what a dead owner left behind.

Every folder applier creates for the length of a run (the embedded clusters'
``applier-pg-*`` and ``applier-bbf-*``, the run's ``applier-work-*``, Spark's ``applier-spark-*``) holds an
``owner`` file: the creating process's PID and its start time (so that a reused PID is not
taken for the owner). A normal exit, an error or a signal removes the folder; a kill -9
cannot, so the next run (and ``applier clean``) removes the folders whose owner is gone,
after stopping the PostgreSQL server one of them may still run. A live run's folders are
never touched.

A folder may record others its owner created elsewhere (``elsewhere``: one path a line; Spark's
local folders of a run under ``SPARK_LOCAL_DIRS``, each owned the same way): they go with it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

OWNER = "owner"
ELSEWHERE = "elsewhere"  # in an owned folder: folders its owner created outside the temporary directory
PREFIXES = ("applier-pg-", "applier-bbf-", "applier-work-", "applier-spark-")
CLUSTERS = ("applier-pg-", "applier-bbf-")  # folders holding a server's data directory


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (None: no such process), the text
    owner files have always held. psutil's ``create_time`` adds the boot time, which a step of
    the wall clock (NTP) moves: taken off again, so that a live owner never looks replaced."""
    import psutil

    try:
        since_boot = psutil.Process(pid).create_time() - psutil.boot_time()
    except (psutil.Error, ValueError):  # ValueError: a negative pid
        return None
    return str(round(since_boot * os.sysconf("SC_CLK_TCK")))


def owned_dir(prefix: str, root: str | Path | None = None) -> Path:
    """A new temporary folder ``<prefix>*`` owned by this process, in ``root`` (default: the
    temporary directory)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
    (path / OWNER).write_text(f"{os.getpid()} {_start_time(os.getpid()) or ''}\n", encoding="utf-8")
    return path


def record_elsewhere(folder: Path, other: Path) -> None:
    """Record in ``folder`` (owned) that ``other`` (owned by the same process, anywhere) goes
    with it: ``clean`` removes both once their owner is gone. Written before ``other`` is used."""
    with (folder / ELSEWHERE).open("a", encoding="utf-8") as f:
        f.write(f"{other}\n")


def _elsewhere(folder: Path) -> list[Path]:
    """The folders ``folder`` recorded as its own, that a dead owner still owns (a path
    reused since, or one never owned, is left alone)."""
    try:
        lines = (folder / ELSEWHERE).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    try:
        owner = (folder / OWNER).read_text(encoding="utf-8")
    except OSError:
        return []
    out = []
    for line in lines:
        other = Path(line)
        with contextlib.suppress(OSError):
            if line and other.is_dir() and (other / OWNER).read_text(encoding="utf-8") == owner:
                out.append(other)
    return out


def remove(folder: Path) -> None:
    """Remove ``folder`` and what it recorded as its own. A second pass catches what a dying
    child (a killed JVM's Python workers) wrote while the first ran."""
    for path in (*_elsewhere(folder), folder):
        for _ in range(3):
            shutil.rmtree(path, ignore_errors=True)
            if not path.exists():
                break
            time.sleep(0.1)


def owner_alive(folder: Path) -> bool:
    """Whether the process that owns ``folder`` still runs (a folder without an owner file is
    someone else's: treated as alive)."""
    try:
        pid_text, _, started = (folder / OWNER).read_text(encoding="utf-8").strip().partition(" ")
        pid = int(pid_text)
    except (OSError, ValueError):
        return True
    now = _start_time(pid)
    return now is not None and (not started or now == started)


def _stop_postgres(folder: Path) -> None:
    """Stop the server whose data directory is in ``folder`` (postmaster.pid's first line),
    if it still runs: an immediate shutdown (SIGQUIT), then SIGKILL after 10 s."""
    try:
        pid = int((folder / "data" / "postmaster.pid").read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGQUIT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            os.kill(pid, 0)
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)


def clean(root: str | Path | None = None) -> list[Path]:
    """Remove the folders dead runs left in ``root`` (default: the temporary directory),
    stopping their PostgreSQL servers first; returns what was removed."""
    base = Path(root or tempfile.gettempdir())
    removed = []
    for prefix in PREFIXES:
        for folder in sorted(base.glob(prefix + "*")):
            if not folder.is_dir() or owner_alive(folder):
                continue
            if prefix in CLUSTERS:
                _stop_postgres(folder)
            elsewhere = _elsewhere(folder)
            remove(folder)
            removed += [*elsewhere, folder]
    return removed
