"""`applier bench` runs end to end at a small size and writes its JSON (figures not judged)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.integration


@pytest.mark.e2e
def test_bench_command_writes_its_json(spark, tmp_path):  # spark: share the session's Spark
    from applier.cli import main

    out = tmp_path / "bench"
    rc = main(["bench", "--commands", "20000", "--rows", "2000", "--streams", "2", "--sync", "on",
               "--out", str(out), "--quiet"])  # fmt: skip
    assert rc == 0
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
    assert {g["name"] for g in doc["goals"]} >= {
        "apply (calls) >= 0.9 x ceiling at N=2 (sync on)",
        "apply (set-based) >= 0.8 x ceiling at N=2 (sync on)",
    }
