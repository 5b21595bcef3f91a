"""The row bound of :func:`applier.plan.columns.row_bytes_bound`: what decides whether Arrow
batches to the stream tasks may be cut by their row count alone."""

from __future__ import annotations

from applier.bench.stream import BENCH_ARTICLE
from applier.config.files import parse_article_dicts
from applier.plan.columns import row_bytes_bound


def _arts(*cols: tuple[str, str]):  # type: ignore[no-untyped-def]
    return parse_article_dicts(
        [
            {
                "name": "dbo.t",
                "columns": [{"name": "id", "type": "int", "key": True}]
                + [{"name": n, "type": t} for n, t in cols],
            }
        ],
        "<test>",
    )


def test_bounded_columns_give_a_bound_that_grows_with_their_length():
    small = row_bytes_bound(_arts(("note", "nvarchar(40)")))
    large = row_bytes_bound(_arts(("note", "nvarchar(4000)")))
    assert small is not None and large is not None
    assert small < 5_000 < 48_000 < large  # 2 images of 4,000 characters, each up to 6 bytes
    assert row_bytes_bound(parse_article_dicts([BENCH_ARTICLE], "<bench>")) == row_bytes_bound(
        _arts(("qty", "int"), ("amount", "decimal(12,2)"), ("note", "nvarchar(40)"))
    )


def test_a_lob_column_has_no_bound():
    for t in ("nvarchar(max)", "varbinary(max)", "text", "xml"):
        assert row_bytes_bound(_arts(("doc", t))) is None, t


def test_the_widest_article_sets_the_bound():
    a = {"name": "dbo.a", "columns": [{"name": "id", "type": "int", "key": True}]}
    b = {
        "name": "dbo.b",
        "columns": [{"name": "id", "type": "int", "key": True}, {"name": "b", "type": "varbinary(3000)"}],
    }
    assert row_bytes_bound(parse_article_dicts([a, b], "<t>")) == row_bytes_bound(
        parse_article_dicts([b], "<t>")
    )
    assert row_bytes_bound(parse_article_dicts([a], "<t>")) < row_bytes_bound(parse_article_dicts([b], "<t>"))  # type: ignore[operator]
