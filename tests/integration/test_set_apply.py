"""Set-based apply against the embedded PostgreSQL: the set procedures leave the same rows
as the row procedures (hostile names, bytes keys, decimals, times, a column named like the
mask), raise 20598 naming the missing key with nothing applied, and a whole run with
--set-apply still resets to one stream on the key-chain hazard and converges."""

from __future__ import annotations

import base64
import dataclasses
import json

import pytest

from applier.apply.bulk import BulkCall
from applier.apply.install import install
from applier.apply.sender import Sender
from applier.config import demo_config, parse_config
from applier.plan.calls import Planner
from applier.targets.connection import connect
from tests.support.runs import run
from tests.support.subscriber import rows

pytestmark = pytest.mark.integration

COLS = [
    {"name": 'k"1', "type": "int", "key": True},
    {"name": "b key", "type": "varbinary(8)", "key": True},
    {"name": "_m", "type": "int"},
    {"name": "amount", "type": "decimal(12,2)"},
    {"name": "at", "type": "datetime2"},
    {"name": "note", "type": "nvarchar(30)"},
]


def _articles():  # type: ignore[no-untyped-def]
    arts = [{"name": f'set"{x}.t b', "columns": COLS, "update": "SCALL"} for x in ("bulk", "rows")]
    return parse_config({"articles": arts}, "<set>").articles


def _img(k: int, m: int, amount: str, note: str | None) -> dict:
    return {
        'k"1': k,
        "b key": base64.b64encode(bytes([k, 255])).decode(),
        "_m": m,
        "amount": amount,
        "at": f"2024-05-0{1 + k % 8}T10:11:12.123456",
        "note": note,
    }


def _row(article: str, lsn: int, op: str, before: dict | None, after: dict | None, changed=None) -> dict:
    def key(img: dict | None) -> str | None:
        return None if img is None else json.dumps([img['k"1'], img["b key"]])

    return {
        "lsn": lsn,
        "xact_seqno": lsn,
        "xact_index": 0,
        "article": article,
        "op": op,
        "before": None if before is None else json.dumps(before),
        "after": None if after is None else json.dumps(after),
        "changed": changed,
        "key_before": key(before),
        "key_after": key(after),
        "stream": 0,
        "round": 0,
    }


def _script(article: str) -> list[dict]:
    out = [_row(article, k, "I", None, _img(k, k, f"{k}.50", "n")) for k in range(1, 7)]
    lsn = 10
    for k, m, amount, note, changed in [
        (1, 11, "1.50", "n", ["_m"]),
        (2, 2, "99.99", None, ["amount", "note"]),
        (1, 11, "7.25", "n", ["amount"]),  # second update of key 1: merges with the first
        (3, 3, "3.50", "é'\"; DROP", ["note"]),
    ]:
        out.append(_row(article, lsn, "U", _img(k, k, "0.00", "n"), _img(k, m, amount, note), changed))
        lsn += 1
    out.append(_row(article, lsn, "D", _img(4, 4, "4.50", "n"), None))
    out.append(_row(article, lsn + 1, "D", _img(5, 5, "5.50", "n"), None))
    out.append(_row(article, lsn + 2, "I", None, _img(4, 40, "40.00", "back")))  # re-insert after delete
    return out


def _table(target, article) -> list[tuple]:  # type: ignore[no-untyped-def]
    d = target.dialect
    cols = ", ".join(d.quote(c.name) for c in article.columns)
    return rows(target, f"SELECT {cols} FROM {d.table(article)} ORDER BY 1")


def test_set_procedures_leave_the_rows_the_row_procedures_leave(target):
    bulk_art, rows_art = _articles()
    install(target, [bulk_art, rows_art], "set-apply", set_apply=True)
    conn = connect(target.connection_string, target.dialect, 2000)
    try:
        planner = Planner(target.dialect, [bulk_art, rows_art])
        for art, set_apply in ((bulk_art, True), (rows_art, False)):
            sender = Sender(conn, target.dialect, planner, 0, set_apply=set_apply)
            calls = sender.calls(_script(art.name))
            assert any(isinstance(c, BulkCall) for _, c in calls) is set_apply
            assert sender.send(calls) is None
            conn.commit()
    finally:
        conn.close()
    got = _table(target, bulk_art)
    assert got == _table(target, rows_art)
    assert [r[0] for r in got] == [1, 2, 3, 4, 6]
    by_key = {r[0]: r for r in got}
    assert by_key[1][2] == 11 and str(by_key[1][3]) == "7.25"  # both updates of key 1 landed
    assert by_key[2][5] is None and by_key[3][5] == "é'\"; DROP"
    assert by_key[4][2] == 40 and bytes(by_key[4][1]) == bytes([4, 255])


def test_a_missing_row_raises_20598_naming_its_key_and_applies_nothing(target):
    bulk_art, _ = _articles()
    install(target, [bulk_art], "set-apply-missing", set_apply=True)
    conn = connect(target.connection_string, target.dialect, 2000)
    try:
        sender = Sender(conn, target.dialect, Planner(target.dialect, [bulk_art]), 3, set_apply=True)
        assert sender.send(sender.calls([_row(bulk_art.name, 1, "I", None, _img(1, 1, "1.00", "a"))])) is None
        conn.commit()
        updates = [
            _row(bulk_art.name, 2, "U", _img(1, 1, "1.00", "a"), _img(1, 1, "2.00", "a"), ["amount"]),
            _row(bulk_art.name, 3, "U", _img(77, 7, "1.00", "a"), _img(77, 7, "2.00", "a"), ["amount"]),
        ]
        calls = sender.calls(updates)
        assert len(calls) == 1
        failure = sender.send(calls)
        conn.rollback()
    finally:
        conn.close()
    assert failure is not None
    assert (failure.cls, failure.code, failure.lsn, failure.stream) == ("row_not_found", "RP598", 3, 3)
    assert '[k"1] = 77' in failure.message and "UPDATE" in failure.message
    assert [str(r[3]) for r in _table(target, bulk_art)] == ["1.00"]  # the found row was not updated either


def test_a_run_with_set_apply_resets_on_the_key_chain_hazard_and_converges(spark, target):
    cfg = demo_config()
    cfg = cfg.replace(
        workload=dataclasses.replace(cfg.workload, transactions=600, seed=7),
        run=dataclasses.replace(cfg.run, set_apply=True, subscription="set-apply-run"),
    )
    result, report = run(spark, cfg, target)
    assert report["verdict"] == "converged" and result.exit_code == 0
    assert report["resets"] >= 1 and report["conflicts"]["row_not_found"] >= 1
    assert report["outcomes"]["applied"] + report["outcomes"]["reapplied"] == report["commands"]
