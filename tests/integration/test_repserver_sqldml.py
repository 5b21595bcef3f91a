"""SQL statement replication (seed 004_ed0e90fd88e67f92.txt, rs_sqldml), threshold 50.

One stream, two subscribers: a full copy and a filtered one (id < 440).
- group a: UPDATE of 49 rows (threshold - 1): rows everywhere.
- group b: UPDATE of 50 rows (threshold), C1: the statement everywhere (all its rows are in
  the filter).
- group c: DELETE of 51 rows (threshold + 1), C1: the statement everywhere.
- group d: UPDATE of 50 rows, C2: the statement on the full copy, rows on the filtered one.
- group e: UPDATE of 50 rows, C1, but the subscribers hold a 51st row of group e: on the full
  copy the statement touches 51 rows, is rolled back and its rows are applied; the filtered
  subscription holds only 39 of its rows, so the rows go there.
- group f: INSERT ... SELECT of 50 rows (copies of group b), C1: the statement on the full
  copy; none of its rows is in the filter, so nothing reaches the filtered subscription.
"""

from __future__ import annotations

import pytest

from applier.config import parse_config
from tests.integration.helpers import rows, run_subscriptions, write_jsonl

pytestmark = pytest.mark.integration

ART = "dbo.st"
GROUPS = {
    "a": range(1, 50),
    "b": range(101, 151),
    "c": range(201, 252),
    "d": range(301, 351),
    "e": range(401, 452),
}


def _img(i: int, grp: str, n: int) -> dict:
    return {"id": i, "grp": grp, "n": n}


def _stream() -> list[dict]:
    out: list[dict] = []

    def stmt(xact: int, payload: dict, rows_: list[dict]) -> None:
        out.append(
            {
                "lsn": xact << 20 | 1,
                "xact_seqno": xact,
                "command_id": 1,
                "article": ART,
                "op": "SQL",
                "sqldml": payload,
            }
        )
        for j, r in enumerate(rows_, 2):
            out.append({"lsn": xact << 20 | j, "xact_seqno": xact, "command_id": j, "article": ART, **r})

    def upd(grp: str, ids) -> list[dict]:  # type: ignore[no-untyped-def]
        return [{"op": "U", "before": _img(i, grp, i), "after": _img(i, grp, i + 1)} for i in ids]

    plus_one = {"operator": "U", "set": "n = n + 1"}
    stmt(1, {**plus_one, "category": "C1", "where": "grp = 'a'", "rowcount": 49}, upd("a", GROUPS["a"]))
    stmt(2, {**plus_one, "category": "C1", "where": "grp = 'b'", "rowcount": 50}, upd("b", GROUPS["b"]))
    stmt(
        3,
        {"operator": "D", "category": "C1", "where": "grp = 'c'", "rowcount": 51},
        [{"op": "D", "before": _img(i, "c", i)} for i in GROUPS["c"]],
    )
    stmt(4, {**plus_one, "category": "C2", "where": "grp = 'd'", "rowcount": 50}, upd("d", GROUPS["d"]))
    # The publisher updated 50 rows of group e; the subscribers also hold id 451 in group e.
    stmt(5, {**plus_one, "category": "C1", "where": "grp = 'e'", "rowcount": 50}, upd("e", range(401, 451)))
    stmt(
        6,
        {
            "operator": "I",
            "category": "C1",
            "insert_column": "id, grp, n",
            "select": "id + 1000, 'f', n",
            "from": "dbo.st",
            "where": "grp = 'b'",
            "rowcount": 50,
        },
        [{"op": "I", "after": _img(i + 1000, "f", i + 1)} for i in GROUPS["b"]],
    )
    return out


def test_statements_at_threshold_c2_and_fallback(spark, pg, tmp_path):
    cfg = parse_config(
        {
            "run": {"streams": 2, "commit_batch_size": 4},
            "articles": [
                {
                    "name": ART,
                    "columns": [
                        {"name": "id", "type": "int", "key": True},
                        {"name": "grp", "type": "nvarchar(4)"},
                        {"name": "n", "type": "int"},
                    ],
                }
            ],
            "subscriptions": [
                {"name": "full"},
                {"name": "part", "articles": [{"name": ART, "where": "id < 440"}]},
            ],
        },
        "<test sqldml>",
    )
    snap = write_jsonl(
        tmp_path / "snap.jsonl",
        [{"article": ART, "image": _img(i, g, i)} for g, ids in GROUPS.items() for i in ids],
    )
    changes = write_jsonl(tmp_path / "changes.jsonl", _stream())
    res, targets = run_subscriptions(spark, pg, cfg, "sqldml", changes=changes, snapshot=snap)

    def sent(name: str) -> list[tuple[str, str, bool]]:
        s = res.subscription(name)
        return [(st["operator"] + st["category"], st["sent_as"], st["fallback"]) for st in s.statements]

    assert sent("full") == [
        ("UC1", "rows", False),  # 49 rows: threshold - 1
        ("UC1", "statement", False),  # 50: threshold
        ("DC1", "statement", False),  # 51: threshold + 1
        ("UC2", "statement", False),  # C2 on a full copy
        ("UC1", "rows", True),  # 51 rows at the subscriber, rs_rowcount 50: rolled back, rows applied
        ("IC1", "statement", False),
    ]
    assert sent("part") == [
        ("UC1", "rows", False),
        ("UC1", "statement", False),
        ("DC1", "statement", False),
        ("UC2", "rows", False),  # C2 never on a filtered subscription
        ("UC1", "rows", False),  # only 39 of its rows are in the filter
        ("IC1", "rows", False),  # none of its rows is in the filter
    ]
    fallback = res.subscription("full").statements[4]
    assert fallback["subscriber_rowcount"] == 51 and "differs from rs_rowcount 50" in fallback["reason"]
    for s in res.subscriptions:
        assert s.verdict.value == "converged", (s.name, s.check.to_json())
    outcomes = res.subscription("full").summary.outcomes
    assert outcomes["statement"] == 50 + 51 + 50 + 50  # rows carried by statements b, c, d, f
    full, part = targets["full"], targets["part"]
    assert rows(full, 'SELECT n FROM "dbo"."st" WHERE id = 451') == [(451,)]  # the fallback left it alone
    assert rows(full, 'SELECT count(*) FROM "dbo"."st" WHERE grp = \'f\'') == [(50,)]
    assert rows(part, 'SELECT count(*) FROM "dbo"."st" WHERE grp = \'f\' OR id >= 440') == [(0,)]
