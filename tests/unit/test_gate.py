"""The controlled scheduler's choices, wait-for cycles and recorded schedules (no database)."""

from __future__ import annotations

import pytest

from applier.apply.gate import Chooser, ScheduleSpec, _cycle, order_of, step_key
from applier.errors import InputError
from applier.pipeline.schedule import read_schedule


def _picks(spec: ScheduleSpec, steps: int = 50) -> list[int]:
    c = Chooser(spec, 4, steps)
    keys = {s: [("exec", s)] for s in range(4)}
    return [c.choose([0, 1, 2, 3], keys, i) for i in range(1, steps + 1)]


@pytest.mark.parametrize("strategy", ["pct", "random"])
def test_one_seed_one_sequence_of_choices(strategy: str) -> None:
    assert _picks(ScheduleSpec(7, strategy)) == _picks(ScheduleSpec(7, strategy))
    assert any(_picks(ScheduleSpec(s, strategy)) != _picks(ScheduleSpec(7, strategy)) for s in range(8))


def test_pct_runs_the_highest_priority_and_changes_it_at_its_change_points() -> None:
    c = Chooser(ScheduleSpec(3, "pct", depth=3), 4, 40)
    top = max(c.prio, key=lambda s: c.prio[s])
    first_change = min(c.change)
    keys = {s: [("exec", s)] for s in range(4)}
    picks = [c.choose([0, 1, 2, 3], keys, i) for i in range(1, 41)]
    assert set(picks[: first_change - 1]) == {top}
    assert picks[first_change - 1] != top  # its priority dropped below every other


def test_recorded_follows_the_order_by_lsn_and_skips_what_is_gone() -> None:
    steps = [
        {"kind": "exec", "lsns": [30]},
        {"kind": "exec", "lsns": [10, 11]},
        {"kind": "commit", "lsns": [], "anchor": 11},
        {"kind": "exec", "lsns": [20]},
    ]
    order = order_of(steps)
    assert order == (("exec", 30), ("exec", 10), ("exec", 11), ("commit", 11), ("exec", 20))
    c = Chooser(ScheduleSpec(strategy="recorded", order=order), 3, 10)
    keys = {0: step_key("exec", [10], None), 1: step_key("exec", [20], None), 2: step_key("exec", [30], None)}
    assert c.choose([0, 1, 2], keys, 1) == 2
    assert c.choose([0, 1], keys, 2) == 0
    # a step the recording does not know (shrunk away, or new) goes after those it knows
    keys[0] = step_key("exec", [99], None)
    assert c.choose([0, 1], keys, 3) == 1


def test_wait_for_cycles() -> None:
    assert sorted(_cycle({0: {1}, 1: {0}})) == [0, 1]
    assert sorted(_cycle({0: {1}, 1: {2}, 2: {0}, 3: {0}})) == [0, 1, 2]
    assert _cycle({0: {1}, 1: set()}) == []
    assert _cycle({0: {5}}) == []  # waits for a session outside the streams


def test_a_bad_schedule_file_names_the_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "s.jsonl"
    p.write_text('{"kind": "exec", "lsns": [1]}\nnot json\n')
    with pytest.raises(InputError, match=r"s\.jsonl:2: not JSON"):
        read_schedule(p)
    p.write_text('{"kind": "exec", "lsns": [1]}\n\n{"lsns": 3}\n')
    with pytest.raises(InputError, match=r"s\.jsonl:3: not a schedule step"):
        read_schedule(p)
    with pytest.raises(InputError, match="schedule file"):
        read_schedule(tmp_path / "missing.jsonl")
