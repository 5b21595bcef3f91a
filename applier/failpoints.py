"""Fail points: named moments where a fault test kills the run, as a kill -9 would.

``APPLIER_FAILPOINT=<name>@<n>`` makes the n-th time any process of the run passes
:func:`reach` ``(name)`` send SIGKILL to every process of the run's session (the driver,
Spark's JVM, its Python daemon and workers, which run in a process group of their own; the
embedded cluster runs in a session of its own and survives, as it would a crash of
applier). Fault tests start the run in a new session. The count is shared by every process of the run
through ``APPLIER_FAILPOINT_DIR`` (one byte appended per pass: appends are atomic), so the
moment is the same on every run. Unset (always, outside fault tests), :func:`reach` costs
one comparison.

The names, in the order a run passes them: ``generate.lane`` (a generator lane starts),
``install.tables``, ``install.procedures``, ``install.done``, ``load.batch`` (a snapshot
batch sent, not committed), ``load.range`` (a key range of the snapshot committed with its
watermark), ``load.constraints``, ``load.done``, ``apply.share`` (a
stream's share sent, not committed), ``apply.commit`` (a stream committed its round: the
others may not have), ``apply.reapply`` (a reset round re-applied on one connection, not
committed), ``apply.reapplied`` (committed), ``barrier.apply`` (a schema change,
statement or procedure between segments sent with its watermark, not committed),
``barrier.applied`` (committed, the next segment not begun), ``apply.done``,
``verify.read``; ``payload.parse`` (a DDL, SQL or PROC event's payload parsed, in whichever
process: counted, the passes say how often a run decodes its events); and
``applier capture``'s ``capture.written`` (a batch written and fsynced to ``--out``, not yet
confirmed on the slot).

``APPLIER_FAILPOINT=<name>:sleep=<seconds>`` makes every pass sleep instead: a build made slower
on purpose, which ``applier compare`` must catch.
"""

from __future__ import annotations

import os
import signal
import time

_SPEC = os.environ.get("APPLIER_FAILPOINT", "")
_NAME, _, _AT = _SPEC.partition("@")
_SLEEP: float | None = None
if ":sleep=" in _SPEC:
    _NAME, _, _secs = _SPEC.partition(":sleep=")
    _AT, _SLEEP = "", float(_secs)
_DIR = os.environ.get("APPLIER_FAILPOINT_DIR", "")


def reach(name: str) -> None:
    """Pass the fail point ``name``: kill the run here if the test asked for this pass."""
    if name != _NAME:
        return
    if _SLEEP is not None:
        time.sleep(_SLEEP)
        return
    if count_pass(os.path.join(_DIR or ".", f"failpoint-{name}")) == int(_AT or "1"):
        _kill_session()


def count_pass(path: str) -> int:
    """Append one pass to the counter file ``path``; this pass's number (1, 2, ...), unique
    across processes. The number is where this append landed: with O_APPEND the seek to the
    end and the write are one atomic step, and the descriptor's offset after it is this
    process's own. (The file's size after the write is not: when the N streams pass a point
    at once, two appends can both land before either reads the size, and no pass sees its
    own number, so a kill at that pass never happened.)"""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, b".")
        return os.lseek(fd, 0, os.SEEK_CUR)
    finally:
        os.close(fd)


def _kill_session() -> None:
    """SIGKILL every process of this session, this one last."""
    import psutil

    me, sid = os.getpid(), os.getsid(0)
    for pid in psutil.pids():
        if pid == me:
            continue
        try:
            if os.getsid(pid) == sid:
                os.kill(pid, signal.SIGKILL)
        except OSError:  # gone since listed
            continue
    os.kill(me, signal.SIGKILL)
