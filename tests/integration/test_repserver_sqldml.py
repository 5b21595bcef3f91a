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
from tests.support.changes import write_jsonl
from tests.support.repserver_sqldml import ART, GROUPS, image, stream
from tests.support.runs import run_subscriptions
from tests.support.subscriber import rows

pytestmark = pytest.mark.integration


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
        [{"article": ART, "image": image(i, g, i)} for g, ids in GROUPS.items() for i in ids],
    )
    changes = write_jsonl(tmp_path / "changes.jsonl", stream())
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
