"""The error policy and the single-connection re-apply: errors -SkipErrors skips, applied one
call at a time under savepoints (:func:`send_with_policy`); transient errors retried by tenacity
(:func:`apply_serially`); a commit whose connection was lost, read back and applied again
(:func:`commit_surely`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from applier import failpoints
from applier.apply.failure import Failure, Row, short
from applier.apply.sender import Sender
from applier.plan.calls import Call
from applier.targets.connection import RetryPolicy

SkipRule = Callable[[Failure], bool]


def never(f: Failure) -> bool:
    return False


def send_with_policy(
    sender: Sender,
    calls: Sequence[tuple[Row, Call]],
    tail: Sequence[Call],
    skip: SkipRule,
    retried: SkipRule = never,
) -> tuple[list[tuple[Row, Failure]], Failure | None]:
    """Send the calls then the tail; on an error the error policy skips (-SkipErrors), roll
    back and apply one call at a time in savepoints, skipping those errors. Returns (skipped,
    the failure that stands or None); on None the transaction is open for the caller to commit.
    The command that raised is looked for unless the policy skips the error (the calls are
    applied one by one anyway) or ``retried`` says the caller tries the work again."""
    failure = sender.send(calls, tail, locate=lambda f: not skip(f) and not retried(f))
    if failure is None or not skip(failure) or failure.connection_lost:
        return [], failure
    sender.rollback()
    skipped, failure = savepoint_each(sender, sender.per_row(calls), skip)
    if failure is None:
        failure = sender.send([], tail)
    return skipped, failure


class _Transient(Exception):
    pass


def apply_serially(
    sender: Sender,
    calls: Sequence[tuple[Row, Call]],
    tail: Sequence[Call],
    retry: RetryPolicy,
    skip: SkipRule,
) -> tuple[list[tuple[Row, Failure]], Failure | None]:
    """The single-connection re-apply: :func:`send_with_policy`, with transient errors (deadlock
    victim, serialization failure) rolled back and retried by tenacity per ``retry``."""

    last: list[Failure] = []

    def attempt() -> tuple[list[tuple[Row, Failure]], Failure | None]:
        skipped, f = send_with_policy(sender, calls, tail, skip, retried=lambda f: f.transient)
        if f is not None and f.transient:
            last[:] = [f]
            if f.connection_lost:
                sender.renew()  # a new connection: the lost one's work was rolled back by the server
            else:
                sender.rollback()
            raise _Transient(f.message)
        return skipped, f

    try:
        return retry.retrying(lambda e: isinstance(e, _Transient))(attempt)
    except _Transient as e:
        f = last[0]
        why = f"transient errors persisted after {retry.attempts} attempts: {e}"
        return [], Failure(f.cls, f.code, why, None, sender.stream, True, f.connection_lost)


class LostCommit(Exception):
    """Work lost at its commit could not be applied again."""


def commit_surely(
    sender: Sender,
    landed: Callable[[], bool],
    again: Callable[[], Failure | None],
    attempts: int,
    what: str,
) -> None:
    """Commit the connection's open work. A connection lost at the commit may or may not have
    committed: on a new connection ``landed()`` reads the progress rows written with the work;
    when they are not there, ``again()`` applies the work again (a Failure: it could not) and
    the commit is tried again, up to ``attempts`` times."""
    for _ in range(max(1, attempts)):
        try:
            sender.commit()
            return
        except Exception as e:  # noqa: BLE001 - pyodbc's errors, classified below
            if not sender.classify(e).connection_lost:
                raise
        sender.renew()
        if sender.read(landed):
            return  # the commit reached the server before the connection broke
        f = again()
        if f is not None:
            raise LostCommit(f"{what} could not be applied again after a lost commit: {f.message}")
    raise LostCommit(f"{what}: the connection was lost at {attempts} commits in a row")


def savepoint_each(
    sender: Sender, calls: Sequence[tuple[Row, Call]], skip: Any
) -> tuple[list[tuple[Row, Failure]], Failure | None]:
    """Apply one call at a time inside a savepoint; errors that ``skip(classified)`` accepts are
    rolled back to the savepoint and recorded. Returns (skipped, fatal failure or None).
    The dialect's skip-loop statements open and close the loop (SQL Server: XACT_ABORT off
    while it runs, so that an error leaves a savepoint to roll back to); an error the
    savepoint cannot undo stands, its message saying why it was not skipped."""
    opening, closing = sender.dialect.skip_loop_sql()
    opened = sender._execute([(None, Call(s, ())) for s in opening]) if opening and calls else None
    skipped, failure = ([], opened) if opened is not None else _each(sender, calls, skip)
    if closing and calls:  # also after a failure: the session goes back as it was
        done = sender._execute([(None, Call(s, ())) for s in closing])
        if failure is None:
            failure = done
    return skipped, failure


def _each(
    sender: Sender, calls: Sequence[tuple[Row, Call]], skip: Any
) -> tuple[list[tuple[Row, Failure]], Failure | None]:
    skipped: list[tuple[Row, Failure]] = []
    sp = "applier_sp"
    for row, call in calls:
        fail = sender._execute([(None, Call(sender.dialect.savepoint_sql(sp), ())), (row, call)])
        if fail is None:
            continue
        if not skip(fail):
            return skipped, fail
        rb = sender._execute([(None, Call(sender.dialect.skip_rollback_sql(sp), ()))])
        if rb is not None:
            if rb.connection_lost:
                return skipped, rb
            why = f"{fail.message} -- not skipped: {rb.message}"
            return skipped, dataclasses.replace(fail, message=short(why, 1200))
        skipped.append((row, fail))
    return skipped, None


def reapply(
    sender: Sender,
    calls: Sequence[tuple[Row, Call]],
    tail: Sequence[Call],
    retry: RetryPolicy,
    skip: SkipRule,
    landed: Callable[[], bool],
    what: str,
) -> tuple[list[tuple[Row, Failure]], Failure | None]:
    """The single-connection re-apply, committed: :func:`apply_serially`, then
    :func:`commit_surely` (``landed`` reads whether a commit whose connection was lost reached
    the server; if not, the work is applied again). A commit that could not be made sure of is
    a failure with its connection lost. Both apply models re-apply through it: the agent a
    reset round, the independent model each deferred transaction."""
    skipped, failure = apply_serially(sender, calls, tail, retry, skip)
    if failure is not None:
        return skipped, failure
    failpoints.reach("apply.reapply")
    try:
        commit_surely(
            sender, landed, lambda: apply_serially(sender, calls, tail, retry, skip)[1], retry.attempts, what
        )
    except LostCommit as e:
        return skipped, Failure("other", "08S01", str(e), None, sender.stream, True, True)
    return skipped, None
