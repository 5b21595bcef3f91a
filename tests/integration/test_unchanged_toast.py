"""Unchanged TOASTed values (issue 31): wal2json leaves a large value an update did not change out
of the new row, in both format versions and whether or not the update moves the key (seen on
the embedded publisher: tests/support/harness.py). The reader takes it from the row's previous
image: the snapshot's row, an insert's, the image a key move left at the update's before key,
through chains of moves that left it out too (pointer jumping across keys), and never from a
row deleted before the key was inserted again. Each capture, written here as wal2json writes
it with REPLICA IDENTITY DEFAULT (old keys only), is applied at N = 4 and the subscriber holds
the expected rows. A value whose earlier image is nowhere is refused naming line and column.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyodbc
import pytest

import applier
from applier.config import parse_config
from applier.errors import InputError
from tests.support.changes import write_jsonl

pytestmark = pytest.mark.integration

ARTICLE = {
    "name": "public.docs",
    "columns": [
        {"name": "id", "type": "int", "key": True},
        {"name": "v", "type": "int", "nullable": False},
        {"name": "doc", "type": "nvarchar(max)"},
        {"name": "doc2", "type": "nvarchar(max)"},
    ],
}
SNAPSHOT = [
    {"id": 1, "v": 0, "doc": "S1", "doc2": None},
    {"id": 9, "v": 0, "doc": "S9", "doc2": "T9"},
]
# (op, old key, new row without the columns left out as unchanged); one list a transaction
TRANSACTIONS: list[list[tuple[str, int | None, dict[str, Any] | None]]] = [
    [("U", 1, {"id": 1, "v": 1})],  # both from the snapshot (doc2 is NULL there)
    [("I", None, {"id": 2, "v": 0, "doc": "A2", "doc2": "B2"})],
    [("U", 2, {"id": 3, "v": 1}), ("U", 3, {"id": 3, "v": 2})],  # a move, then an update at the new key
    [("U", 3, {"id": 4, "v": 3, "doc2": "B4"})],  # doc left out, doc2 written
    [("U", 4, {"id": 4, "v": 4})],  # doc from the insert (through two moves), doc2 from the last write
    [("D", 4, None), ("I", None, {"id": 4, "v": 0, "doc": "C4", "doc2": None})],
    [("U", 4, {"id": 4, "v": 1})],  # the insert's values, not the deleted row's
    [("U", 9, {"id": 10, "v": 1}), ("U", 10, {"id": 11, "v": 2})],  # a chain of moves from the snapshot
    [("U", 11, {"id": 12, "v": 3})],
    [("U", 12, {"id": 13, "v": 4}), ("U", 13, {"id": 14, "v": 5})],
    [("U", 14, {"id": 14, "v": 9})],
]
# every update's (id, v) -> (doc, doc2) once filled
FILLED = {
    (1, 1): ("S1", None),
    (3, 1): ("A2", "B2"),
    (3, 2): ("A2", "B2"),
    (4, 3): ("A2", "B4"),
    (4, 4): ("A2", "B4"),
    (4, 1): ("C4", None),
    **{k: ("S9", "T9") for k in [(10, 1), (11, 2), (12, 3), (13, 4), (14, 5), (14, 9)]},
}
EXPECTED = [
    (1, 1, "S1", None),
    (4, 1, "C4", None),
    (14, 9, "S9", "T9"),
]


def _config(streams: int = 4) -> Any:
    return parse_config(
        {"run": {"streams": streams, "subscription": "toast"}, "articles": [ARTICLE]},
        "<test unchanged toast>",
    )


def _v1(txs: list[list[tuple[str, int | None, dict[str, Any] | None]]]) -> list[str]:
    out = []
    for i, tx in enumerate(txs, 1):
        changes = []
        for op, old, new in tx:
            c: dict[str, Any] = {
                "kind": {"I": "insert", "U": "update", "D": "delete"}[op],
                "schema": "public",
                "table": "docs",
            }
            if new is not None:
                c |= {"columnnames": list(new), "columnvalues": list(new.values())}
            if old is not None:
                c["oldkeys"] = {"keynames": ["id"], "keytypes": ["integer"], "keyvalues": [old]}
            changes.append(c)
        out.append(json.dumps({"xid": 700 + i, "nextlsn": f"0/{0x1000 * i:X}", "change": changes}))
    return out


def _v2(txs: list[list[tuple[str, int | None, dict[str, Any] | None]]]) -> list[str]:
    out = []
    for i, tx in enumerate(txs, 1):
        out.append(json.dumps({"action": "B", "xid": 700 + i}))
        for op, old, new in tx:
            c: dict[str, Any] = {"action": op, "xid": 700 + i, "schema": "public", "table": "docs"}
            if new is not None:
                c["columns"] = [{"name": k, "type": "text", "value": v} for k, v in new.items()]
            if old is not None:
                c["identity"] = [{"name": "id", "type": "integer", "value": old}]
            out.append(json.dumps(c))
        out.append(json.dumps({"action": "C", "xid": 700 + i, "nextlsn": f"0/{0x1000 * i:X}"}))
    return out


def _rows(cs: str) -> list[tuple[Any, ...]]:
    conn = pyodbc.connect(cs, autocommit=True)
    try:
        return [
            tuple(r) for r in conn.execute("SELECT id, v, doc, doc2 FROM public.docs ORDER BY id").fetchall()
        ]
    finally:
        conn.close()


# make test checks the filled values in convert's output (below) and applies real captures of
# both versions in the harness's small run (test_publisher_harness.py); make test-e2e these
@pytest.mark.e2e
@pytest.mark.parametrize("version", [1, 2])
def test_unchanged_values_come_from_the_rows_previous_images(
    spark: Any, pg: Any, tmp_path: Path, version: int
) -> None:
    lines = (_v1 if version == 1 else _v2)(TRANSACTIONS)
    changes = write_jsonl(tmp_path / f"capture.v{version}.jsonl", lines)
    snapshot = write_jsonl(
        tmp_path / "snapshot.jsonl", [{"article": "public.docs", "image": r} for r in SNAPSHOT]
    )
    target = pg.subscriber(f"toast_v{version}")
    result = applier.run(
        _config(),
        target,
        spark=spark,
        changes=changes,
        snapshot=snapshot,
        changes_format="wal2json" if version == 1 else "wal2json2",
    )
    (sub,) = result.subscriptions
    assert sub.verdict is applier.Verdict.CONVERGED, sub.check.reason or sub.check.to_json()
    assert result.settings["input"]["unchanged_filled"] == 12  # every update above
    assert _rows(target.connection_string) == EXPECTED


def test_convert_takes_the_snapshot_and_writes_the_values(spark: Any, tmp_path: Path) -> None:
    """``applier convert --snapshot``: the canonical changes hold every value, the folder the
    snapshot; without it, a value with no earlier image is refused naming line and column (a run
    reads the capture the same way)."""
    from applier.api import convert

    changes = write_jsonl(tmp_path / "capture.jsonl", _v2(TRANSACTIONS))
    snapshot = write_jsonl(
        tmp_path / "snapshot.jsonl", [{"article": "public.docs", "image": r} for r in SNAPSHOT]
    )
    done = convert(_config(), changes, tmp_path / "out", "wal2json2", spark=spark, snapshot=snapshot)
    written = [
        json.loads(x) for f in sorted(done.changes.glob("part-*.jsonl")) for x in f.read_text().splitlines()
    ]
    updates = [r for r in written if r["op"] == "U"]
    filled = {(r["after"]["id"], r["after"]["v"]): (r["after"]["doc"], r["after"]["doc2"]) for r in updates}
    assert filled == FILLED
    assert all("doc" not in r["changed"] for r in updates)  # left out: not changed
    held = [
        json.loads(x)["image"] for f in done.snapshot.glob("part-*.jsonl") for x in f.read_text().splitlines()
    ]
    assert sorted(held, key=lambda r: r["id"]) == SNAPSHOT

    # no snapshot: row 1's first update has nothing to take doc and doc2 from
    with pytest.raises(InputError) as e:
        convert(_config(), changes, tmp_path / "out2", "wal2json2", spark=spark)
    text = str(e.value)
    assert (
        "capture.jsonl:2: line 2 xid 701: column 'doc' is left out of the update's new row as unchanged"
        in text
    )
    assert "--create-slot --snapshot" in text and "REPLICA IDENTITY FULL" in text
    # named: row 1's update (line 2) and the first move of row 9 (line 25), each for both columns;
    # not the updates that follow an insert (row 2's moves), nor the moves after line 25
    # (the message names the first, and how many more; every one is in its details)
    assert "and 3 more bad records" in text
    named = sorted(int(m) for d in e.value.details for m in re.findall(r"capture\.jsonl:(\d+): ", d))
    assert named == [2, 2, 25, 25], e.value.details
