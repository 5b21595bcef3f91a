"""The calls a stream task sends (rows as laid out: the key read from ``key_before``) equal
the calls planned from the images alone (``Planner.plan``: the key read from the before
image), for every syntax. One planner (applier/plan/calls.py) serves both; these cases pin
that the shortcut through the key text changes no bound value.
"""

from __future__ import annotations

import pytest

from applier.apply.sender import Sender
from applier.config import Workload, demo_articles, parse_config
from applier.dialects import DIALECTS
from applier.plan.calls import Planner
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


def _articles(update: str, delete: str):  # type: ignore[no-untyped-def]
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


def _rows(articles, kind: str):  # type: ignore[no-untyped-def]
    w = Workload(kind=kind, initial_rows=60, transactions=150, key_update_share=0.2, seed=5)
    out = []
    for lane in range(LANES):
        for k, r in generate_lane(articles, w, lane):
            if k == "change":
                out.append(dict(zip(CHANGE_FIELDS, r, strict=True)))
    return out


@pytest.mark.parametrize(("update", "delete"), SYNTAXES)
@pytest.mark.parametrize("kind", ["uniform", "updates"])
@pytest.mark.parametrize("dialect", ["postgres", "tsql"])
def test_compiled_calls_equal_planner(update, delete, kind, dialect):
    articles = _articles(update, delete)
    d = DIALECTS[dialect]()
    planner = Planner(d, articles)
    rows = _rows(articles, kind)
    expected = [
        (r["lsn"], c)
        for r in rows
        if (c := planner.plan(r["article"], r["op"], r["before"], r["after"], r["changed"])) is not None
    ]
    got = [(r["lsn"], c) for r, c in Sender(None, d, planner, 0).calls(rows)]
    assert got == expected
    if update != "NONE":
        assert {op for op in (r["op"] for r in rows)} >= {"U"}
        assert got, "the case plans some calls"


def test_rows_without_key_text_fall_back_to_the_before_image():
    articles = _articles("SCALL", "CALL")
    d = DIALECTS["postgres"]()
    planner = Planner(d, articles)
    rows = [r for r in _rows(articles, "uniform") if r["op"] in ("U", "D")][:50]
    bare = [{**r, "key_before": None} for r in rows]  # e.g. a reader that left it out
    got = [c for _, c in Sender(None, d, planner, 0).calls(bare)]
    assert got == [c for _, c in Sender(None, d, planner, 0).calls(rows)]
    assert len(got) == len(rows)
