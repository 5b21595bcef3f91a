"""``--pace source`` (issue 35): a capture replayed at its own commit times.

The capture is written here, so its commit times are known exactly: wal2json version 1
documents (``include-timestamp``) of transactions in bursts with idle gaps between them, as a
publisher's traffic comes. The run replays it on the embedded PostgreSQL at N = 2 and the
report says when each round started against when it was due.

The stated tolerance: a round never starts before its last transaction is due; the median
round starts within ``TYPICAL`` after it and every round within ``SLACK`` (a quiet 2-core
machine measured 0.3 ms and 7 ms; with three test runs beside it, 13 ms and 0.36 s); a
transaction commits at most ``batch_interval + SLACK`` after its own commit time at the
publisher (scaled by the speed). The whole replay lasts the capture's span over the speed,
within ``SLACK``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path

import pytest

from applier.config import LoadSettings, load_config
from applier.errors import ConfigError
from tests.support.runs import run

pytestmark = pytest.mark.integration

TYPICAL = 0.05  # seconds the median round may start after it is due
SLACK = 1.0  # seconds any round may (a loaded 2-core machine)
INTERVAL = 0.1


DATA = Path(__file__).resolve().parents[1] / "data" / "captures" / "paced"
CAPTURE = DATA / "bursts.v1.jsonl"  # README.md there: 6 bursts of 8 transactions


def _config(name: str, load: LoadSettings):  # type: ignore[no-untyped-def]
    cfg = load_config(DATA / "meter.toml")
    return cfg.replace(run=dataclasses.replace(cfg.run, subscription=name), load=load)


def _offsets(path: Path) -> list[float]:
    """Each transaction's commit, seconds after the first, from the capture's timestamps."""
    times = [
        dt.datetime.strptime(json.loads(line)["timestamp"] + "00", "%Y-%m-%d %H:%M:%S.%f%z").timestamp()
        for line in path.read_text().splitlines()
        if line.strip()
    ]
    return [t - times[0] for t in times]


@pytest.mark.parametrize("speed", [1.0, 2.0])
def test_a_capture_replays_at_its_commit_times(spark, target, tmp_path: Path, speed: float) -> None:
    offsets = _offsets(CAPTURE)
    f = CAPTURE
    cfg = _config(f"pace-src-{int(speed)}", LoadSettings(pace="source", speed=speed, batch_interval=INTERVAL))
    result, rep = run(spark, cfg, target, changes=f, changes_format="wal2json")
    assert result.verdict.value == "converged" and result.exit_code == 0, rep.get("check")
    load = rep["load"]
    assert load["pace"] == "source" and load["speed"] == speed
    span = offsets[-1] / speed
    assert load["source_seconds"] == pytest.approx(span, abs=1e-3)
    # rounds follow the bursts: never more than a burst, never across an idle gap
    assert load["round_size"] <= 8
    assert rep["rounds"] >= 6
    kept = load["schedule"]
    assert kept["rounds"] == rep["rounds"]
    start_after = kept["start_after_due"]
    assert start_after["min"] >= -0.005, start_after  # never early (clocks: 5 ms)
    assert start_after["p50"] <= TYPICAL, start_after
    assert start_after["max"] <= SLACK, start_after
    lag = load["lag"]
    assert lag["transactions"] == len(offsets)
    assert lag["percentiles"]["p50"] <= INTERVAL + TYPICAL, lag["percentiles"]
    assert lag["percentiles"]["max"] <= INTERVAL + SLACK, lag["percentiles"]
    # the replay lasts the capture's span over the speed
    assert span <= lag["seconds"] <= span + SLACK, (lag["seconds"], span)


def test_pace_source_needs_commit_times(spark, target, tmp_path: Path) -> None:
    f = tmp_path / "meter.v1.jsonl"
    lines = CAPTURE.read_text().splitlines()[:3]
    doc = json.loads(lines[1])
    del doc["timestamp"]
    lines[1] = json.dumps(doc)
    f.write_text("\n".join(lines) + "\n")
    cfg = _config("pace-src-none", LoadSettings(pace="source"))
    with pytest.raises(Exception) as e:
        run(spark, cfg, target, changes=f, changes_format="wal2json")
    assert "meter.v1.jsonl:2" in str(e.value) and "include-timestamp" in str(e.value)


def test_pace_source_refuses_a_generated_stream(spark, target) -> None:
    cfg = _config("pace-src-gen", LoadSettings(pace="source"))
    cfg = cfg.replace(workload=dataclasses.replace(cfg.workload, transactions=10))
    with pytest.raises(ConfigError, match="replays a capture"):
        run(spark, cfg, target)
