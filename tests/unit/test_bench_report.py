"""The bench's pure parts: rates, ratios, goals, the JSON shape and the table."""

from __future__ import annotations

import json

import pytest

from applier.bench.command import _choices, _ints, warm_up_commands
from applier.bench.report import (
    Goal,
    Measure,
    PerN,
    SyncRun,
    cost_lines,
    goals,
    meeting_wait_share,
    ratio,
    ratios,
    report_json,
    table_lines,
)
from applier.bench.stream import BenchStream, key_bucket


def _runs() -> dict[str, SyncRun]:
    on = SyncRun("on", native=Measure(1000, 10.0))  # 100/s
    on.per_n[1] = PerN(ceiling=Measure(1000, 5.0), apply=Measure(1000, 8.0), end_to_end=Measure(1000, 20.0))
    on.per_n[4] = PerN(ceiling=Measure(1000, 2.0), apply=Measure(1000, 2.5), end_to_end=Measure(1000, 4.0))
    off = SyncRun("off", native=Measure(1000, 2.0))  # 500/s
    off.per_n[4] = PerN(ceiling=Measure(1000, 1.0), apply=Measure(1000, 4.0), end_to_end=Measure(1000, 9.0))
    return {"on": on, "off": off}


def test_rate_and_ratio_guard_zero_and_missing():
    assert Measure(100, 4.0).rate == 25.0
    assert Measure(100, 0.0).rate is None  # a zero time is not infinitely fast
    assert ratio(1.0, 0.0) is None and ratio(None, 2.0) is None and ratio(3.0, 2.0) == 1.5


def test_ratios_compare_rates_and_times():
    r = ratios(_runs()["on"], 4)
    assert r["apply_vs_ceiling"] == pytest.approx(0.8)  # 400/s vs 500/s
    assert r["apply_vs_native"] == pytest.approx(4.0)  # 400/s vs 100/s
    assert r["end_to_end_vs_apply"] == pytest.approx(1.6)  # 4.0 s vs 2.5 s
    assert ratios(_runs()["on"], 8) == dict.fromkeys(r)  # N not measured: nothing, not zero


def r_fixed(by_name: dict, mode: str) -> float:
    return by_name[f"fixed cost ({mode}, warm) <= 8 s at N=4 (sync on)"].value


def test_goals_met_missed_and_by_how_much():
    by_name = {g.name: g for g in goals(_runs(), 4)}
    calls = by_name["apply (calls) >= 0.9 x ceiling at N=4 (sync on)"]  # issue 16: within 10%
    assert calls.met is False and calls.miss == pytest.approx(1 / 9)  # 0.8 of 0.9
    assert by_name["apply (calls) >= 1.0 x native logical apply at N=4 (sync on)"].met is True
    stretch = by_name["apply (calls) >= 1.0 x native logical apply at N=4 (sync off)"]
    assert stretch.stretch and stretch.met is False and stretch.miss == pytest.approx(0.5)  # 250 vs 500/s
    assert r_fixed(by_name, "calls") == pytest.approx(1.5)  # 4.0 s warm, 2.5 s of it the apply
    assert by_name["fixed cost (calls, warm) <= 8 s at N=4 (sync on)"].met is True
    assert Goal("x", 3.0, 2.0, at_least=False).miss == pytest.approx(0.5)  # at most: 50% over
    assert Goal("x", None, 2.0, at_least=True).met is None  # not measured is not a miss


def test_report_json_shape_round_trips():
    doc = report_json({"commands": 1000, "transaction_size": 100, "rows": 10}, _runs(), 4)
    assert json.loads(json.dumps(doc)) == doc  # plain JSON all the way down
    assert set(doc) == {"bench", "runs", "goals"}
    on = doc["runs"]["on"]
    assert on["native_logical"] == {"commands": 1000, "seconds": 10.0, "commands_per_s": 100.0}
    assert list(on["per_n"]) == ["1", "4"]
    p4 = on["per_n"]["4"]
    assert set(p4) >= {
        "ceiling",
        "applier_apply",
        "applier_end_to_end",
        "ratios",
        "phases_seconds",
        "verdict",
    }
    assert p4["ratios"]["apply_vs_ceiling"] == 0.8
    assert [g["met"] for g in doc["goals"]] == [False, True, False, True]
    assert doc["goals"][2]["miss_fraction"] == 0.5


