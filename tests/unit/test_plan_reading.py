"""The value columns pyarrow reads from laid-out rows (:mod:`applier.plan.reading`): the
edges a Spark batch rarely shows (the calls they make: tests/integration/test_share_calls.py)."""

from __future__ import annotations

import pyarrow as pa

from applier.config import parse_config
from applier.plan.columns import UNREAD, column_types
from applier.plan.reading import with_value_columns

ARTICLES = parse_config(
    {
        "articles": [
            {
                "name": "dbo.a",
                "columns": [
                    {"name": "id", "type": "int", "key": True},
                    {"name": "s", "type": "nvarchar(10)"},
                    {"name": "on", "type": "bit"},
                ],
            },
            {"name": "dbo.b", "columns": [{"name": "code", "type": "nvarchar(4)", "key": True}]},
        ]
    },
    "<t>",
).articles


def _batch(rows: list[tuple[str, str | None, str | None]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {
            "article": pa.array([r[0] for r in rows], pa.string()),
            "after": pa.array([r[1] for r in rows], pa.string()),
            "key_before": pa.array([r[2] for r in rows], pa.string()),
        }
    )


def test_rows_of_articles_interleaved_get_their_own_values_in_place():
    got = with_value_columns(
        _batch(
            [
                ("dbo.b", '{"code":"x"}', '["y"]'),
                ("dbo.a", '{"id":1,"on":true,"s":"one"}', None),
                ("dbo.other", '{"id":9}', "[9]"),  # an article not given: NULL, planned as it is
                ("dbo.b", None, '["z"]'),
                ("dbo.a", '{"id":2,"on":false,"s":null}', "[2]"),
            ]
        ),
        ARTICLES,
    )
    assert got.schema.names[3:] == [*column_types(ARTICLES), UNREAD]
    assert [got.column(n).to_pylist() for n in ("_vi0", "_vb0", "_vs0", "_ki0", "_ks0", UNREAD)] == [
        [None, 1, None, None, 2],
        [None, True, None, None, False],
        ["x", "one", None, None, None],
        [None, None, None, None, 2],
        ["y", None, None, "z", None],
        [False] * 5,
    ]


def test_text_that_is_no_utf_8_is_left_to_the_per_row_planner():
    got = with_value_columns(
        _batch([("dbo.a", '{"id":1,"s":"\\ud800"}', None), ("dbo.a", '{"id":2,"s":"ok"}', None)]), ARTICLES
    )
    assert got.column(UNREAD).to_pylist() == [True, False]
    assert got.column("_vs0").to_pylist() == [None, "ok"]
    assert got.column("_vi0").to_pylist() == [None, 2]


def test_an_image_that_is_no_object_is_left_to_the_per_row_planner():
    got = with_value_columns(_batch([("dbo.a", "[1]", None), ("dbo.a", '{"id":2}', None)]), ARTICLES)
    assert got.column(UNREAD).to_pylist() == [True, False]


def test_an_empty_batch_and_one_read_already():
    empty = with_value_columns(_batch([]), ARTICLES)
    assert empty.num_rows == 0 and empty.schema.names[-1] == UNREAD
    once = with_value_columns(_batch([("dbo.b", None, '["q"]')]), ARTICLES)
    assert with_value_columns(once, ARTICLES) is once


def test_a_key_of_one_integer_is_cast_from_its_text_unless_it_is_no_int64():
    keys = ["[-5]", None, "[0]", "[9223372036854775807]"]
    got = with_value_columns(_batch([("dbo.a", None, k) for k in keys]), ARTICLES)
    assert got.column("_ki0").to_pylist() == [-5, None, 0, 9223372036854775807]
    assert got.column(UNREAD).to_pylist() == [False] * 4
    for odd in ("[9223372036854775808]", "[01]", '["7"]', "[7.0]", "[true]"):  # the per-row planner's
        got = with_value_columns(_batch([("dbo.a", None, odd), ("dbo.a", None, "[3]")]), ARTICLES)
        assert got.column(UNREAD).to_pylist() == [True, False], odd
        assert got.column("_ki0").to_pylist() == [None, 3], odd
