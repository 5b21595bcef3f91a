"""``applier run`` killed with SIGKILL at a fail point, as a kill -9 of the agent would.

The run starts in a session of its own (:mod:`applier.failpoints` kills every process of it:
the driver, Spark's JVM and workers); the subscriber lives on. The fail point's passes are
counted in ``folder``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from tests.support.subscriber import rows


def run_killed(args: list[str], point: str, at: int, folder: Path) -> None:
    """``applier run <args>`` killed at the ``at``-th pass of ``point``; fails the test when
    the run ended any other way."""
    env = dict(os.environ, APPLIER_FAILPOINT=f"{point}@{at}", APPLIER_FAILPOINT_DIR=str(folder))
    cmd = [sys.executable, "-m", "applier.cli", "run", *args, "--quiet"]
    proc = subprocess.run(
        cmd, env=env, start_new_session=True, capture_output=True, text=True, timeout=600, check=False
    )
    passes = folder / f"failpoint-{point}"
    reached = passes.stat().st_size if passes.exists() else 0
    assert proc.returncode == -signal.SIGKILL, (
        f"the run was not killed at {point}@{at} (exit {proc.returncode}, the point passed {reached} "
        f"times): {proc.stderr[-1500:]} {proc.stdout[-1500:]}"
    )


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
