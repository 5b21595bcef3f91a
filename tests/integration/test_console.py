"""`applier run` as a CI job sees it: nothing on stderr but applier's own lines (the JVM's
start-up warnings and Spark's log are in spark.log in the run's folder), every reset said
once, the reports written (JSON with its envelope, JUnit valid against the XSD); and `-v`
brings Spark's lines back to the console; `--profile` prints the run's cost model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import xmlschema

pytestmark = pytest.mark.integration

APPLIER = [sys.executable, "-m", "applier.cli"]
XSD = Path(__file__).parents[1] / "data" / "junit" / "junit.xsd"


def test_the_demo_prints_nothing_on_stderr_and_writes_every_report(tmp_path):
    """`make demo`'s run (the demo configuration, 10,000 commands on 4 streams)."""
    out = tmp_path / "run"
    p = subprocess.run(
        [
            *APPLIER,
            "run",
            "--out",
            str(out),
            "--junit",
            str(out / "junit.xml"),
            "--html",
            str(out / "report.html"),
            "--profile",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stderr == "", p.stderr[-3000:]
    doc = json.loads((out / "report.json").read_text())
    assert doc["schema_version"] == 2 and doc["verdict"] == "converged"
    assert doc["versions"]["spark"].startswith("4.") and doc["started_at"].endswith("Z")
    resets = doc["reset_log"]
    assert resets, "the demo's key chains reset at least once"
    for entry in resets:
        assert {"round", "streams_from", "classes", "streams", "message"} <= entry.keys()
        line = f"{entry['message']} (round {entry['round']}:"
        assert p.stdout.count(line) == 1, (line, p.stdout)  # each reset said once
    for phase in ("- generating", "- installing", "- planning", "- applying", "- verifying"):
        assert p.stdout.count(phase) == 1, (phase, p.stdout)
    timeline = doc["timeline"]
    streams = doc["settings"]["run"]["streams"]
    assert {s["stream"] for s in timeline["segments"]} <= set(range(streams))
    assert len(timeline["rounds"]) == doc["rounds"]
    assert sum(
        pt[1] * doc["throughput_series"]["bucket_seconds"] for pt in doc["throughput_series"]["points"]
    ) == (pytest.approx(doc["commands"], rel=0.01))
    log = (out / "spark.log").read_text()
    assert "incubator" in log  # the JVM's start-up warning went here, not to the console
    xmlschema.XMLSchema(str(XSD)).validate(str(out / "junit.xml"))
    assert "JUnit XML:" in p.stdout and "Spark log:" in p.stdout and "HTML report:" in p.stdout
    page = (out / "report.html").read_text()
    assert page.count('class="lane"') == streams and "CONVERGED" in page
    # --profile: the report's cost, as a table, and the wall time since the command started
    assert "where the run's time went (--profile)" in p.stdout
    for phase, c in doc["cost"].items():
        row = next(
            r for r in (ln.split() for ln in p.stdout.splitlines()) if r[:1] == [phase] and len(r) == 10
        )
        assert row[1:5] == [f"{c['seconds']:.2f}", str(c["jobs"]), str(c["stages"]), str(c["tasks"])]
        assert row[6:] == [f"{c['cpu_seconds'][k]:.2f}" for k in ("driver", "jvm", "jit", "workers")]
    assert sum(c["jobs"] for c in doc["cost"].values()) <= 11  # the folds stay folded
    # the demo resets a few of its rounds, not most: no explanation, and nothing paid for one
    assert doc["resets"] > 0 and 2 * doc["resets"] <= doc["rounds"]
    assert doc["parallelism"] is None and "explain" not in doc["cost"]
    assert "why they reset" not in p.stdout and "to run in parallel" not in p.stdout
    in_all = next(ln for ln in p.stdout.splitlines() if ln.startswith("in all: "))
    assert float(in_all.split()[2]) >= doc["seconds"]


@pytest.mark.e2e
def test_verbose_shows_spark_on_the_console(tmp_path):
    p = subprocess.run(
        [*APPLIER, "run", "-v", "--transactions", "50", "--report", str(tmp_path / "r.json")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert "incubator" in p.stderr  # the JVM's own output, as Spark prints it
    assert " INFO " in p.stderr  # the Python side's log at INFO (-v), quiet otherwise
    assert not (tmp_path / "spark.log").exists()
