"""Load tests without a database: thresholds, the pace, lag histograms, the live metrics'
counting, the comparison's verdicts, the JUnit and HTML of thresholds."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hdrh.histogram import HdrHistogram
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from applier.apply.pace import LagRecorder, Pace, commits_of, lag_report, round_size
from applier.config import demo_config
from applier.config.files import parse_config
from applier.config.thresholds import parse
from applier.errors import ConfigError, InputError
from applier.loadtest.compare import compare, tolerance_of
from applier.loadtest.live import LiveMetrics
from applier.loadtest.options import seconds
from applier.report.html import render_run
from applier.report.junit import run_junit

pytest_plugins = ["pytester"]

# -- thresholds --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "metric", "op", "limit", "of_rate"),
    [
        ("lag_p99<2s", "lag_p99", "<", 2.0, False),
        ("lag_p999 <= 250ms", "lag_p999", "<=", 0.25, False),
        ("lag_max<1m", "lag_max", "<", 60.0, False),
        ("resets<=3", "resets", "<=", 3.0, False),
        ("throughput>=0.95*rate", "throughput", ">=", 0.95, True),
        ("throughput>=rate", "throughput", ">=", 1.0, True),
    ],
)
def test_a_threshold_reads_its_metric_comparison_and_limit(text, metric, op, limit, of_rate):  # type: ignore[no-untyped-def]
    t = parse(text)
    assert (t.metric, t.op, t.of_rate) == (metric, op, of_rate)
    assert t.limit == pytest.approx(limit)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("lag_p42<1s", "unknown metric 'lag_p42'"),
        ("lag_p99 about 1s", "is not a threshold"),
        ("resets<3s", "resets is not a time"),
        ("resets<2*3", "only the rate may be multiplied"),
    ],
)
def test_a_bad_threshold_is_refused_naming_the_option(text, says):  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match="--threshold") as e:
        parse(text)
    assert says in str(e.value)


def test_a_threshold_holds_or_breaks_on_the_measured_value():  # type: ignore[no-untyped-def]
    t = parse("throughput>=0.9*rate")
    assert t.check({"throughput": 95.0}, 100.0)["held"] is True
    broken = t.check({"throughput": 80.0}, 100.0)
    assert broken["held"] is False and broken["limit"] == pytest.approx(90.0) and broken["value"] == 80.0
    unmeasured = parse("lag_p99<1s").check({"lag_p99": None}, 100.0)
    assert unmeasured["held"] is False and "measured no lag_p99" in unmeasured["why"]


def _config_data(**tables: Any) -> dict[str, Any]:
    data = demo_config().to_dict()
    del data["source"]
    data.update(tables)
    return data


def test_the_config_file_takes_a_load_table_and_a_thresholds_table():  # type: ignore[no-untyped-def]
    cfg = parse_config(
        _config_data(load={"rate": 250, "thresholds": ["resets<=3"]}, thresholds={"lag_p99": "<2s"}), "t.toml"
    )
    assert cfg.load.rate == 250.0
    assert cfg.load.thresholds == ("resets<=3", "lag_p99<2s")
    # and the configuration written back (a run folder's) reads the same
    again = parse_config(_config_data(load=cfg.to_dict()["load"]), "again.toml")
    assert again.load.thresholds == ("resets<=3", "lag_p99<2s") and again.load.rate == 250.0


@pytest.mark.parametrize(
    ("tables", "says"),
    [
        ({"load": {"rate": 10, "pace": "source"}}, "load: rate and pace exclude each other"),
        ({"load": {"duration": 60}}, "duration needs a rate"),
        ({"load": {"rate": 0}}, "load.rate"),
        ({"load": {"thresholds": ["lag_p100<1s"]}}, "unknown metric 'lag_p100'"),
        ({"thresholds": {"nope": "<1"}}, "thresholds.nope"),
    ],
)
def test_a_bad_load_table_is_refused_naming_its_key(tables, says):  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError) as e:
        parse_config(_config_data(**tables), "t.toml")
    assert says in str(e.value) and "t.toml" in str(e.value)


def test_durations_read_with_their_units():  # type: ignore[no-untyped-def]
    assert seconds("10m") == 600.0 and seconds("90s") == 90.0 and seconds("1.5h") == 5400.0
    assert seconds("250ms") == pytest.approx(0.25) and seconds("12") == 12.0
    with pytest.raises(ConfigError, match="--duration: '0s'"):
        seconds("0s")
    with pytest.raises(ConfigError, match="not a duration"):
        seconds("ten minutes")


# -- the pace and the lag ---------------------------------------------------------------


def test_a_round_takes_the_transactions_due_within_the_interval():  # type: ignore[no-untyped-def]
    assert round_size(1000, 0.1, 100) == 100
    assert round_size(200, 0.1, 100) == 20
    assert round_size(5000, 0.1, 100) == 100  # CommitBatchSize caps it
    assert round_size(3, 0.1, 100) == 1  # at least one
    p = Pace(20, rate=200.0)
    assert p.of(0) == 0.0 and p.of(200) == pytest.approx(1.0)
    assert p.round_due(0) == pytest.approx(19 / 200)  # its last transaction is due
    assert p.round_due(2, transactions=45) == pytest.approx(44 / 200)  # a short last round
    with pytest.raises(ValueError):
        Pace(10)


def test_a_transaction_split_over_streams_counts_once_at_its_last_part():  # type: ignore[no-untyped-def]
    rec = LagRecorder(Pace(4, rate=10.0), start=1000.0)
    # stream 0 committed parts of transactions 0 and 1 at +0.5 s, stream 1 parts of 1 and 2 at +0.7 s
    commits = commits_of([(1000.5, [0, 1]), (1000.7, [1, 2])])
    assert commits == {0: 1000.5, 1: 1000.7, 2: 1000.7}
    lags = rec.whole(commits, 0)
    assert sorted(round(x, 3) for x in lags) == [0.5, 0.5, 0.6]  # due at 0, 0.1, 0.2 s
    rec.part(0, [0, 1], 1000.5, 0)
    rec.part(1, [1, 2], 1000.7, 0)
    report = lag_report([{**e, "round": e.pop("round_")} for e in rec.drain()])
    assert report["transactions"] == 3  # whole transactions, not parts (4)
    assert report["percentiles"]["max"] == pytest.approx(0.6, abs=0.001)
    assert report["per_stream"]["1"]["max"] == pytest.approx(0.6, abs=0.001)
    assert report["per_stream"]["0"]["max"] == pytest.approx(0.5, abs=0.001)
    assert report["per_round"][0]["n"] == 3 and report["per_round"][0]["t"] == pytest.approx(0.7, abs=0.001)
    merged = HdrHistogram.decode(report["histogram"].encode("ascii"))
    assert merged.get_total_count() == 3
    assert report["curve"][-1] == [100.0, pytest.approx(0.6, abs=0.001)]


# -- live metrics -----------------------------------------------------------------------


def _samples(m: LiveMetrics) -> dict[str, float]:
    out = {}
    for fam in text_string_to_metric_families(generate_latest(m.registry).decode()):
        for s in fam.samples:
            key = s.name + (
                "{" + ",".join(f"{k}={v}" for k, v in sorted(s.labels.items())) + "}" if s.labels else ""
            )
            out[key] = s.value
    return out


def test_live_metrics_count_what_the_streams_report():  # type: ignore[no-untyped-def]
    m = LiveMetrics(rate=100.0)
    m.report(0, {"state": "applying", "round": 0})
    m.arrived(1)
    m.report(
        0,
        {
            "state": "committed",
            "round": 0,
            "commands": 7,
            "xacts": [0, 1],
            "lag": [0.2, 0.4],
            "seconds": 0.05,
        },
    )
    m.report(1, {"state": "committed", "round": 0, "commands": 3, "xacts": [1, 2]})  # 1 spans both streams
    m.report(2, {"state": "conflict", "round": 1, "cls": "missing-row"})
    m.report(0, {"state": "reapplying", "round": 1})
    m.report(0, {"state": "reapplied", "round": 1, "commands": 5, "xacts": [3, 4], "lag": [1.5, 1.6]})
    s = _samples(m)
    assert s["applier_commands_applied_total"] == 15
    assert s["applier_transactions_applied_total"] == 5  # 0, 1, 2, 3, 4: 1 once
    assert s["applier_resets_total"] == 1
    assert s["applier_conflicts_total{class=missing-row}"] == 1
    assert s["applier_apply_lag_seconds_count"] == 4
    assert s["applier_apply_lag_seconds_bucket{le=0.5}"] == 2
    assert s["applier_apply_lag_last_seconds"] == pytest.approx(1.6)
    assert s["applier_stream_state{applier_stream_state=reapplying,stream=0}"] == 0
    assert s["applier_stream_state{applier_stream_state=applying,stream=0}"] == 1  # back after the re-apply
    assert s["applier_stream_state{applier_stream_state=waiting,stream=1}"] == 1
    assert s["applier_target_rate_tps"] == 100.0
    line = m.line(2.0)
    assert line is not None and "2.5 tps (target 100)" in line and "resets 1" in line and "lag p50" in line


# -- compare ----------------------------------------------------------------------------


def _report(tmp: Path, name: str, *, tps: float, p99: float, resets: int, apply_s: float) -> Path:
    doc = {
        "verdict": "converged",
        "subscription": "applier",
        "transactions": 1000,
        "rounds": 50,
        "resets": resets,
        "apply_seconds": apply_s,
        "phases_seconds": {"prepare": 5.0, "plan": 3.0, "apply": apply_s, "verify": 4.0},
        "load": {
            "throughput": tps,
            "lag": {"percentiles": {"p50": 0.1, "p90": 0.2, "p99": p99, "p999": p99, "max": p99}},
        },
    }
    folder = tmp / name
    folder.mkdir()
    (folder / "report.json").write_text(json.dumps(doc), encoding="utf-8")
    return folder


def test_compare_passes_within_the_tolerance_and_names_each_regression(tmp_path):  # type: ignore[no-untyped-def]
    base = _report(tmp_path, "base", tps=200.0, p99=0.3, resets=2, apply_s=10.0)
    same = _report(tmp_path, "same", tps=190.0, p99=0.35, resets=3, apply_s=10.6)  # noise: floors, 10%
    slow = _report(tmp_path, "slow", tps=120.0, p99=2.0, resets=10, apply_s=16.0)
    assert compare(base, same, 0.10).regressions == ()
    got = compare(base, slow, tolerance_of("10%"))
    assert {d.metric for d in got.regressions} == {
        "throughput",
        "lag_p99",
        "lag_p999",
        "lag_max",
        "resets",
        "apply_seconds",
    }
    assert got.exit_code == 1
    resets = next(d for d in got.deltas if d.metric == "resets")
    assert resets.change == pytest.approx(0.16)  # in points of rounds: 4% -> 20% of 50 rounds
    assert compare(base, slow, tolerance_of("1000%")).regressions == ()
    with pytest.raises(InputError, match="no report"):
        compare(tmp_path / "nowhere", base)
    with pytest.raises(InputError, match="not a share"):
        tolerance_of("ten")


def test_the_pytest_plugin_s_applier_compare_fails_a_test_on_a_regression(pytester, tmp_path):  # type: ignore[no-untyped-def]
    base = _report(tmp_path, "base", tps=200.0, p99=0.3, resets=2, apply_s=10.0)
    same = _report(tmp_path, "same", tps=195.0, p99=0.32, resets=2, apply_s=10.2)
    slow = _report(tmp_path, "slow", tps=100.0, p99=0.3, resets=2, apply_s=10.0)
    pytester.makepyfile(
        f"""
