"""Schema changes mid-stream (seed 001_97ed57accf070cd8.txt) at N = 4.

Old rows, add column, new rows (with values for the new column), drop column, more rows,
a type change (int -> decimal: the subscriber converts the stored values, and so does the
oracle), more rows. Each change is a barrier: drain, alter, regenerate procedures, resume.
"""

from __future__ import annotations

import pytest

from applier.config import parse_config
from tests.integration.helpers import rows, run_subscriptions, write_jsonl

pytestmark = pytest.mark.integration

ART = "dbo.sc"


def _stream() -> list[dict]:
    out: list[dict] = []
    xact = 0

    def add(op: str, version: int, before: dict | None = None, after: dict | None = None, **extra) -> None:
        nonlocal xact
        xact += 1
        rec = {"lsn": xact << 20 | 1, "xact_seqno": xact, "command_id": 1, "article": ART, "op": op}
        rec["schema_version"] = version
        if before is not None:
            rec["before"] = before
        if after is not None:
            rec["after"] = after
        rec.update(extra)
        out.append(rec)

    # version 1: id, qty, note, old
    for i in range(5, 9):
        add("I", 1, after={"id": i, "qty": i, "note": f"n{i}", "old": "o"})
    add(
        "U",
        1,
        before={"id": 1, "qty": 1, "note": "n1", "old": "o"},
        after={"id": 1, "qty": 10, "note": "n1", "old": "o"},
    )
    add("DDL", 2, ddl={"action": "add_column", "column": {"name": "extra", "type": "nvarchar(20)"}})
    # version 2: + extra
    for i in range(9, 13):
        add("I", 2, after={"id": i, "qty": i, "note": f"n{i}", "old": "o", "extra": f"x{i}"})
    add(
        "U",
        2,
        before={"id": 2, "qty": 2, "note": "n2", "old": "o", "extra": None},
        after={"id": 2, "qty": 2, "note": "n2", "old": "o", "extra": "x2"},
    )
    add("D", 2, before={"id": 3, "qty": 3, "note": "n3", "old": "o", "extra": None})
    add("DDL", 3, ddl={"action": "drop_column", "column": "old"})
    # version 3: id, qty, note, extra
    for i in range(13, 16):
        add("I", 3, after={"id": i, "qty": i, "note": f"n{i}", "extra": f"x{i}"})
    add(
        "U",
        3,
        before={"id": 9, "qty": 9, "note": "n9", "extra": "x9"},
        after={"id": 9, "qty": 99, "note": "n9", "extra": "x9b"},
    )
    add("DDL", 4, ddl={"action": "alter_column_type", "column": "qty", "type": "decimal(12,2)"})
    # version 4: qty is decimal(12,2)
    add("I", 4, after={"id": 16, "qty": "16.50", "note": "n16", "extra": "x16"})
    add(
        "U",
        4,
        before={"id": 13, "qty": "13.00", "note": "n13", "extra": "x13"},
        after={"id": 13, "qty": "13.25", "note": "n13", "extra": "x13"},
    )
    return out


def test_add_drop_retype_mid_stream_converges_at_n4(spark, pg, tmp_path):
    cfg = parse_config(
        {
            "run": {"streams": 4, "commit_batch_size": 2},
            "articles": [
                {
                    "name": ART,
                    "columns": [
                        {"name": "id", "type": "int", "key": True},
                        {"name": "qty", "type": "int"},
                        {"name": "note", "type": "nvarchar(10)"},
                        {"name": "old", "type": "nvarchar(10)"},
                    ],
                }
            ],
            "subscriptions": [{"name": "copy"}],
        },
        "<test schema>",
    )
    snap = write_jsonl(
        tmp_path / "snap.jsonl",
        [{"article": ART, "image": {"id": i, "qty": i, "note": f"n{i}", "old": "o"}} for i in range(1, 5)],
    )
    changes = write_jsonl(tmp_path / "changes.jsonl", _stream())
    res, targets = run_subscriptions(spark, pg, cfg, "schema_changes", changes=changes, snapshot=snap)
    target = targets["copy"]
    sub = res.subscription("copy")

    assert sub.verdict.value == "converged", sub.check.to_json()
    assert [c["version"] for c in sub.schema_changes] == [2, 3, 4]
    assert sub.summary.segments == 4  # the stream was cut at each change
    cols = rows(
        target,
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = 'dbo' AND table_name = 'sc' ORDER BY ordinal_position",
    )
    assert cols == [
        ("id", "integer"),
        ("qty", "numeric"),
        ("note", "character varying"),
        ("extra", "character varying"),
    ]
    # No value of the added column is lost.
    extra = rows(target, 'SELECT id, extra FROM "dbo"."sc" WHERE extra IS NOT NULL ORDER BY id')
    assert extra == [(2, "x2"), (9, "x9b")] + [(i, f"x{i}") for i in (10, 11, 12, 13, 14, 15, 16)]
    qty = dict(rows(target, 'SELECT id, qty FROM "dbo"."sc" WHERE id IN (1, 13, 16)'))
    assert {k: str(v) for k, v in qty.items()} == {1: "10.00", 13: "13.25", 16: "16.50"}
