"""Which command of a failed chunk raised the error: known by construction, never read from
the error's text.

A chunk of several commands travels as one multi-statement text, and the error does not say
which statement raised it (the key values in its text prove nothing: ``(1)``, ``RP598`` and
``20598`` are in nearly every one). So the statements are run again, in the state the chunk
started from, and the first one that fails is the culprit.

On PostgreSQL a chunk of more than one command starts with a savepoint (in its own text: no
extra round trip), and after an error the sender rolls back to it and runs the statements
again in pieces, each under a savepoint of its own: a piece that succeeds is kept, a piece that
fails is rolled back and halved (:func:`culprit`, about 2 log2(n) round trips for n
statements). The search runs under a short lock timeout (``SET LOCAL``): a statement that
waits for a lock is found in milliseconds, not after the run's lock timeout.

Rolling back to the chunk's savepoint releases the locks the chunk took, and another stream
may take one of them before the statement that needs it runs again: that statement then fails
otherwise (a lock timeout where the chunk raised row not found). The search passes over such
a statement and goes on to the first one that raises the chunk's kind of error again; only when
none does is the first statement that failed otherwise named (``located = "rerun-other"``).
"""

from __future__ import annotations

from collections.abc import Callable

from applier.dialects.conflicts import ConflictClass

# A piece of statements run again: (first, end) -> the class of the error it raised, or None
# when it succeeded (its work is then kept and the next piece runs after it).
RunPiece = Callable[[int, int], str | None]

_WAITS = frozenset({ConflictClass.LOCK_TIMEOUT.value, ConflictClass.DEADLOCK.value})


def same_kind(a: str, b: str) -> bool:
    """Whether two conflict classes are the same error for the search: a deadlock's victim
    meets a lock held by the other side again, and times out waiting for it."""
    return a == b or (a in _WAITS and b in _WAITS)


def first_failing(start: int, end: int, run: RunPiece, failed: str | None = None) -> tuple[int, str] | None:
    """The first statement of [start, end) that fails when they run in order (the ones before
    it kept), with its error's class; None when they all succeed. ``failed``: the class the
    whole range is known to have failed with (it is not run again)."""
    if start >= end:
        return None
    err = failed if failed is not None else run(start, end)
    if err is None:
        return None
    if end - start == 1:
        return start, err
    mid = (start + end) // 2
    return first_failing(start, mid, run) or first_failing(mid, end, run)


def culprit(n: int, run: RunPiece, cls: str) -> tuple[int, bool] | None:
    """The statement among n that raised the chunk's error of class ``cls``: (its index,
    whether it raised that kind of error again). Statements that fail otherwise are passed
    over (rolled back) while a later one raises it; the first of them is named when none does.
    None: every statement succeeded (the error did not happen again)."""
    other: int | None = None
    start = 0
    while start < n:
        hit = first_failing(start, n, run, cls if start == 0 else None)  # the whole chunk failed
        if hit is None:
            break
        i, err = hit
        if same_kind(err, cls):
            return i, True
        if other is None:
            other = i
        start = i + 1
    return (other, False) if other is not None else None
