"""`applier bench` runs end to end at a small size and writes its JSON (figures not judged)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.integration


@pytest.mark.e2e
def test_bench_command_writes_its_json(spark, tmp_path, capsys):  # spark: share the session's Spark
    from applier.cli import main

    out = tmp_path / "bench"
    rc = main(["bench", "--commands", "20000", "--rows", "2000", "--streams", "2", "--sync", "on",
               "--out", str(out), "--quiet"])  # fmt: skip
    assert rc == 0
    printed = capsys.readouterr().out
    for mode in ("calls", "set-based"):  # where each mode's apply went, beside the ceiling
        line = next(x for x in printed.splitlines() if x.startswith("CPU a command") and f" {mode} " in x)
        assert "ceiling" in line and "its stream tasks" in line and "round meetings" in line, line
    doc = json.loads((out / "bench.json").read_text())
    assert doc["bench"]["commands"] == 20000 and doc["bench"]["streams"] == [2]
    run = doc["runs"]["on"]
    p = run["per_n"]["2"]
    assert p["verdict"] == "converged" and p["set_verdict"] == "converged"
    for key in (
        "ceiling",
        "applier_apply",
        "applier_end_to_end",
        "applier_set_apply",
        "applier_set_end_to_end",
    ):
        assert p[key]["commands"] == 20000 and p[key]["commands_per_s"] > 0
    assert p["applier_end_to_end"]["seconds"] > p["applier_apply"]["seconds"]
    assert run["native_logical"]["commands"] == 20000 and run["native_extra"]["converged"] is True
    assert p["ratios"]["apply_vs_ceiling"] > 0 and p["ratios"]["apply_vs_native"] > 0
    assert p["ratios"]["set_apply_vs_ceiling"] > 0
    assert 0 <= p["ratios"]["meeting_wait_share"] < 1 and 0 <= p["ratios"]["set_meeting_wait_share"] < 1
    for st in p["extra"]["stream_stats"]:
        assert 0 < st["take_cpu_seconds"] < st["cpu_seconds"], st
    assert {g["name"] for g in doc["goals"]} >= {
        "apply (calls) >= 0.9 x ceiling at N=2 (sync on)",
        "apply (set-based) >= 0.8 x ceiling at N=2 (sync on)",
    }
