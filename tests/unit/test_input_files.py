"""Input files are checked on the driver before Spark reads them: each error names the file
(and the line of a bad byte); nothing needs Spark."""

from __future__ import annotations

import os

import pytest

from applier.errors import InputError
from applier.sources.files import input_files


def test_good_json_lines_file(tmp_path):
    f = tmp_path / "c.jsonl"
    f.write_text('{"a": 1}\n\n', encoding="utf-8")
    found = input_files(f)
    assert found.files == (f,) and found.records and not found.parquet


@pytest.mark.parametrize("text", [b"", b"\n", b"  \n\t\n\r\n"], ids=["empty", "newline", "blank"])
def test_empty_or_blank_file_has_no_records(tmp_path, text):
    f = tmp_path / "c.jsonl"
    f.write_bytes(text)
    assert not input_files(f).records


def test_invalid_utf8_names_the_line_and_column(tmp_path):
    f = tmp_path / "c.jsonl"
    f.write_bytes(b'{"a": 1}\n{"v": "a\xffb"}\n')
    with pytest.raises(InputError, match=r"c\.jsonl:2: not UTF-8 text \(byte 0xff at column 9\)"):
        input_files(f)


def test_invalid_utf8_past_the_first_chunk(tmp_path, monkeypatch):
    from applier.sources import files

    monkeypatch.setattr(files, "_CHUNK", 7)
    f = tmp_path / "c.jsonl"
    f.write_bytes(b'{"a": 1}\n' * 5 + b'"\xc3"\n')
    with pytest.raises(InputError, match=r"c\.jsonl:6: not UTF-8"):
        input_files(f)


def test_fake_parquet_is_refused(tmp_path):
    f = tmp_path / "c.parquet"
    f.write_text("hello\n")
    with pytest.raises(InputError, match=r"c\.parquet: not a Parquet file"):
        input_files(f)


def test_missing_path(tmp_path):
    with pytest.raises(InputError, match="no such change file"):
        input_files(tmp_path / "nope.jsonl")


def test_folder_without_change_files(tmp_path):
    (tmp_path / "readme.txt").write_text("x")
    with pytest.raises(InputError, match="a folder without .jsonl or .parquet files"):
        input_files(tmp_path, "snapshot")


def test_folder_named_like_a_file_inside_a_folder(tmp_path):
    (tmp_path / "a.jsonl").mkdir()
    with pytest.raises(InputError, match="a folder without"):
        input_files(tmp_path)


def test_fifo_is_refused_without_waiting(tmp_path):
    f = tmp_path / "c.jsonl"
    os.mkfifo(f)
    with pytest.raises(InputError, match="a FIFO, expected a change file"):
        input_files(f)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode (chmod 000 stops no one)")
def test_unreadable_file(tmp_path):
    f = tmp_path / "c.jsonl"
    f.write_text("{}\n")
    f.chmod(0)
    with pytest.raises(InputError, match="cannot read the change file: Permission denied"):
        input_files(f)
