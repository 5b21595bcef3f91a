"""Locks held from outside: a session holds the subscriber's table locked as the apply starts.
Every parallel round that touches it times out (``lock_timeout_ms``) and resets; the
single-connection re-apply waits and tries again (tenacity, ``retry_attempts``), as the agent
retries its batch. A lock held a few seconds longer than the lock timeout costs time, not the
run: it converges. A lock held past every retry stops the run, and the report says so:
verdict unknown (exit 2) with the reason, never "diverged" for a run that simply stopped."""

from __future__ import annotations

import dataclasses
import threading
import time

import pyodbc
import pytest

from tests.support.runs import config, run

pytestmark = pytest.mark.integration


def _holder(cs: str, table: str, seconds: float, held: list[float]):  # type: ignore[no-untyped-def]
    """A phase callback that, as the apply starts, locks ``table`` for ``seconds``."""

    def on_phase(text: str) -> None:
        if not text.startswith("applying") or held:
            return
        conn = pyodbc.connect(cs, autocommit=False)
        conn.cursor().execute(f'LOCK TABLE "dbo"."{table}" IN EXCLUSIVE MODE')
        t = time.monotonic()

        def release() -> None:
            time.sleep(seconds)
            conn.rollback()
            conn.close()
            held.append(time.monotonic() - t)

        threading.Thread(target=release, daemon=True).start()
        held.append(0.0)

    return on_phase


def _cfg(table: str, lock_ms: int, attempts: int):  # type: ignore[no-untyped-def]
    cfg = config(table, streams=4, batch=20, kind="uniform", initial_rows=200, transactions=200, seed=3)
    return cfg.replace(run=dataclasses.replace(cfg.run, lock_timeout_ms=lock_ms, retry_attempts=attempts))


def test_a_lock_held_past_the_lock_timeout_is_waited_out(spark, pg, target):
    held: list[float] = []
    cfg = _cfg("outside_lock_short", 1000, 5)
    _result, report = run(
        spark, cfg, target, on_phase=_holder(pg.connection_string(), "outside_lock_short", 4.0, held)
    )
    assert held, "the lock was never taken"
    # The first round met the lock: reset, and the single connection timed out (1 s) and
    # tried again until the lock went after 4 s. Before lock timeouts were retried there, the
    # run stopped here and was reported diverged.
    assert report["resets"] >= 1 and held[1] >= 4.0
    assert report["verdict"] == "converged", (report["reason"], report["divergent"][:2])


def test_a_lock_held_past_every_retry_stops_the_run_with_verdict_unknown(spark, pg, target):
    held: list[float] = []
    cfg = _cfg("outside_lock_long", 300, 2)
    result, report = run(
        spark, cfg, target, on_phase=_holder(pg.connection_string(), "outside_lock_long", 20.0, held)
    )
    assert held
    assert report["verdict"] == "unknown" and result.exit_code == 2
    assert "transient errors on the single connection outlasted the retry policy" in report["reason"]
    assert "after 2 attempts" in report["reason"]