def test_table_has_a_row_per_sync_and_n_and_names_misses():
    lines = table_lines(report_json({"commands": 1000}, _runs(), 4))
    rows = [line for line in lines if line.startswith(("on ", "off "))]
    assert len(rows) == 3
    assert any("MISSED (short by 50%)" in line and "stretch" in line for line in lines)


def test_sync_run_without_ns_still_shows_native():
    doc = report_json({}, {"on": SyncRun("on", native=Measure(10, 1.0))}, 4)
    assert any(line.startswith("on ") and "0.0k" in line for line in table_lines(doc))


def test_stream_shape_and_split():
    bs = BenchStream.of(commands=1_050, rows=50, transaction_size=100)
    assert bs.workload.transactions == 10 and bs.workload.commands == 1_000  # whole transactions
    assert BenchStream.of(commands=10, transaction_size=100).workload.transactions == 1  # at least one
    cfg = bs.config(streams=2, subscription="s")
    assert cfg.workload.kind == "updates" and cfg.run.streams == 2 and cfg.run.subscription == "s"
    buckets = [key_bucket("dbo.t", f"[{k}]", 4) for k in range(400)]
    assert set(buckets) == {0, 1, 2, 3} and max(buckets.count(b) for b in range(4)) < 150  # balanced


@pytest.mark.parametrize(
    ("text", "ok"),
    [("1,2,4,8", [1, 2, 4, 8]), ("4", [4]), ("0", None), ("65", None), ("a,b", None), ("", None)],
)
def test_stream_counts_are_validated(text, ok):
    import argparse

    if ok is None:
        with pytest.raises(argparse.ArgumentTypeError):
            _ints(text)
    else:
        assert _ints(text) == ok


def test_choices_reject_unknown_parts():
    import argparse

    assert _choices(("a", "b"))("b,a") == ["b", "a"]
    with pytest.raises(argparse.ArgumentTypeError):
        _choices(("a", "b"))("a,c")


def test_set_based_figures_get_their_own_ratios_goals_and_rows():
    runs = _runs()
    assert not any("set-based" in g.name for g in goals(runs, 4))  # not measured: no goals
    p4 = runs["on"].per_n[4]
    p4.set_apply, p4.set_end_to_end = Measure(1000, 1.0), Measure(1000, 5.0)
    r = ratios(runs["on"], 4)
    assert r["set_apply_vs_ceiling"] == pytest.approx(2.0)  # 1000/s vs 500/s
    assert r["set_apply_vs_native"] == pytest.approx(10.0)
    assert r["set_end_to_end_vs_apply"] == pytest.approx(5.0)
    assert r["apply_vs_ceiling"] == pytest.approx(0.8)  # the calls figure is untouched
    by_name = {g.name: g for g in goals(runs, 4)}
    assert r["set_fixed_cost_seconds"] == pytest.approx(4.0)
    assert by_name["fixed cost (set-based, warm) <= 8 s at N=4 (sync on)"].met is True
    p4.set_end_to_end = Measure(1000, 13.0)  # 12 s of fixed cost: 50% over
    by_name = {g.name: g for g in goals(runs, 4)}
    assert by_name["fixed cost (set-based, warm) <= 8 s at N=4 (sync on)"].miss == pytest.approx(0.5)
    assert by_name["apply (set-based) >= 1.3 x native logical apply at N=4 (sync on)"].met is True
    assert by_name["apply (set-based) >= 1.3 x native logical apply at N=4 (sync off)"].met is None
    assert not by_name[
        "apply (set-based) >= 1.3 x native logical apply at N=4 (sync off)"
    ].stretch  # issue 32: a goal
    doc = report_json({"commands": 1000}, runs, 4)
    assert doc["runs"]["on"]["per_n"]["4"]["applier_set_apply"]["commands_per_s"] == 1000.0
    lines = table_lines(doc)
    block = lines[lines.index("set-based apply (run.set_apply):") + 1 :]
    assert block[0].split()[:4] == ["on", "4", "0.5k", "1.0k"]


