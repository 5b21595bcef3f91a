"""The reason of a run the single connection failed names the error and its command (it said
only "the single connection hit an error the policy does not skip")."""

from __future__ import annotations

from applier.apply.failure import Failure
from applier.pipeline.run import FATAL, _stopped_why
from applier.results import ApplySummary

DUP = 'ERROR: duplicate key value violates unique constraint "accounts_pkey"\n  DETAIL: Key (id)=(400206) already exists.'


def _summary(**kw: object) -> ApplySummary:
    base = dict(
        commands=10, transactions=5, rounds=2, rounds_parallel=0, resets=1, reset_log=(), conflicts={},
        outcomes={}, streams=4, stream_stats=(), apply_seconds=0.1, fatal=True,
    )  # fmt: skip
    return ApplySummary(**{**base, **kw})  # type: ignore[arg-type]


def test_a_failure_is_one_line_naming_its_command_class_and_code():
    said = Failure("duplicate_key", "23505", DUP, 29, 0).said()
    assert said.startswith("the command at lsn 29: duplicate_key (23505): ERROR: duplicate key value")
    assert "\n" not in said and "Key (id)=(400206) already exists." in said
    assert Failure("other", "HY000", "x" * 1000, None, 0).said().startswith("no command: other (HY000): xxx")
    assert len(Failure("other", "HY000", "x" * 1000, None, 0).said()) <= 400


def test_the_reason_carries_the_failure_and_a_stop_stays_a_stop():
    failed = _summary(failure="the command at lsn 29: duplicate_key (23505): ...")
    assert _stopped_why(failed) == f"{FATAL}: the command at lsn 29: duplicate_key (23505): ..."
    assert _stopped_why(_summary()) == FATAL
    assert _stopped_why(_summary(stopped="lock_timeout")).startswith("the run stopped: transient errors")
