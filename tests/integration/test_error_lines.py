"""An invalid change file costs two console lines (its first bad record, and how many more),
and ``--errors all`` prints every bad record, one a line: through ``applier run`` against the
session's PostgreSQL (nothing applied either way), the file read on the driver and distributed."""

from __future__ import annotations

import pytest

from tests.support.badinput import Case, Runner, insert, jsonl, toml_config

pytestmark = pytest.mark.integration

BAD = {  # line -> what makes it bad (4 kinds, each naming its column or field)
    20: {"v": "x" * 11},  # nvarchar(10)
    50: {"s": 40000},  # smallint
    51: {"d": "1e400"},  # decimal(6,2)
    90: {"n": "seven"},  # int
}


def _case(extra: list[str]):  # type: ignore[no-untyped-def]
    def make(table: str) -> Case:
        recs = [
            insert(table, i, **({"after": {**insert(table, i)["after"], **BAD[i]}} if i in BAD else {}))
            for i in range(1, 101)
        ]
        files = {"c.toml": toml_config(table).encode(), "ch.jsonl": jsonl(recs)}
        return Case(
            "several bad lines",
            files,
            ["--config", "{dir}/c.toml", "--changes", "{dir}/ch.jsonl", *extra],
            ["ch.jsonl:20"],
        )

    return make


def _errors(message: str) -> list[str]:
    """The error's lines (the console's other lines: Spark's and applier's warnings, left out)."""
    lines = message.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("error: "))
    return lines[start:]


@pytest.mark.parametrize("small", [True, False], ids=["driver", "distributed"])
def test_several_bad_lines_take_two_lines_and_errors_all_prints_each(
    target, spark, capsys, tmp_path, monkeypatch, small
) -> None:
    from applier.sources import files

    if not small:
        monkeypatch.setattr(files, "SMALL", 0)
    runner = Runner(target, capsys, tmp_path)
    short = _errors(runner.refused(_case([])))
    assert len(short) == 2, short
    assert (
        short[0].startswith("error: invalid change file, nothing applied: ") and "ch.jsonl:20: " in short[0]
    )
    assert "column 'v'" in short[0]
    assert short[1] == "  and 3 more bad records (--errors all prints every one)"
    every = _errors(runner.refused(_case(["--errors", "all"])))
    assert len(every) == len(BAD), every
    for line, (at, bad) in zip(every, sorted(BAD.items()), strict=True):
        (column,) = bad
        assert f"ch.jsonl:{at}: " in line and f"column '{column}'" in line, (line, at)
