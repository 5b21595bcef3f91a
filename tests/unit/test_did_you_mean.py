"""The one "did you mean" of error messages (applier.errors.did_you_mean), for a misspelt
command, option, choice, target name, capture format or table."""

from __future__ import annotations

import pytest

from applier.errors import close_names, did_you_mean

NAMES = ["embedded", "babelfish", "postgres-container", "mssql"]


@pytest.mark.parametrize(
    ("word", "names", "n", "quote", "expected"),
    [
        ("embeded", NAMES, 1, True, "did you mean 'embedded'?"),  # a letter left out
        ("EMBEDED", NAMES, 1, True, "did you mean 'embedded'?"),  # case is not a misspelling
        (
            "sales.Stor",
            ["Sales.Store", "Sales.Customer"],
            1,
            False,
            "did you mean Sales.Store?",
        ),  # spelled as named
        ("bogus", NAMES, 1, True, ""),  # nothing close: no hint at all
        ("", NAMES, 1, True, ""),
        ("wal2jsn", {"wal2json": 1, "wal2json2": 2}, 1, True, "did you mean 'wal2json'?"),  # a mapping's keys
        ("dbo.rowss", ["dbo.row", "xyz.abc", "dbo.rows"], 3, False, "did you mean dbo.rows, dbo.row?"),
    ],
)
def test_did_you_mean(word: str, names, n: int, quote: bool, expected: str) -> None:  # type: ignore[no-untyped-def]
    assert did_you_mean(word, names, n=n, quote=quote) == expected


def test_close_names_are_closest_first_and_at_most_n() -> None:
    options = ["--stream", "--xyz", "--streams"]
    assert close_names("--streamss", options) == ["--streams"]
    assert close_names("--streamss", options, n=3) == ["--streams", "--stream"]
    assert close_names("--qqqqqq", options, n=3) == []
