"""Every update and delete syntax a user can configure that plans calls, and the generated
changes of the demo articles under each: the cases shared by the compiled-calls test
(tests/unit/test_bench_sender.py) and the shared-calls one (tests/integration/test_share_calls.py).
"""

from __future__ import annotations

from applier.config import Workload, demo_articles, parse_config
from applier.records.schema import CHANGE_FIELDS
from applier.sources.generator import LANES, generate_lane

# (update syntax, delete syntax): every combination a user can configure that plans calls.
SYNTAXES = [
    ("SCALL", "CALL"),  # SQL Server's default
    ("CALL", "CALL"),
    ("MCALL", "XCALL"),  # bitmap with all values; delete passes the whole before image
    ("XCALL", "XCALL"),  # before and after images, LOB before values NULL
    ("NONE", "NONE"),  # not replicated: no call at all
    ("SQL", "SQL"),  # SQL statements: the planner's own path
]


def syntax_articles(update: str, delete: str):  # type: ignore[no-untyped-def]
    """The demo articles (applier.config.demo_articles) with these update and delete syntaxes."""
    from applier.config import article_to_dict

    arts = []
    for a in demo_articles():
        d = article_to_dict(a)
        arts.append(
            {
                "name": a.name,
                "columns": [
                    {"name": c["name"], "type": c["type"], "key": c["key"], "nullable": c["nullable"]}
                    for c in d["columns"]
                ],
                "update": update,
                "delete": delete,
            }
        )
    return parse_config({"articles": arts}, "<test>").articles


def generated_changes(articles, kind: str):  # type: ignore[no-untyped-def]
    """The change rows (CHANGE_FIELDS by name) of a seeded ``kind`` workload over ``articles``:
    60 initial rows, 150 transactions, a fifth of the updates key changes."""
    w = Workload(kind=kind, initial_rows=60, transactions=150, key_update_share=0.2, seed=5)
    out = []
    for lane in range(LANES):
        for k, r in generate_lane(articles, w, lane):
            if k == "change":
                out.append(dict(zip(CHANGE_FIELDS, r, strict=True)))
    return out
