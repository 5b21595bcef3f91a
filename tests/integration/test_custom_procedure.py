"""A custom update procedure that forgets the zero-row check loses the key chain silently;
applier reports the subscriber diverged and names the lost key. With the check, it converges."""

from __future__ import annotations

import pytest

from tests.support.changes import key_update, write_jsonl
from tests.support.runs import config, run, streams_of
from tests.support.subscriber import rows

pytestmark = pytest.mark.integration

_PROC = """
CREATE OR REPLACE PROCEDURE dbo.{name}(c1 integer, c2 varchar(40), c3 integer, pkc1 integer, bitmap bytea)
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE dbo."{table}" AS t SET
        id = CASE WHEN (get_byte(bitmap, 0) & 1) = 1 THEN c1 ELSE t.id END,
        v  = CASE WHEN (get_byte(bitmap, 0) & 2) = 2 THEN c2 ELSE t.v END,
        n  = CASE WHEN (get_byte(bitmap, 0) & 4) = 4 THEN c3 ELSE t.n END
    WHERE t.id = pkc1;
    {check}
END $$;
"""
_CHECK = "IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = 'RP598', MESSAGE = 'row not found', DETAIL = '20598'; END IF;"


def _run(spark, target, tmp_path, table: str, check: bool):
    proc = f"upd_{table}"
    sql = tmp_path / f"{proc}.sql"
    sql.write_text(_PROC.format(name=proc, table=table, check=_CHECK if check else "-- no zero-row check"))
    art = f"dbo.{table}"
    records = [key_update(1 << 20 | 1, 1, art, 1, 2), key_update(2 << 20 | 1, 2, art, 2, 3)]
    probe = config(table)
    n = next(n for n in range(2, 9) if len(set(streams_of(spark, probe, records, n, tmp_path))) == 2)
    cfg = config(table, streams=n, update=f"SCALL dbo.{proc}")
    # Both updates are in one round on different streams: the second never sees the first's
    # uncommitted row, so without the check it updates nothing, whatever the timing.
    snap = write_jsonl(tmp_path / "snap.jsonl", [{"article": art, "image": {"id": 1, "v": "x", "n": 0}}])
    changes = write_jsonl(tmp_path / "chain.jsonl", records)
    return run(spark, cfg, target, changes=changes, snapshot=snap, custom_sql=[sql])


def test_missing_zero_row_check_diverges_and_names_the_lost_key(spark, target, tmp_path):
    result, report = _run(spark, target, tmp_path, "nocheck", check=False)
    assert report["verdict"] == "diverged" and result.exit_code == 1
    assert report["conflicts"]["row_not_found"] == 0  # the loss is silent
    kinds = {(d["kind"], tuple(d["key"])) for d in report["divergent"]}
    assert ("missing", (3,)) in kinds  # the key the chain should end at
    assert ("extra", (2,)) in kinds  # the stale row the lost update left
    lost = next(d for d in report["divergent"] if d["kind"] == "missing")
    assert [c["lsn"] for c in lost["commands"] if "via" not in c] == [2 << 20 | 1]
    # one hop back: the update that produced key 2, which the lost update needed
    assert [c["lsn"] for c in lost["commands"] if "via" in c] == [1 << 20 | 1]
    assert lost["inverted"] == {**lost["inverted"], "first": 1 << 20 | 1, "second": 2 << 20 | 1}
    assert lost["commands"][0]["stream"] is not None
    assert rows(target, 'SELECT id FROM dbo."nocheck"') == [(2,)]


def test_custom_procedure_with_the_check_converges(spark, target, tmp_path):
    result, report = _run(spark, target, tmp_path, "withcheck", check=True)
    assert report["verdict"] == "converged"
    assert report["resets"] >= 1
    assert rows(target, 'SELECT id FROM dbo."withcheck"') == [(3,)]
