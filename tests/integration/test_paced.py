"""Paced runs on the embedded PostgreSQL (issue 35): the apply follows its rate, the lag is
measured per transaction, thresholds pass or fail the run, and the live metrics a scraper
reads while the run goes end equal to the report."""

from __future__ import annotations

import dataclasses
import threading
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from applier.config import LoadSettings, demo_config
from applier.loadtest.live import LiveMetrics
from tests.support.runs import run

pytestmark = pytest.mark.integration


def _cfg(name: str, transactions: int, load: LoadSettings):  # type: ignore[no-untyped-def]
    cfg = demo_config()
    return cfg.replace(
        workload=dataclasses.replace(cfg.workload, transactions=transactions, commands_per_transaction=3),
        run=dataclasses.replace(cfg.run, subscription=name),
        load=load,
    )


def _unlabelled(exposition: str) -> dict[str, float]:
    """The samples without labels of a Prometheus exposition, by name."""
    return {
        s.name: s.value
        for fam in text_string_to_metric_families(exposition)
        for s in fam.samples
        if not s.labels
    }


def _scrape(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=5) as r:
        return _unlabelled(r.read().decode())


def test_a_paced_run_follows_its_rate_and_its_metrics_end_equal_to_the_report(spark, target) -> None:
    rate, n = 150.0, 450  # 3 s of schedule
    cfg = _cfg("paced-1", n, LoadSettings(rate=rate, thresholds=("lag_p99<1s", "throughput>=0.9*rate")))
    metrics = LiveMetrics(rate)
    server = metrics.serve(0)
    url = f"http://127.0.0.1:{server.server_port}/metrics"
    scrapes: list[dict[str, float]] = []
    halt = threading.Event()

    def scrape() -> None:
        while not halt.wait(0.25):
            scrapes.append(_scrape(url))

    t = threading.Thread(target=scrape, daemon=True)
    t.start()
    try:
        result, report = run(spark, cfg, target, observer=metrics)
    finally:
        halt.set()
        t.join(timeout=5)
        server.shutdown()
    assert result.verdict.value == "converged" and result.exit_code == 0
    assert [th["held"] for th in result.thresholds] == [True, True], result.thresholds
    load = report["load"]
    # rounds of the transactions due within 0.1 s: 15; the schedule held the apply to its rate
    assert report["settings"]["run"]["commit_batch_size"] == 15
    assert load["throughput"] == pytest.approx(rate, rel=0.1)
    assert load["window_seconds"] >= 0.9 * n / rate
    lag = load["lag"]
    assert lag["transactions"] == n  # every transaction once, whole
    assert set(lag["per_stream"]) == {"0", "1", "2", "3"}
    assert 0 < lag["percentiles"]["p50"] <= lag["percentiles"]["p99"] <= lag["percentiles"]["max"] < 1.0
    assert [r["round"] for r in lag["per_round"]] == list(range(report["rounds"]))
    # scraped while it went: the counters rose, and ended equal to the report
    applied = [
        s["applier_transactions_applied_total"] for s in scrapes if "applier_transactions_applied_total" in s
    ]
    assert len(set(applied)) >= 3, applied
    assert applied == sorted(applied)
    final = _scrape_last(metrics)
    outcomes = report["outcomes"]
    assert final["applier_commands_applied_total"] == outcomes.get("applied", 0) + outcomes.get(
        "reapplied", 0
    )
    assert final["applier_transactions_applied_total"] == n
    assert final["applier_resets_total"] == report["resets"]
    assert final["applier_apply_lag_seconds_count"] == n


def _scrape_last(m: LiveMetrics) -> dict[str, float]:
    from prometheus_client import generate_latest

    return _unlabelled(generate_latest(m.registry).decode())


def test_a_rate_beyond_capacity_breaks_the_lag_threshold_and_the_lag_grows(spark, target) -> None:
    # every transaction is due within 20 ms: the streams cannot keep up, rounds queue
    n = 3000
    cfg = _cfg("paced-2", n, LoadSettings(rate=150_000.0, thresholds=("lag_p99<0.05s", "resets<=1000")))
    t0 = time.perf_counter()
    result, report = run(spark, cfg, target)
    assert time.perf_counter() - t0 < 120
    assert result.verdict.value == "converged"
    assert result.exit_code == 1  # converged, but a threshold broke
    assert [th["threshold"] for th in result.broken] == ["lag_p99<0.05s"]
    rounds = report["load"]["lag"]["per_round"]
    assert len(rounds) == n // 100  # CommitBatchSize caps the rounds
    first, last = rounds[0]["p50"], rounds[-1]["p50"]
    assert last > 3 * first, (first, last)  # the lag over time grows
    assert all(b["max"] >= a["p50"] for a, b in zip(rounds, rounds[1:], strict=False))
