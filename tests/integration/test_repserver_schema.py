"""Schema changes mid-stream (seed 001_97ed57accf070cd8.txt) at N = 4.

Old rows, add column, new rows (with values for the new column), drop column, more rows,
a type change (int -> decimal: the subscriber converts the stored values, and so does the
oracle), more rows. Each change is a barrier: drain, alter, regenerate procedures, resume.
"""

from __future__ import annotations

import pytest

from applier.config import parse_config
from tests.support.changes import write_jsonl
from tests.support.repserver_schema import ART, stream
from tests.support.runs import run_subscriptions
from tests.support.subscriber import rows

pytestmark = pytest.mark.integration


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
    changes = write_jsonl(tmp_path / "changes.jsonl", stream())
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