@pytest.mark.parametrize(
    ("commands", "warm"),
    [
        (1, 1),
        (10_000, 10_000),
        (200_000, 200_000),
        (1_000_000, 1_000_000),
        (10_000_000, 1_000_000),
    ],
)
def test_the_warm_up_is_the_measured_stream_up_to_a_million_commands(commands, warm):
    assert warm_up_commands(commands) == warm


def test_meeting_wait_share_sums_the_streams_waits_over_their_times():
    stats = [
        {"stream": 0, "seconds": 10.0, "barrier_wait_seconds": 1.0},
        {"stream": 1, "seconds": 10.0, "barrier_wait_seconds": 3.0},
        {"stream": 2, "seconds": 0.0, "barrier_wait_seconds": 0.0},  # no time: left out
    ]
    assert meeting_wait_share(stats) == pytest.approx(0.2)
    assert meeting_wait_share([]) is None
    assert meeting_wait_share([{"stream": 0, "seconds": 5.0}]) is None  # no wait recorded


def test_cost_lines_show_each_sides_cpu_and_the_meetings_beside_the_ceiling():
    runs = _runs()
    runs["on"].per_n[4].extra = {
        "ceiling_cpu_us_per_command": {"client": 7.28, "server": 25.22},
        "apply_cpu_us_per_command": {"jvm": 1.27, "python_workers": 11.27, "server": 24.83},
        "stream_stats": [
            {"stream": 0, "commands": 500, "seconds": 19.0, "barrier_wait_seconds": 3.0},
            {"stream": 1, "commands": 500, "seconds": 19.0, "barrier_wait_seconds": 2.0},
        ],
        "set_stream_stats": [  # the tasks' CPU: 0.01 s for 1,000 commands, 0.002 s of it taking
            {"stream": 0, "commands": 600, "cpu_seconds": 0.006, "take_cpu_seconds": 0.001},
            {"stream": 1, "commands": 400, "cpu_seconds": 0.004, "take_cpu_seconds": 0.001},
        ],
        "set_apply_cpu_us_per_command": {"jvm": 2.0, "python_workers": 4.0, "server": 3.0},
    }
    doc = report_json({"commands": 1000}, runs, 4)
    assert doc["runs"]["on"]["per_n"]["4"]["ratios"]["meeting_wait_share"] == pytest.approx(5 / 38, abs=1e-3)
    lines = cost_lines(doc)
    assert lines == [
        "CPU a command, sync on, N=4: ceiling 32.5 us (client 7.3 + server 25.2), "
        "calls 37.4 us (workers 11.3 + JVM 1.3 + server 24.8); "
        "its streams waited 13% of the apply at the round meetings",  # no task CPU recorded
        "CPU a command, sync on, N=4: ceiling 32.5 us (client 7.3 + server 25.2), "
        "set-based 9.0 us (workers 4.0 + JVM 2.0 + server 3.0); "
        "its stream tasks 10.0 us, 2.0 of it taking their shares",  # no waits recorded
    ]  # N=1 and sync off: nothing recorded, no line
    assert table_lines(doc)[-2:] == lines
    del runs["on"].per_n[4].extra["set_apply_cpu_us_per_command"]["server"]
    assert len(cost_lines(report_json({"commands": 1000}, runs, 4))) == 1  # a side missing: no line
