"""The calls a stream task sends (rows as laid out: the key read from ``key_before``) equal
the calls planned from the images alone (``Planner.plan``: the key read from the before
image), for every syntax. One planner (applier/plan/calls.py) serves both; these cases pin
that the shortcut through the key text changes no bound value.
"""

from __future__ import annotations

import pytest

from applier.apply.sender import Sender
from applier.dialects import DIALECTS
from applier.plan.calls import Planner
from tests.support.call_syntaxes import SYNTAXES, generated_changes, syntax_articles


@pytest.mark.parametrize(("update", "delete"), SYNTAXES)
@pytest.mark.parametrize("kind", ["uniform", "updates"])
@pytest.mark.parametrize("dialect", ["postgres", "tsql"])
def test_compiled_calls_equal_planner(update, delete, kind, dialect):
    articles = syntax_articles(update, delete)
    d = DIALECTS[dialect]()
    planner = Planner(d, articles)
    rows = generated_changes(articles, kind)
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
    articles = syntax_articles("SCALL", "CALL")
    d = DIALECTS["postgres"]()
    planner = Planner(d, articles)
    rows = [r for r in generated_changes(articles, "uniform") if r["op"] in ("U", "D")][:50]
    bare = [{**r, "key_before": None} for r in rows]  # e.g. a reader that left it out
    got = [c for _, c in Sender(None, d, planner, 0).calls(bare)]
    assert got == [c for _, c in Sender(None, d, planner, 0).calls(rows)]
    assert len(got) == len(rows)
