"""Temporary folders owned by a process, and what a dead owner left behind.

Every folder applier creates for the length of a run (the embedded clusters'
``applier-pg-*`` and ``applier-bbf-*``, the run's ``applier-work-*``, Spark's ``applier-spark-*``) holds an
``owner`` file: the creating process's PID and its start time (so that a reused PID is not
taken for the owner). A normal exit, an error or a signal removes the folder; a kill -9
cannot, so the next run (and ``applier clean``) removes the folders whose owner is gone,
after stopping the PostgreSQL server one of them may still run. A live run's folders are
never touched.
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
PREFIXES = ("applier-pg-", "applier-bbf-", "applier-work-", "applier-spark-")
CLUSTERS = ("applier-pg-", "applier-bbf-")  # folders holding a server's data directory


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/<pid>/stat field 22)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def owned_dir(prefix: str) -> Path:
    """A new temporary folder ``<prefix>*`` owned by this process."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    (path / OWNER).write_text(f"{os.getpid()} {_start_time(os.getpid()) or ''}\n", encoding="utf-8")
    return path


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
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed
