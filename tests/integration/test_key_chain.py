"""The documented SubscriptionStreams hazard (seed 003): update pk 1->2 then 2->3.

On different streams in one round, update 2 finds no row, raises 20598, the round is
rolled back and re-applied on one connection, and the subscriber ends with one row, key 3.
Split across two rounds, nothing is raised.
"""

from __future__ import annotations

import pytest

from tests.support.changes import key_update, write_jsonl
from tests.support.runs import config, run, streams_of
from tests.support.subscriber import rows, table_ref

pytestmark = pytest.mark.integration


def _chain(table: str) -> list[dict]:
    art = f"dbo.{table}"
    return [key_update(1 << 20 | 1, 1, art, 1, 2), key_update(2 << 20 | 1, 2, art, 2, 3)]


def _snapshot(tmp_path, table: str):
    return write_jsonl(
        tmp_path / "snap.jsonl", [{"article": f"dbo.{table}", "image": {"id": 1, "v": "x", "n": 0}}]
    )


def _streams_apart(spark, cfg, records, tmp_path) -> int:
    for n in range(2, 9):
        s = streams_of(spark, cfg, records, n, tmp_path)
        if s[0] != s[1]:
            return n
    raise AssertionError("keys 1 and 2 never land on different streams")


def test_chain_in_one_round_raises_20598_resets_and_converges(spark, any_target, tmp_path):
    table = "chain_one_round"
    records = _chain(table)
    n = _streams_apart(spark, config(table), records, tmp_path)
    cfg = config(table, streams=n, batch=100)
    changes = write_jsonl(tmp_path / "chain.jsonl", records)
    result, report = run(spark, cfg, any_target, changes=changes, snapshot=_snapshot(tmp_path, table))

    assert report["conflicts"]["row_not_found"] >= 1
    assert report["resets"] == 1
    assert any(f"reset from {n} to 1" in e["message"] for e in report["reset_log"])
    assert report["outcomes"].get("reapplied") == 2
    assert report["verdict"] == "converged" and result.exit_code == 0
    assert rows(any_target, f"SELECT id FROM {table_ref(any_target, table)}") == [(3,)]


def test_chain_across_two_rounds_raises_nothing(spark, any_target, tmp_path):
    table = "chain_two_rounds"
    records = _chain(table)
    n = _streams_apart(spark, config(table), records, tmp_path)
    cfg = config(table, streams=n, batch=1)  # one transaction per round
    changes = write_jsonl(tmp_path / "chain.jsonl", records)
    result, report = run(spark, cfg, any_target, changes=changes, snapshot=_snapshot(tmp_path, table))

    assert report["rounds"] == 2
    assert sum(report["conflicts"].values()) == 0
    assert report["resets"] == 0
    assert report["outcomes"] == {"applied": 2}
    assert report["verdict"] == "converged"
    assert rows(any_target, f"SELECT id FROM {table_ref(any_target, table)}") == [(3,)]


def test_progress_table_written_in_the_commit(spark, any_target, tmp_path):
    """Each stream's watermark names the last lsn it committed."""
    table = "chain_progress"
    records = _chain(table)
    cfg = config(table, streams=2, batch=1)
    run(
        spark,
        cfg,
        any_target,
        changes=write_jsonl(tmp_path / "c.jsonl", records),
        snapshot=_snapshot(tmp_path, table),
    )
    got = rows(
        any_target,
        "SELECT max(last_lsn), max(last_round) FROM applier.progress WHERE subscription = ?",
        table,
    )
    assert got == [(records[-1]["lsn"], 1)]
