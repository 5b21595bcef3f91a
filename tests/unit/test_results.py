"""Verdicts merge as Jepsen merges validity, and the exit code follows the merged verdict."""

from __future__ import annotations

import pytest

from applier.results import ApplySummary, Check, RunResult, SubscriptionResult, Verdict

C, D, U = Verdict.CONVERGED, Verdict.DIVERGED, Verdict.UNKNOWN


@pytest.mark.parametrize(
    "verdicts,merged",
    [
        ([C], C),
        ([C, C], C),
        ([C, U], U),  # an undecided subscriber makes the run undecided
        ([U, D], D),  # ... but never hides a divergence (max() of exit codes did: 2 over 1)
        ([D, U, C], D),
        ([], U),  # nothing checked is not a pass
    ],
)
def test_merge(verdicts, merged):
    assert Verdict.merge(verdicts) is merged


def test_exit_codes():
    assert [v.exit_code for v in (C, D, U)] == [0, 1, 2]


def _sub(name: str, verdict: Verdict, failed: str | None = None) -> SubscriptionResult:
    summary = ApplySummary(10, 2, 1, 1, 0, (), {}, {"applied": 10}, 4, (), 1.0, failed is not None)
    return SubscriptionResult(
        name, "t", Check(verdict, {"missing": 1} if verdict is D else {}), summary, failed=failed
    )


def test_run_exit_code_is_the_merged_verdicts():
    run = RunResult((_sub("a", D), _sub("b", U)))
    assert run.verdict is D and run.exit_code == 1
    assert RunResult((_sub("a", C), _sub("b", C))).exit_code == 0
    assert run.counts == {"missing": 1}
    with pytest.raises(KeyError, match="no subscription 'c'"):
        run.subscription("c")


def test_a_run_that_stopped_early_is_not_converged():
    assert _sub("a", C, failed="the single connection failed").verdict is U
    assert _sub("a", D, failed="the single connection failed").verdict is D


def test_summary_figures():
    s = ApplySummary(10, 2, 1, 1, 0, (), {}, {"applied": 7, "reapplied": 2, "skipped": 1}, 4, (), 2.0, False)
    assert (s.applied, s.skipped, s.deferred, s.throughput) == (9, 1, 0, 5.0)
    assert s.to_json()["throughput_cmds_per_s"] == 5.0
