"""Load tests as a load tester runs them (issue 35), on the embedded PostgreSQL:

- half the measured capacity held for two minutes, one and a half times it broken while the
  lag over time grows;
- ``applier compare``: two runs of one build pass at 10%, a build slowed on purpose (a sleep
  at every share through a fail point) fails and names the metric;
- the CLI: a broken threshold exits 1 and is named on the console, -P prints progress lines,
  the JSON and JUnit hold the thresholds.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from applier.config import LoadSettings, demo_config
from tests.support.runs import run

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

APPLIER = [sys.executable, "-m", "applier.cli"]


def _cfg(name: str, transactions: int, load: LoadSettings | None = None):  # type: ignore[no-untyped-def]
    cfg = demo_config()
    cfg = cfg.replace(
        workload=dataclasses.replace(cfg.workload, transactions=transactions, commands_per_transaction=3),
        run=dataclasses.replace(cfg.run, subscription=name),
    )
    return cfg if load is None else cfg.replace(load=load)


def test_half_the_capacity_holds_for_two_minutes_and_one_and_a_half_times_it_breaks(spark, target) -> None:
    # the capacity: transactions per second as fast as it goes (rounds of 100), over a run long
    # enough that its first rounds (connections, workers warming) do not weigh: 6,000 transactions
    # measured 2,806 tps where 20,000 measured 3,710, and the paced run then held "1.5 x capacity"
    _, fast = run(spark, _cfg("cap-fast", 20000), target)
    capacity = fast["transactions"] / fast["apply_seconds"]
    assert capacity > 50, fast["apply_seconds"]

    half = LoadSettings(rate=round(capacity * 0.5, 1), duration=120.0, thresholds=("lag_p99<1s",))
    result, report = run(spark, _cfg("cap-half", 1, half), target)
    assert result.verdict.value == "converged"
    assert result.exit_code == 0, result.thresholds
    assert report["transactions"] == round(half.rate * 120)  # type: ignore[operator]
    assert report["load"]["window_seconds"] >= 110
    held_p99 = report["load"]["lag"]["percentiles"]["p99"]

    over = LoadSettings(rate=round(capacity * 1.5, 1), duration=30.0, thresholds=("lag_p99<1s",))
    result2, report2 = run(spark, _cfg("cap-over", 1, over), target)
    assert result2.verdict.value == "converged"
    assert result2.exit_code == 1
    assert [t["threshold"] for t in result2.broken] == ["lag_p99<1s"]
    rounds = report2["load"]["lag"]["per_round"]
    tenth = max(1, len(rounds) // 10)
    early = sum(r["p50"] for r in rounds[:tenth]) / tenth
    late = sum(r["p50"] for r in rounds[-tenth:]) / tenth
    assert late > 2 * early and late > 1.0, (early, late)
    print(
        f"\ncapacity {capacity:,.0f} tps; at 50% ({half.rate} tps, 120 s) lag p99 {held_p99:.3f} s; "
        f"at 150% ({over.rate} tps, 30 s) lag p50 {early:.3f} s early -> {late:.3f} s late"
    )


def _cli_run(out: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*APPLIER, "run", "--transactions", "600", "--rate", "200", "--out", str(out), "--quiet", *extra],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_compare_passes_one_build_twice_and_fails_a_build_slowed_on_purpose(tmp_path) -> None:
    runs = {}
    for name, env in (
        ("base", None),
        ("same", None),
        ("slow", {"APPLIER_FAILPOINT": "apply.share:sleep=0.3"}),
    ):
        done = _cli_run(tmp_path / name, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        runs[name] = tmp_path / name
    same = subprocess.run(
        [*APPLIER, "compare", str(runs["base"]), str(runs["same"]), "--tolerance", "10%"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert same.returncode == 0, same.stdout + same.stderr
    assert "no regression" in same.stdout
    slow = subprocess.run(
        [
            *APPLIER,
            "compare",
            str(runs["base"]),
            str(runs["slow"]),
            "--tolerance",
            "10%",
            "--json",
            str(tmp_path / "c.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert slow.returncode == 1, slow.stdout + slow.stderr
    assert "REGRESSION: throughput (applier)" in slow.stdout
    doc = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    assert "throughput" in doc["regressions"] and "lag_p99" in doc["regressions"]


def test_the_cli_names_a_broken_threshold_and_exits_1(tmp_path) -> None:
    done = subprocess.run(
        [
            *APPLIER,
            "run",
            "--transactions",
            "1500",
            "--rate",
            "100000",
            "--threshold",
            "lag_p99<10ms",
            "--threshold",
            "resets<=100000",
            "-P",
            "0.5",
            "--report",
            str(tmp_path / "r.json"),
            "--junit",
            str(tmp_path / "r.xml"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "120"},
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "threshold broken: lag_p99<10ms" in done.stdout
    assert "threshold held: resets<=100000" in done.stdout
    assert "progress: " in done.stdout and "tps (target 100,000)" in done.stdout
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["verdict"] == "converged" and report["exit_code"] == 1
    assert [t["held"] for t in report["thresholds"]] == [False, True]
    suite = next(
        s
        for s in ET.parse(tmp_path / "r.xml").getroot().iter("testsuite")
        if s.get("name") == "applier.thresholds"
    )
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
