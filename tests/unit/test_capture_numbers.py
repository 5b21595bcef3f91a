"""``applier capture``'s NaN warning and options without a publisher (issue 31): the warning is
one line naming the columns (at most SHOWN_COLUMNS, the rest counted and left to FILE.meta), and
none when wal2json writes numbers as strings or no published column can hold a NaN."""

from __future__ import annotations

import json
from pathlib import Path

from applier.capture.command import SHOWN_COLUMNS, Numbers
from applier.capture.meta import meta_path, warnings_of
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


def test_run_repeats_what_capture_recorded_beside_its_files(tmp_path: Path) -> None:
    """``warnings_of``: a capture's warning (FILE.meta) named with its file, once however many
    runs recorded it; a run that took numbers as strings (warning null), a line that is not
    JSON and a file without .meta say nothing; a folder is read file by file."""
    said = Numbers(False, ("public.t.n (numeric)",)).warning(shown=1)
    assert said is not None
    lost = tmp_path / "caps" / "a.jsonl"
    lost.parent.mkdir()
    lost.write_text("{}\n", encoding="utf-8")
    entry = {"slot": "s", "warning": said}
    meta_path(lost).write_text(
        json.dumps(entry) + "\nnot json\n" + json.dumps(entry) + "\n", encoding="utf-8"
    )
    fine = tmp_path / "caps" / "b.jsonl"
    fine.write_text("{}\n", encoding="utf-8")
    meta_path(fine).write_text(json.dumps({"slot": "s", "warning": None}) + "\n", encoding="utf-8")
    (tmp_path / "caps" / "c.jsonl").write_text("{}\n", encoding="utf-8")

    assert warnings_of(lost) == [f"{lost}: {said}"]
    assert warnings_of(fine) == []
    assert warnings_of(tmp_path / "caps") == [f"{lost}: {said}"]
    assert warnings_of(tmp_path / "missing") == [] and warnings_of(None) == []


def test_applier_run_prints_the_capture_s_warning_before_it_starts(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from applier.cli import main

    said = Numbers(False, ("public.t.n (numeric)",)).warning(shown=1)
    cap = tmp_path / "cap.jsonl"
    cap.write_text("{}\n", encoding="utf-8")
    meta_path(cap).write_text(json.dumps({"warning": said}) + "\n", encoding="utf-8")
    # a target that cannot be reached: the run stops there, after the warning, applying nothing
    code = main(
        ["run", "--format", "wal2json", "--changes", str(cap), "--target", "Driver={nope};Pwd=secret"]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert f"warning: {cap}: {said}" in err
    assert "secret" not in err
