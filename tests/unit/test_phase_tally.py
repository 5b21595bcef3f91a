"""A subscription's phases_seconds and the run's cost table come from the same clocks
(applier.pipeline.cost.phase): a stretch is counted once, where it ran, also when it raised."""

from __future__ import annotations

import time

import pytest

from applier.pipeline import cost


def test_each_phase_adds_its_own_seconds_to_the_tally_it_ran_in() -> None:
    phases = {"prepare": 0.25}  # a read counted before: the tally adds to it
    with cost.tally(phases):
        with cost.phase("prepare") as a:
            time.sleep(0.02)
        with cost.phase("plan") as b:
            time.sleep(0.01)
        with cost.phase("plan") as c:
            pass
    with cost.phase("plan"):  # outside the tally: counted nowhere
        time.sleep(0.01)
    assert a.seconds >= 0.02 and b.seconds >= 0.01 and c.seconds < 0.01
    assert phases == {"prepare": 0.25 + a.seconds, "plan": b.seconds + c.seconds}


def test_a_phase_that_raises_is_counted_and_the_tally_is_put_back() -> None:
    phases: dict[str, float] = {}
    outer: dict[str, float] = {}
    with cost.tally(outer):
        with pytest.raises(RuntimeError), cost.tally(phases), cost.phase("apply") as clock:
            time.sleep(0.01)
            raise RuntimeError("a stream died")
        with cost.phase("report"):
            pass
    assert phases == {"apply": clock.seconds} and clock.seconds >= 0.01
    assert set(outer) == {"report"}, outer
