"""Filtered subscriptions and before/after routing (seed 000_ad1fe724955950ab.txt).

Table T1, column C1 = 1; the update sets C1 from 1 to 2. A subscription to C1 = 1 receives a
delete, one to C1 = 2 an insert, one to C1 > 2 nothing; a full copy receives the update.
Every subscriber is its own database in the embedded cluster and converges to the oracle
filtered by its where clause.
"""

from __future__ import annotations

import pytest

from applier.config import parse_config
from tests.support.changes import write_jsonl
from tests.support.runs import run_subscriptions
from tests.support.subscriber import rows

pytestmark = pytest.mark.integration

T1 = "dbo.t1"


def _config(subs: list[dict], **run: object):  # type: ignore[no-untyped-def]
    return parse_config(
        {
            "run": {"streams": 2, "commit_batch_size": 10, **run},
            "articles": [
                {
                    "name": T1,
                    "columns": [
                        {"name": "id", "type": "int", "key": True},
                        {"name": "C1", "type": "int"},
                        {"name": "note", "type": "nvarchar(20)"},
                    ],
                }
            ],
            "subscriptions": subs,
        },
        "<test repserver>",
    )


UPD_C1 = """
CREATE OR REPLACE PROCEDURE "dbo"."upd_c1"(p_id integer, old_c1 integer, new_c1 integer)
LANGUAGE sql AS $$ UPDATE "dbo"."t1" SET "C1" = new_c1 WHERE id = p_id AND "C1" = old_c1 $$
"""


@pytest.mark.e2e
def test_seed_000_update_c1_from_1_to_2(spark, pg, tmp_path):
    """Row 1: a plain update of C1 from 1 to 2. Row 2: the same update made by the applied
    procedure upd_c1(2, 1, 2): delivered as the procedure where both images match (the full
    copy), as the seed's delete / insert / nothing elsewhere."""
    cfg = _config(
        [
            {"name": "c1_eq_1", "articles": [{"name": T1, "where": "C1 = 1"}]},
            {"name": "c1_eq_2", "articles": [{"name": T1, "where": "c1 = 2"}]},
            {"name": "c1_gt_2", "articles": [{"name": T1, "where": "`C1` > 2"}]},
            {"name": "full"},
        ]
    )
    snap = write_jsonl(
        tmp_path / "snap.jsonl",
        [{"article": T1, "image": {"id": i, "C1": 1, "note": "a"}} for i in (1, 2)],
    )
    changes = write_jsonl(
        tmp_path / "changes.jsonl",
        [
            {
                "lsn": 1 << 20 | 1,
                "xact_seqno": 1,
                "command_id": 1,
                "article": T1,
                "op": "U",
                "before": {"id": 1, "C1": 1, "note": "a"},
                "after": {"id": 1, "C1": 2, "note": "a"},
            },
            {
                "lsn": 2 << 20 | 1,
                "xact_seqno": 2,
                "command_id": 1,
                "article": T1,
                "op": "PROC",
                "procedure": {"procedure": "dbo.upd_c1", "params": [2, 1, 2], "rowcount": 1},
            },
            {
                "lsn": 2 << 20 | 2,
                "xact_seqno": 2,
                "command_id": 2,
                "article": T1,
                "op": "U",
                "before": {"id": 2, "C1": 1, "note": "a"},
                "after": {"id": 2, "C1": 2, "note": "a"},
            },
        ],
    )
    proc_sql = tmp_path / "upd_c1.sql"
    proc_sql.write_text(UPD_C1, encoding="utf-8")
    res, targets = run_subscriptions(
        spark, pg, cfg, "seed000", changes=changes, snapshot=snap, custom_sql=[proc_sql]
    )

    got = {s.name: s.routing for s in res.subscriptions}
    # the plain update, and (but on the full copy) the procedure's first row operation
    assert got == {"c1_eq_1": {"U>D": 2}, "c1_eq_2": {"U>I": 2}, "c1_gt_2": {}, "full": {"U>U": 1}}
    procs = {s.name: [p["sent_as"] for p in s.procedures] for s in res.subscriptions}
    assert procs == {"c1_eq_1": ["U>D"], "c1_eq_2": ["U>I"], "c1_gt_2": ["nothing"], "full": ["procedure"]}
    for s in res.subscriptions:
        assert s.verdict.value == "converged", (s.name, s.check.to_json())
    table = '"dbo"."t1"'
    assert rows(targets["c1_eq_1"], f"SELECT id FROM {table}") == []  # the delete went there
    assert rows(targets["c1_eq_2"], f'SELECT id, "C1" FROM {table} ORDER BY id') == [
        (1, 2),
        (2, 2),
    ]  # inserts
    assert rows(targets["c1_gt_2"], f"SELECT id FROM {table}") == []  # nothing
    assert rows(targets["full"], f'SELECT id, "C1", note FROM {table} ORDER BY id') == [
        (1, 2, "a"),
        (2, 2, "a"),
    ]
    assert res.exit_code == 0


@pytest.mark.smoke
def test_generated_stream_with_key_updates_converges_per_filter(spark, pg):
    """A generated stream (inserts, updates, deletes, key updates) to two filtered
    subscriptions, one with a column list: rows move in and out of each filter, keys change,
    and each subscriber converges to the oracle filtered its way."""
    cfg = parse_config(
        {
            "run": {"streams": 2, "commit_batch_size": 20},
            "workload": {
                "kind": "uniform",
                "initial_rows": 60,
                "transactions": 60,
                "commands_per_transaction": 3,
                "key_update_share": 0.1,
            },
            "articles": [
                {
                    "name": "dbo.gen",
                    "columns": [
                        {"name": "id", "type": "int", "key": True},
                        {"name": "v", "type": "nvarchar(40)"},
                        {"name": "n", "type": "int"},
                    ],
                }
            ],
            "subscriptions": [
                {
                    "name": "even_n",
                    "articles": [{"name": "dbo.gen", "where": "n % 2 = 0", "columns": ["id", "n"]}],
                },
                {"name": "low_ids", "articles": [{"name": "dbo.gen", "where": "id < 40 AND v IS NOT NULL"}]},
            ],
        },
        "<test generated>",
    )
    res, targets = run_subscriptions(spark, pg, cfg, "generated")
    for s in res.subscriptions:
        assert s.verdict.value == "converged", (s.name, s.check.to_json())
        assert s.check.rows_found > 0
    # Rows did migrate: updates became deletes and inserts somewhere.
    migrated = sum(s.routing.get("U>D", 0) + s.routing.get("U>I", 0) for s in res.subscriptions)
    assert migrated > 0, [s.routing for s in res.subscriptions]
    cols = rows(
        targets["even_n"],
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'gen' ORDER BY ordinal_position",
    )
    assert cols == [("id",), ("n",)]  # the column list
