"""A fail point's pass numbers are unique across processes passing it at once: the kill at
pass k happens exactly once, however the streams race."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

from applier import failpoints


def _passes(path: str, n: int, start: multiprocessing.synchronize.Event, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    start.wait()
    out.put([failpoints.count_pass(path) for _ in range(n)])


def test_concurrent_passes_each_get_their_own_number(tmp_path: Path) -> None:
    path = str(tmp_path / "failpoint-apply.commit")
    procs, per = 8, 400
    ctx = multiprocessing.get_context("fork")
    start, out = ctx.Event(), ctx.Queue()
    workers = [ctx.Process(target=_passes, args=(path, per, start, out)) for _ in range(procs)]
    for w in workers:
        w.start()
    start.set()
    got = sorted(n for _ in workers for n in out.get(timeout=60))
    for w in workers:
        w.join(timeout=60)
    # every number from 1 to the total exactly once: no pass is skipped, none is seen twice
    assert got == list(range(1, procs * per + 1))
    assert os.path.getsize(path) == procs * per


def test_passes_count_on_from_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "failpoint-x"
    path.write_bytes(b"...")
    assert failpoints.count_pass(str(path)) == 4


def _dead(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_kill_takes_the_whole_session_and_nothing_outside_it() -> None:
    """The fail point's kill: every process of the run's session (a child it started), this one
    last; a process of another session (one this test started) is left alone."""
    import subprocess
    import sys
    import time

    script = (
        "import subprocess\n"
        "from applier import failpoints\n"
        "child = subprocess.Popen(['sleep', '60'])\n"
        "print(child.pid, flush=True)\n"
        "failpoints._kill_session()\n"
    )
    outside = subprocess.Popen(["sleep", "60"])
    try:
        p = subprocess.Popen(
            [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True
        )
        assert p.stdout is not None
        child = int(p.stdout.readline())
        assert p.wait(timeout=60) == -9  # SIGKILL, itself last
        for _ in range(100):  # the orphaned child is reaped by whoever adopted it
            if _dead(child):
                break
            time.sleep(0.05)
        assert _dead(child)
        assert outside.poll() is None and not _dead(outside.pid)
    finally:
        outside.kill()
        outside.wait()
