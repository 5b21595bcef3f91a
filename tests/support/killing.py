"""``applier run`` killed with SIGKILL at a fail point, as a kill -9 of the agent would, and the
scratch folders a run is given (SPARK_LOCAL_DIRS and TMPDIR of its own, as clusters and CI images
set the first).

The run starts in a session of its own (:mod:`applier.failpoints` kills every process of it:
the driver, Spark's JVM and workers); the subscriber lives on. The fail point's passes are
counted in ``folder``. After the kill, ``applier clean`` (with the run's environment) must leave
both scratch folders empty: Spark's ``blockmgr-*`` and ``spark-*`` folders included.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.subscriber import rows


@dataclass(frozen=True)
class Scratch:
    """A run's SPARK_LOCAL_DIRS (``local``) and TMPDIR (``tmp``): short paths under /tmp (an
    embedded cluster's socket path must fit in 107 bytes)."""

    local: Path
    tmp: Path

    def env(self, **more: str) -> dict[str, str]:
        return {**os.environ, "SPARK_LOCAL_DIRS": str(self.local), "TMPDIR": str(self.tmp), **more}


@contextmanager
def scratch(prefix: str = "run") -> Iterator[Scratch]:
    """Two new empty folders, removed afterwards."""
    s = Scratch(
        Path(tempfile.mkdtemp(prefix=f"{prefix}-local-")), Path(tempfile.mkdtemp(prefix=f"{prefix}-tmp-"))
    )
    s.tmp.chmod(0o1777)  # as /tmp: a run as root starts its server as another user, who must reach it
    try:
        yield s
    finally:
        shutil.rmtree(s.local, ignore_errors=True)
        shutil.rmtree(s.tmp, ignore_errors=True)


def left(folder: Path, *keep: Path) -> list[str]:
    """What is in ``folder`` (two levels down, to say whose it is), but ``keep``."""
    return sorted(
        str(p.relative_to(folder))
        for p in [*folder.glob("*"), *folder.glob("*/*")]
        if p not in keep and p.parent not in keep
    )


def clean(s: Scratch) -> str:
    """``applier clean`` in the environment of the runs given ``s``; its output."""
    cmd = [sys.executable, "-m", "applier.cli", "clean"]
    return subprocess.run(cmd, capture_output=True, text=True, check=True, env=s.env(), timeout=120).stdout


def run_killed(args: list[str], point: str, at: int, folder: Path, timeout: float = 1200) -> None:
    """``applier run <args>`` killed at the ``at``-th pass of ``point``, with SPARK_LOCAL_DIRS and
    TMPDIR of its own; fails the test when the run ended any other way, or when Spark's folders
    (or anything else) stay in them after ``applier clean``."""
    with scratch("kill") as s:
        env = s.env(APPLIER_FAILPOINT=f"{point}@{at}", APPLIER_FAILPOINT_DIR=str(folder))
        cmd = [sys.executable, "-m", "applier.cli", "run", *args, "--quiet"]
        proc = subprocess.run(
            cmd, env=env, start_new_session=True, capture_output=True, text=True, timeout=timeout, check=False
        )
        passes = folder / f"failpoint-{point}"
        reached = passes.stat().st_size if passes.exists() else 0
        assert proc.returncode == -signal.SIGKILL, (
            f"the run was not killed at {point}@{at} (exit {proc.returncode}, the point passed {reached} "
            f"times): {proc.stderr[-1500:]} {proc.stdout[-1500:]}"
        )
        # every fail point passes with Spark up: its folders are there to be cleaned
        assert any(s.local.glob("applier-spark-*")), f"Spark did not use SPARK_LOCAL_DIRS: {left(s.local)}"
        said = clean(s)
        assert not left(s.local), f"left in SPARK_LOCAL_DIRS after applier clean: {left(s.local)} ({said})"
        assert not left(s.tmp), f"left in TMPDIR after applier clean: {left(s.tmp)} ({said})"


def audited(target: Any, table: str) -> Counter[tuple[str, int]]:
    """The (operation, key) multiset an audit table holds (``table``: quoted, qualified)."""
    return Counter((op, int(i)) for op, i in rows(target, f"SELECT op, id FROM {table}"))


def once_each(expected: Counter[tuple[str, int]], audit: Counter[tuple[str, int]]) -> str | None:
    """None when every row change is there once; else what was doubled and lost."""
    doubled, lost = audit - expected, expected - audit
    if not doubled and not lost:
        return None
    return (
        f"{sum(doubled.values())} row changes doubled {sorted(doubled.items())[:5]}, "
        f"{sum(lost.values())} lost {sorted(lost.items())[:5]}"
    )
