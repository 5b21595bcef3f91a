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


def _sha256_of_folder(root, names):  # type: ignore[no-untyped-def]
    """The run identity's digest of a folder, as written down: each file's relative name, NUL,
    its bytes, NUL, in name order."""
    import hashlib

    h = hashlib.sha256()
    for name in names:
        h.update(name.encode() + b"\0" + (root / name).read_bytes() + b"\0")
    return h.hexdigest()


def test_the_scan_digests_the_folder_as_the_run_identity_does(tmp_path):
    """One reading checks and digests: the digest covers the files beside the inputs too (Spark's
    _SUCCESS, .crc files), so a run's identity is what it was when it read them apart."""
    from applier.sources.files import file_digest

    (tmp_path / "sub").mkdir()
    files = {
        "_SUCCESS": b"",
        ".part-0.jsonl.crc": b"crc",
        "part-0.jsonl": b'{"a": 1}\n',
        "sub/part-1.jsonl": b'{"a": 2}\n',
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    found = input_files(tmp_path)
    assert found.files == (tmp_path / "part-0.jsonl", tmp_path / "sub" / "part-1.jsonl")
    expected = _sha256_of_folder(tmp_path, sorted(files, key=lambda n: tmp_path / n))
    assert found.digest == file_digest(tmp_path) == expected
    one = tmp_path / "part-0.jsonl"
    assert input_files(one).digest == file_digest(one) != expected


def test_what_is_not_a_regular_file_beside_the_inputs_is_left_out_of_the_digest_unopened(tmp_path):
    from applier.sources.files import file_digest

    (tmp_path / "part-0.jsonl").write_text('{"a": 1}\n')
    (tmp_path / "_SUCCESS").mkdir()  # a folder
    os.mkfifo(tmp_path / "_pipe")  # a FIFO: opening it would wait forever
    assert input_files(tmp_path).digest == file_digest(tmp_path) == file_digest(tmp_path / "part-0.jsonl")


def test_the_scan_keeps_the_lines_that_mention_ddl_with_their_place(tmp_path, monkeypatch):
    from applier.sources import files

    monkeypatch.setattr(files, "_CHUNK", 16)  # lines cut across chunks
    f = tmp_path / "c.jsonl"
    ddl = '{"op":"DDL","lsn":3}'
    f.write_text(f'{{"op":"I","lsn":1}}\n\n{ddl}\r\n{{"v":"DDL"}}\n', encoding="utf-8")
    found = input_files(f)
    assert found.ddl_lines == ((f"{f}:3", ddl), (f"{f}:4", '{"v":"DDL"}'))
    assert found.events == (f,) and found.subpositions is False
    f.write_text(f"\ufeff{ddl}\n", encoding="utf-8")  # Spark's textFile drops a leading BOM
    assert input_files(f).ddl_lines == ((f"{f}:1", ddl),)


def test_a_lone_carriage_return_leaves_the_lines_to_spark(tmp_path):
    """Spark's textFile ends a line at a lone \\r too: the driver's line numbers would differ."""
    f = tmp_path / "c.jsonl"
    f.write_bytes(b'{"op":"I"}\r{"op":"DDL","seq":1}\n')
    found = input_files(f)
    assert found.ddl_lines is None and found.events == (f,)
    assert found.subpositions is None


@pytest.mark.parametrize(
    "lines,seq",
    [
        (['{"lsn": 1}'], False),  # no line mentions it
        (['{"lsn": 1, "after": {"seq": 5}}'], False),  # a column named seq, not a sub-position
        (['{"lsn": 1, "seq": null}'], False),  # null: no sub-position
        (['{"lsn": 1, "seq": [', '{"lsn": 1, "after": {"seq": 5}}'], False),  # not JSON: validation's
        (['{"lsn": 1, "after": {"seq": 5}}', '{"lsn": 1, "seq": 0}'], True),
    ],
)
def test_the_scan_finds_sub_positions(tmp_path, lines, seq):
    f = tmp_path / "c.jsonl"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert input_files(f).subpositions is seq


def test_too_many_lines_mentioning_seq_leave_it_to_spark(tmp_path, monkeypatch):
    from applier.sources import files

    monkeypatch.setattr(files, "SEQ_PARSED", 2)
    monkeypatch.setattr(files, "DDL_KEPT", 2)
    f = tmp_path / "c.jsonl"
    f.write_text('{"after": {"seq": "DDL"}}\n' * 3, encoding="utf-8")
    found = input_files(f)
    assert found.subpositions is None and found.ddl_lines is None and found.events == (f,)
