"""Canonical value encoding: every supported type round-trips, NULL included, and a value
that does not fit its column is refused with the column named."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
import uuid

import pytest

from applier.articles import Column, parse_type
from applier.values import (
    ValueError_,
    check_utf16_length,
    dumps_image,
    encode,
    to_param,
    utf16_units,
    validate_encoded,
)


def col(t: str, nullable: bool = True) -> Column:
    return Column("c", parse_type(t), nullable=nullable)


ROUND_TRIPS = [
    # (type, python value as a driver returns it)
    ("int", 2**31 - 1),
    ("bigint", -(2**63)),
    ("tinyint", 255),
    ("bit", True),
    ("decimal(12,2)", decimal.Decimal("-1234567890.12")),
    ("money", decimal.Decimal("922337203685477.5807")),
    ("float", 0.1),
    ("real", 1.5),
    ("nvarchar(10)", "é'\";--中"),
    ("nvarchar(max)", "x" * 10000),
    ("varchar(5)", ""),  # empty string is not NULL
    ("nchar(4)", "ab  "),
    ("varbinary(max)", b"\x00\xff\x10"),
    ("uniqueidentifier", uuid.UUID("12345678-1234-5678-1234-567812345678")),
    ("date", dt.date(1900, 1, 1)),
    ("datetime2", dt.datetime(2024, 2, 29, 23, 59, 59, 999999)),
    ("time", dt.time(12, 0, 0, 1)),
    ("datetimeoffset(6)", dt.datetime(2024, 3, 10, 1, 59, 59, 999999, dt.timezone(dt.timedelta(hours=-5)))),
]


@pytest.mark.parametrize("t,v", ROUND_TRIPS, ids=[r[0] for r in ROUND_TRIPS])
def test_round_trip_through_json(t, v):
    c = col(t)
    enc = encode(c, v)
    back = json.loads(json.dumps(enc))  # what a change file carries
    assert validate_encoded(c, back) == enc
    assert encode(c, to_param(c.type, enc)) == enc


def test_a_time_binds_as_its_text():
    """pyodbc binds a datetime.time as SQL_TIME_STRUCT, which has no fraction of a second
    (23:59:59.999999 was stored as 23:59:59 on psqlODBC): a time binds as ISO text."""
    c = col("time(6)")
    enc = encode(c, dt.time(23, 59, 59, 999999))
    assert to_param(c.type, enc) == enc == "23:59:59.999999"
    assert encode(c, "00:00:00.000001") == "00:00:00.000001"
    with pytest.raises(ValueError_, match="without an offset"):
        encode(c, dt.time(1, 0, tzinfo=dt.timezone.utc))
    with pytest.raises(ValueError_, match="ISO 8601"):
        encode(c, "24:00:00")


@pytest.mark.parametrize("t", [r[0] for r in ROUND_TRIPS])
def test_null_round_trips(t):
    assert encode(col(t), None) is None
    assert validate_encoded(col(t), None) is None


def test_uuid_case_is_normalised():
    c = col("uniqueidentifier")
    assert encode(c, "85F0E0D4-0163-4B6E-B74F-A9298E14486D") == "85f0e0d4-0163-4b6e-b74f-a9298e14486d"


def test_decimal_takes_the_column_scale():
    assert encode(col("decimal(12,2)"), decimal.Decimal("1.5")) == "1.50"
    assert encode(col("decimal(12,2)"), "7") == "7.00"


REFUSED = [
    # (type, value from a file, words of the error)
    ("int", "12", "expected an integer"),
    ("int", 1.5, "expected an integer"),
    ("int", 2**31, "out of range"),
    ("tinyint", -1, "out of range"),
    ("bit", "yes", "expected a boolean"),
    ("decimal(4,2)", "123.45", "precision"),
    ("decimal(12,2)", "abc", "decimal"),
    ("nvarchar(3)", "abcd", "longer than 3"),
    ("nvarchar(3)", 5, "expected text"),
    ("varbinary(max)", "not base64!", "base64"),
    ("date", "2024-13-01", "ISO 8601"),
    ("uniqueidentifier", "nope", "uniqueidentifier"),
    ("float", float("nan"), "finite"),
]


@pytest.mark.parametrize("t,v,words", REFUSED, ids=[f"{r[0]}-{r[1]!r}" for r in REFUSED])
def test_value_that_does_not_fit_is_refused_with_the_column_named(t, v, words):
    with pytest.raises(ValueError_) as e:
        validate_encoded(col(t), v)
    assert "column 'c'" in str(e.value)
    assert words in str(e.value)


def test_null_in_not_null_column_is_refused():
    with pytest.raises(ValueError_, match="NOT NULL"):
        validate_encoded(col("int", nullable=False), None)


def test_images_compare_by_text():
    assert dumps_image({"b": 1, "a": "x"}) == dumps_image({"a": "x", "b": 1})


@pytest.mark.parametrize(
    ("t", "values"),
    [
        ("int", [0, -5, 2**31 - 1, 2**31, True, "7", 7.0, None]),
        ("tinyint", [0, 255, 256, -1]),
        ("nvarchar(5)", ["abc", "abcdef", "", 5, None]),
        ("varchar(max)", ["x" * 10000]),
        ("nchar(4)", ["ab", "abcd"]),
        (
            "decimal(5,2)",
            [
                decimal.Decimal("1.50"),
                decimal.Decimal("1.5"),
                decimal.Decimal("-0.00"),
                decimal.Decimal("999.99"),
                decimal.Decimal("1000.00"),
                decimal.Decimal("NaN"),
                3,
                "2.345",
            ],
        ),
        ("datetime2", [dt.datetime(2024, 1, 2, 3, 4, 5, 6)]),
    ],
)
def test_encoder_gives_what_encode_gives(t, values):
    from applier.values import encoder

    c = col(t)
    enc = encoder(c)
    for v in values:
        try:
            want = encode(c, v)
        except ValueError_ as e:
            with pytest.raises(ValueError_, match=re.escape(str(e))):
                enc(v)
            continue
        assert enc(v) == want and type(enc(v)) is type(want), (t, v)


def test_sorted_image_and_key_text_are_the_canonical_texts():
    import json

    from applier.config import parse_article_dicts
    from applier.values import dumps_image, dumps_sorted_image, key_text

    image = {'a"b': "é中", "id": 7, "n": None, "z": "x,y:z"}
    assert dumps_sorted_image(dict(sorted(image.items()))) == dumps_image(image)
    (a,) = parse_article_dicts(
        [
            {
                "name": "dbo.t",
                "columns": [
                    {"name": "z", "type": "text", "key": True},
                    {"name": "id", "type": "int", "key": True},
                ],
            }
        ],
        "<test>",
    )
    assert key_text(a, image) == json.dumps(["x,y:z", 7], separators=(",", ":"), ensure_ascii=False)


BAD_INPUT_VALUES = [
    # (type, value as a change file gives it, words of the error)
    ("decimal(12,2)", "1e400", "does not fit precision 12"),  # once InvalidOperation, a traceback
    ("decimal(12,2)", "-1E+999999999", "does not fit precision 12"),
    ("decimal(12,2)", "12345678901.00", "does not fit precision 12"),
    ("decimal(12,2)", "9999999999.995", "does not fit precision 12"),  # rounds up to 13 digits
    ("decimal(38,0)", "9" * 39, "does not fit precision 38"),
    ("money", "1e15", "does not fit precision 19"),
    ("real", 1e39, "out of range for real"),  # once stored as Infinity
    ("real", -3.41e38, "out of range for real"),
    ("float", float("inf"), "finite"),
    ("int", 2**31, "out of range"),
    ("bigint", 2**63, "out of range"),
    ("tinyint", -1, "out of range"),
    ("nvarchar(3)", "abcd", "longer than 3"),
    ("nvarchar(10)", "a\x00b", "NUL character"),  # the driver would cut the value at the NUL
    ("nvarchar(max)", "\x00", "NUL character"),
    ("nchar(4)", "a\ud800", "lone surrogate"),
    # SQL Server's datetime starts in 1753 and ends at .997 of 9999-12-31's last second
    (
        "datetime",
        "1752-12-31T23:59:59.999",
        "out of range for datetime (1753-01-01 00:00:00 to 9999-12-31 23:59:59.997000)",
    ),
    ("datetime", "9999-12-31T23:59:59.998", "out of range for datetime"),
    ("datetime", "0001-01-01", "out of range for datetime"),
    # smalldatetime: 1900-01-01 to 2079-06-06 23:59
    (
        "smalldatetime",
        "1899-12-31T23:59:00",
        "out of range for smalldatetime (1900-01-01 00:00:00 to 2079-06-06 23:59:00)",
    ),
    ("smalldatetime", "2079-06-06T23:59:01", "out of range for smalldatetime"),
    ("smalldatetime", "2079-06-07T00:00:00", "out of range for smalldatetime"),
]


@pytest.mark.parametrize(
    "t,v,words", BAD_INPUT_VALUES, ids=[f"{r[0]}-{r[1]!r}"[:40] for r in BAD_INPUT_VALUES]
)
def test_values_that_do_not_fit_are_refused(t, v, words):
    with pytest.raises(ValueError_, match=re.escape(words)):
        validate_encoded(col(t), v)


EMOJI = "\U0001f600"  # beyond U+FFFF: a surrogate pair in UTF-16, 2 code units
UTF16_LENGTHS = [
    # (type, value, accepted as SQL Server counts nchar/nvarchar's n: UTF-16 code units)
    ("nvarchar(4)", EMOJI * 2, True),  # 2 characters, 4 units: exactly n
    ("nvarchar(4)", EMOJI * 2 + "a", False),  # 3 characters, 5 units: n + 1
    ("nvarchar(5)", "a" + EMOJI * 2, True),
    ("nvarchar(3)", EMOJI * 2, False),  # 2 characters: fits n = 3 in characters, not in units
    ("nvarchar(4)", "abcd", True),  # the Basic Multilingual Plane counts 1 a character
    ("nvarchar(4)", "éßж中", True),
    ("nchar(4)", encode(col("nchar(4)"), EMOJI * 2), True),  # the padding a nchar gets is not counted
    ("nchar(4)", encode(col("nchar(4)"), EMOJI * 3), False),  # 3 characters fit nchar(4), 6 units do not
    ("nvarchar(max)", EMOJI * 5000, True),  # max: no n
    ("nvarchar(4)", None, True),
]


@pytest.mark.parametrize(
    "t,v,ok", UTF16_LENGTHS, ids=[f"{r[0]}-{len(r[1] or '')}-{r[2]}" for r in UTF16_LENGTHS]
)
def test_utf16_length_counts_a_surrogate_pair_as_two(t, v, ok):
    if ok:
        check_utf16_length(col(t), v)
        return
    with pytest.raises(ValueError_) as e:
        check_utf16_length(col(t), v)
    n = col(t).type.length
    assert f"column 'c' ({t}): {utf16_units(v.rstrip())} UTF-16 code units, longer than {n}" in str(e.value)
    assert len(v.rstrip()) <= n  # the characters fit: only the units' count refuses it


def test_utf16_units():
    assert [utf16_units(s) for s in ("", "a", EMOJI, "a" + EMOJI + "b", "中")] == [0, 1, 2, 4, 1]
    assert utf16_units(EMOJI * 3 + "x") == len((EMOJI * 3 + "x").encode("utf-16-le")) // 2


def test_datetime_ranges_at_their_edges_and_the_wider_types():
    edges = [
        ("datetime", "1753-01-01T00:00:00", "1753-01-01T00:00:00.000000"),
        ("datetime", "9999-12-31T23:59:59.997", "9999-12-31T23:59:59.997000"),
        ("smalldatetime", "1900-01-01T00:00:00", "1900-01-01T00:00:00.000000"),
        ("smalldatetime", "2079-06-06T23:59:00", "2079-06-06T23:59:00.000000"),
        # datetime2 and date keep their years 1 to 9999
        ("datetime2", "0001-01-01T00:00:00", "0001-01-01T00:00:00.000000"),
        ("datetime2", "9999-12-31T23:59:59.999999", "9999-12-31T23:59:59.999999"),
        ("date", "0001-01-01", "0001-01-01"),
        ("date", "1752-01-01", "1752-01-01"),
    ]
    for t, v, want in edges:
        assert validate_encoded(col(t), v) == want, (t, v)


def test_an_out_of_range_datetime_names_the_place_and_the_column():
    from applier.articles import Article
    from applier.errors import InputError
    from applier.sources.canonical import validate_record

    art = Article(
        "dbo", "t", (Column("id", parse_type("int")), Column("at", parse_type("smalldatetime"))), ("id",)
    )
    rec = {
        "lsn": 5,
        "xact_seqno": 1,
        "command_id": 1,
        "article": "dbo.t",
        "op": "I",
        "after": {"id": 1, "at": "2080-01-01T00:00:00"},
    }
    with pytest.raises(
        InputError,
        match=r"^ch\.jsonl:3: lsn 5: after: column 'at' \(smalldatetime\): out of range for smalldatetime "
        r"\(1900-01-01 00:00:00 to 2079-06-06 23:59:00\), got '2080-01-01T00:00:00'$",
    ):
        validate_record(rec, {"dbo.t": art}, "ch.jsonl:3")


def test_values_at_the_edges_still_fit():
    assert validate_encoded(col("decimal(12,2)"), "9999999999.99") == "9999999999.99"
    assert validate_encoded(col("decimal(12,2)"), "1e-400") == "0.00"
    assert validate_encoded(col("decimal(38,0)"), "9" * 38) == "9" * 38
    assert validate_encoded(col("real"), 3.4028235e38) == pytest.approx(3.4028234663852886e38)
    assert validate_encoded(col("float"), 1e308) == 1e308


def test_datetimeoffset_binds_as_its_text_and_reads_back_from_text():
    """pyodbc binds a datetime without its tzinfo (PostgreSQL reads it in the session's zone,
    SQL Server as +00:00: another instant), so the canonical text is bound as it is; the text
    PostgreSQL's read-back gives (the instant in UTC) encodes as itself."""
    c = col("datetimeoffset(6)")
    text = "2024-03-10T01:59:59.999999-05:00"
    assert to_param(c.type, text) == text
    assert encode(c, "2024-03-10T06:59:59.999999+00:00") == "2024-03-10T06:59:59.999999+00:00"
    assert encode(c, "2024-03-10 06:59:59+00:00") == "2024-03-10T06:59:59.000000+00:00"
    # one instant, one text, whatever offset it came with (a subscriber keeps the instant)
    assert encode(c, text) == "2024-03-10T06:59:59.999999+00:00"
    assert encode(c, "2024-11-03T01:30:00+05:30") == "2024-11-02T20:00:00.000000+00:00"


@pytest.mark.parametrize(
    "v,words",
    [
        (dt.datetime(2024, 3, 10, 6, 59, 59), "expected a datetime with offset"),  # naive: no instant
        ("2024-03-10T06:59:59", "expected a datetime with offset"),  # text without an offset
        ("10 March 2024", "expected ISO 8601 text with an offset"),
        ("0001-01-01T00:00:00+05:00", "outside years 1 to 9999"),  # its instant is in year 0
    ],
)
def test_datetimeoffset_without_an_instant_is_refused(v, words):
    with pytest.raises(ValueError_, match=words):
        encode(col("datetimeoffset(6)"), v)