def test_same(applier_compare):
    c = applier_compare({str(base)!r}, {str(same)!r})
    assert c.regressions == ()

def test_slow(applier_compare):
    applier_compare({str(base)!r}, {str(slow)!r}, tolerance=0.10)
"""
    )
    result = pytester.runpytest()  # the plugin loads by its entry point
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*applier_compare: a regression past 10%: throughput (applier) 200.0 -> 100.0*"]
    )


# -- JUnit and HTML ---------------------------------------------------------------------

_THRESHOLDS = [
    {"threshold": "lag_p99<1s", "metric": "lag_p99", "op": "<", "limit": 1.0, "value": 0.2, "held": True},
    {"threshold": "resets<=0", "metric": "resets", "op": "<=", "limit": 0.0, "value": 2, "held": False},
]


def test_junit_has_a_testcase_per_threshold_and_a_failure_per_broken_one():  # type: ignore[no-untyped-def]
    report = {
        "verdict": "converged",
        "subscription": "applier",
        "thresholds": _THRESHOLDS,
        "phases_seconds": {},
    }
    root = ET.fromstring(run_junit(report))
    suite = next(s for s in root.iter("testsuite") if s.get("name") == "applier.thresholds")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {"lag_p99<1s", "resets<=0"}
    assert cases["lag_p99<1s"].find("failure") is None
    failure = cases["resets<=0"].find("failure")
    assert failure is not None and "measured 2" in failure.get("message", "")
    assert suite.get("failures") == "1" and suite.get("tests") == "2"


def test_the_html_names_each_threshold_escaped():  # type: ignore[no-untyped-def]
    hostile = {**_THRESHOLDS[1], "threshold": "<script>alert(1)</script>", "why": "a & b"}
    page = render_run({"verdict": "converged", "subscriptions": [], "thresholds": [_THRESHOLDS[0], hostile]})
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "a &amp; b" in page
    assert 'class="threshold broken"' in page and 'class="threshold held"' in page
