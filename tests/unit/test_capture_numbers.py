"""``applier capture``'s NaN warning and options without a publisher (issue 31): the warning is
one line naming the columns (at most SHOWN_COLUMNS, the rest counted and left to FILE.meta), and
none when wal2json writes numbers as strings or no published column can hold a NaN."""

from __future__ import annotations

from pathlib import Path

from applier.capture.command import SHOWN_COLUMNS, Numbers, meta_path
from applier.capture.slot import wal2json_options
from applier.sources.files import JSON_SUFFIXES
from applier.sources.formats.wal2json import Wal2json

COLUMNS = tuple(f"public.t.c{i} (double precision)" for i in range(SHOWN_COLUMNS + 2))


def test_the_warning_names_the_columns_and_counts_the_rest() -> None:
    text = Numbers(False, COLUMNS).warning(meta="cap.jsonl.meta")
    assert text is not None and "\n" not in text
    named = ", ".join(COLUMNS[:SHOWN_COLUMNS])
    assert f"in {named} and 2 more (every one in cap.jsonl.meta) arrives as NULL" in text
    assert COLUMNS[-1] not in text
    assert "numeric-data-types-as-string" in text and "wal2json 2.6 or later" in text
    every = Numbers(False, COLUMNS).warning(shown=len(COLUMNS))
    assert every is not None and COLUMNS[-1] in every and "more" not in every


def test_no_warning_when_numbers_come_as_strings_or_nothing_can_be_lost() -> None:
    assert Numbers(True).warning() is None
    assert Numbers(False, ()).warning() is None


def test_the_option_is_asked_for_only_when_taken() -> None:
    plain = wal2json_options(2, ["public.t"])
    assert "numeric-data-types-as-string" not in plain
    assert wal2json_options(2, ["public.t"], numbers_as_strings=True) == (
        *plain,
        "numeric-data-types-as-string",
        "1",
    )


def test_the_record_sits_beside_the_capture_under_a_suffix_no_reader_takes() -> None:
    """A folder of captures (``--changes DIR``) is read without the records beside them."""
    meta = meta_path(Path("/x/cap.jsonl"))
    assert meta == Path("/x/cap.jsonl.meta")
    assert meta.suffix not in (*Wal2json.suffixes, *JSON_SUFFIXES)
