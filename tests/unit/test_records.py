"""Validated records are typed (issue 33: "a dataclass or a Row with named fields, never a
positional tuple"): a change row and a snapshot row carry their fields by name, the change
fields are one list (``CHANGE_FIELDS`` is the record's), and the checks across rows read
positions by name."""

from __future__ import annotations

import json

import pytest

from applier.articles import Article, Column, parse_type
from applier.errors import InputError
from applier.records.schema import ARROW_CHANGE, CHANGE_FIELDS, ChangeRow, SnapshotRow, Validated
from applier.sources.canonical import validate_record, validate_snapshot_row
from applier.sources.positions import Position, position_faults
from applier.sources.reading import placed_row

ART = Article("dbo", "t", (Column("id", parse_type("int")), Column("n", parse_type("int"))), ("id",))
ARTICLES = {ART.name: ART}


def test_a_validated_change_row_has_named_fields() -> None:
    rec = {
        "lsn": 7,
        "xact_seqno": 2,
        "command_id": 3,
        "article": "dbo.t",
        "op": "U",
        "before": {"id": 1, "n": 1},
        "after": {"id": 1, "n": 5},
    }
    row = validate_record(rec, ARTICLES, "c.jsonl:1")
    assert isinstance(row, ChangeRow)
    assert row._fields == CHANGE_FIELDS == tuple(f.name for f in ARROW_CHANGE)
    assert (row.lsn, row.xact_seqno, row.command_id, row.op, row.schema_version) == (7, 2, 3, "U", 1)
    assert row.changed == ["n"]  # derived: the columns whose values differ
    assert json.loads(row.after) == {"id": 1, "n": 5} and json.loads(row.key_before) == [1]


def test_a_snapshot_row_has_named_fields() -> None:
    row = validate_snapshot_row({"article": "dbo.t", "image": {"id": 4, "n": None}}, ARTICLES, "s:1")
    assert isinstance(row, SnapshotRow)
    assert (row.article, json.loads(row.key), json.loads(row.image)) == ("dbo.t", [4], {"id": 4, "n": None})


def test_a_validated_record_is_placed_or_refused() -> None:
    row = validate_snapshot_row({"article": "dbo.t", "image": {"id": 4}}, ARTICLES, "s:1")
    good = Validated(None, "s:1", row)
    assert good.good is row
    assert placed_row(good) == ("s:1", "dbo.t", row.key, row.image)  # _place, then SNAPSHOT_SCHEMA
    bad = Validated.refused("s:2: unknown article")
    assert (bad.error, bad.row) == ("s:2: unknown article", None)
    with pytest.raises(AssertionError, match="s:2: unknown article"):
        bad.good  # noqa: B018 - the property's check is what is tested


def test_positions_are_checked_by_name() -> None:
    ok = [Position(1, 1, 1, "f:1"), Position(2, 1, 2, "f:2"), Position(3, 2, 1, "f:3")]
    position_faults(ok, "f")
    late = [Position(1, 1, 1, "f:1"), Position(2, 2, 1, "f:2"), Position(3, 1, 2, "f:3")]
    with pytest.raises(InputError, match=r"^f:3: lsn 3 \(xact_seqno 1, command_id 2\) comes after lsn 2"):
        position_faults(late, "f")
    twice = [Position(1, 1, 1, "f:1"), Position(1, 1, 2, "f:2"), Position(1, 1, 3, "f:4")]
    with pytest.raises(InputError, match=r"^f: lsn=1 appears 3 times \(f:1, f:2\)"):
        position_faults(twice, "f")


def test_every_format_is_a_reader_of_one_interface() -> None:
    import inspect
    from functools import partial

    from applier.sources.formats import FORMATS, CanonicalReader, Format, Reader, format_class, reader
    from applier.sources.formats.canonical import CanonicalSeqFormat, read_canonical
    from applier.sources.formats.convert import read_capture

    assert list(FORMATS) == ["canonical", "debezium", "maxwell", "wal2json", "wal2json2", "mssql-cdc"]
    assert ", ".join(FORMATS).startswith("canonical, debezium")  # the CLI's and the API's list
    want = inspect.signature(Reader.read)
    for name, r in FORMATS.items():
        assert isinstance(r, Reader) and r.name == name
        assert inspect.signature(type(r).read) == want, name  # the same read(...) for every one
        cls = r.format_class()
        assert issubclass(cls, Format) and cls.name == name and format_class(name) is cls
        assert r.suffixes and all(s.startswith(".") for s in r.suffixes)
    # canonical is one of them, its own reader (which numbers a file with sub-positions again)
    assert isinstance(FORMATS["canonical"], CanonicalReader) and reader("canonical") is FORMATS["canonical"]
    assert FORMATS["canonical"].format_class() is CanonicalSeqFormat
    # what each reads with: the canonical reading, or the capture pipeline through its Format
    assert FORMATS["canonical"].reading() is read_canonical
    for name in ("debezium", "maxwell", "wal2json", "wal2json2", "mssql-cdc"):
        got = FORMATS[name].reading()
        assert isinstance(got, partial) and got.func is read_capture and got.args == (format_class(name),)
    assert ".txt" not in FORMATS["canonical"].suffixes and ".txt" in FORMATS["wal2json"].suffixes
    with pytest.raises(InputError, match=r"unknown change format 'csv' \(known: canonical, debezium"):
        reader("csv")
