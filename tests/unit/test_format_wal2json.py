"""wal2json captures read without Spark: every example of wal2json's own regression suite
(tests/data/captures/wal2json) parses in both format versions to the same changes, values are
read in the session's DateStyle and PostgreSQL's texts, and a bad record is refused naming its
line and field."""

from __future__ import annotations

import json
from string import Template
from typing import Any

import pytest

from applier.articles import Article, Column, parse_type
from applier.errors import InputError
from applier.sources.formats import Begin, Change, Commit, Item, format_class
from applier.sources.formats.wal2json import Wal2json, Wal2json2
from tests.support.wal2json_examples import DATA, ROW, articles, row

EXAMPLES = [
    "insert1",
    "update1",
    "update2",
    "update3",
    "update4",
    "delete1",
    "delete2",
    "delete3",
    "delete4",
    "pk",
]


def parse(example: str, version: int) -> list[Item]:
    fmt = (Wal2json if version == 1 else Wal2json2)(articles(example))
    path = DATA / f"{example}.v{version}.jsonl"
    out: list[Item] = []
    for i, line in enumerate(path.read_text().splitlines()):
        out.extend(fmt.parse(line, f"{path.name}:{i + 1}"))
    return out


def changes(items: list[Item]) -> list[tuple[Any, ...]]:
    return [
        (c.article, c.op, dict(c.before) if c.before else None, dict(c.after) if c.after else None)
        for c in items
        if isinstance(c, Change)
    ]


def transactions(items: list[Item]) -> list[list[tuple[Any, ...]]]:
    """Changes grouped by the Begin..Commit spans (file order)."""
    out: list[list[tuple[Any, ...]]] = []
    for it in items:
        if isinstance(it, Begin):
            out.append([])
        elif isinstance(it, Change):
            assert it.tx is None
            out[-1].append((it.article, it.op))
    return out


def test_registry() -> None:
    assert format_class("wal2json") is Wal2json and format_class("wal2json2") is Wal2json2


@pytest.mark.parametrize("example", EXAMPLES)
def test_both_versions_read_the_same_changes(example: str) -> None:
    v1, v2 = parse(example, 1), parse(example, 2)
    assert changes(v1) == changes(v2)
    assert transactions(v1) == transactions(v2)  # the same transactions, in the same order


def test_insert1_every_type() -> None:
    got = changes(parse("insert1", 1))
    assert got == [
        ("public.table_with_pk", "I", None, row(e="3.540")),
        ("public.table_without_pk", "I", None, ROW),
        ("public.table_with_unique", "I", None, ROW),
        ("test \"schema.test \" with 'quotes'", "I", None, {"id": 1, "col spaces": 2, 'col"quotes': 3}),
    ]
    (tx,) = transactions(parse("insert1", 2))
    assert len(tx) == 4  # one transaction (BEGIN ... COMMIT)


def test_update1_old_keys_and_a_key_change() -> None:
    got = changes(parse("update1", 2))
    key = {"b": 1, "c": 2, "d": 3}
    assert got == [
        # table_without_pk's update is not captured (no replica identity); table_with_unique's neither
        ("public.table_with_pk", "U", key, row(f=-ROW["f"])),
        ("public.table_with_pk", "U", key, row(b=-1, f=-ROW["f"])),
    ]


def test_update2_replica_identity_nothing_captures_no_update() -> None:
    assert changes(parse("update2", 1)) == []


def test_update3_replica_identity_full_gives_the_old_row() -> None:
    got = changes(parse("update3", 1))
    assert [(a, op) for a, op, _, _ in got] == [
        ("public.table_with_pk", "U"),
        ("public.table_without_pk", "U"),
        ("public.table_with_unique", "U"),
    ]
    for _, _, before, after in got:
        assert before == ROW and after == row(f=-ROW["f"])


def test_update4_and_delete4_unique_index_identity() -> None:
    ups = changes(parse("update4", 1))
    assert [(b, {k: a[k] for k in ("b", "c", "g", "n")}) for _, _, b, a in ups] == [
        ({"g": 1.23, "n": False}, {"b": 1, "c": -2, "g": 1.23, "n": False}),
        ({"g": 4.56, "n": True}, {"b": 4, "c": 5, "g": -4.56, "n": True}),
    ]
    dels = changes(parse("delete4", 2))
    assert [(op, b) for _, op, b, _ in dels] == [
        ("D", {"g": 1.23, "n": False}),
        ("D", {"g": 4.56, "n": True}),
    ]


def test_delete1_delete3_identity() -> None:
    assert changes(parse("delete1", 1)) == [("public.table_with_pk", "D", {"b": 1, "c": 2, "d": 3}, None)]
    assert changes(parse("delete2", 2)) == []  # REPLICA IDENTITY NOTHING: no delete captured
    d3 = changes(parse("delete3", 1))
    assert [(a, b["a"]) for a, _, b, _ in d3] == [
        ("public.table_with_pk", 1),
        ("public.table_with_pk", 2),
        ("public.table_without_pk", 1),
        ("public.table_with_unique", 1),
    ]
    assert d3[0][2] == ROW  # the full old row


def test_pk_example() -> None:
    got = changes(parse("pk", 1))
    assert [(a.split(".")[1], op) for a, op, _, _ in got] == [
        ("w2j_pk_with_pk", "I"),
        ("w2j_pk_with_pk", "U"),
        ("w2j_pk_with_pk", "D"),
        ("w2j_pk_without_pk", "I"),
        ("w2j_pk_with_ri", "I"),
        ("w2j_pk_with_ri", "U"),
        ("w2j_pk_with_ri", "D"),
    ]
    assert got[0][3] == {
        "a": 123,
        "b": "2020-04-26T16:23:59.000000",
        "c": "Melanosuchus Niger",
        "d": True,
        "e": "4.560",
    }
    assert got[1][2] == {"b": "2020-04-26T16:23:59.000000", "d": True, "e": "4.560"}
    assert got[5][2] == {"a": 123} and got[5][3]["a"] == 456


def test_savepoint_only_committed_changes() -> None:
    items = parse("savepoint", 1)
    assert [c[3]["b"] for c in changes(items)] == ["john", "smith", "robert", "marie", "ernesto", "francisco"]
    assert [len(t) for t in transactions(items)] == [1, 1, 1, 3]


def test_xids_do_not_order_and_lsns_do() -> None:
    xids = parse("include_xids", 1)
    assert [type(i).__name__ for i in xids[:3]] == ["Begin", "Change", "Commit"]  # file order
    assert [c.source for c in xids if isinstance(c, Change)][-1] == "xid 760 change[1]"
    lsns = [c for c in parse("include_lsn", 1)]
    assert all(isinstance(c, Change) for c in lsns)
    assert [c.tx for c in lsns] == [(0x16B3748,), (0x16B3810,), (0x16B38D8,), (0x16B39A0,), (0x16B39A0,)]
    assert [c.pos for c in lsns] == [(0,), (0,), (0,), (0,), (1,)]


def test_v2_positions_are_lines() -> None:
    items = parse("savepoint", 1) + parse("insert1", 2)
    assert [c.pos for c in items if isinstance(c, Change)][-4:] == [(2,), (3,), (4,), (5,)]


# -- values -------------------------------------------------------------------------------------
def art(*cols: tuple[str, str]) -> dict[str, Article]:
    a = Article(
        "public",
        "t",
        (Column("id", parse_type("int"), nullable=False), *(Column(n, parse_type(t)) for n, t in cols)),
        ("id",),
    )
    return {a.name: a}


def v2(arts: dict[str, Article], value: Any, pg_type: str | None = None, action: str = "I") -> Any:
    col = {"name": "v", "value": value}
    if pg_type:
        col["type"] = pg_type
    doc = {"action": action, "schema": "public", "table": "t", "columns": [{"name": "id", "value": 1}, col]}
    (c,) = Wal2json2(arts).parse(json.dumps(doc), "f.jsonl:7")
    assert isinstance(c, Change) and c.after is not None
    return c.after["v"]


VALUES = [
    ("datetime2(6)", "2013-11-02 17:30:52", None, "2013-11-02T17:30:52.000000"),
    ("datetime2(6)", "2013-11-02 17:30:52.25", None, "2013-11-02T17:30:52.250000"),
    ("datetime2(6)", "Sat Nov 02 17:30:52.5 2013", None, "2013-11-02T17:30:52.500000"),
    ("datetime2(6)", "Sat 02 Nov 17:30:52 2013", None, "2013-11-02T17:30:52.000000"),
    ("datetime2(6)", "11/02/2013 17:30:52", None, "2013-11-02T17:30:52.000000"),
    ("datetime2(6)", "02.11.2013 17:30:52", None, "2013-11-02T17:30:52.000000"),
    ("date", "2013-02-04", None, "2013-02-04"),
    ("date", "02-04-2013", None, "2013-02-04"),
    ("date", "04.02.2013", None, "2013-02-04"),
    # a timestamptz is its instant, in UTC: the offset is the decoding session's TimeZone
    ("datetimeoffset(6)", "2013-11-02 17:30:52+01", None, "2013-11-02T16:30:52.000000+00:00"),
    ("datetimeoffset(6)", "2013-11-02 17:30:52.1-05:30", None, "2013-11-02T23:00:52.100000+00:00"),
    ("datetimeoffset(6)", "2013-11-02 23:30:52.000001-03", None, "2013-11-03T02:30:52.000001+00:00"),
    ("datetimeoffset(6)", "1999-12-31 23:59:59.999999+14", None, "1999-12-31T09:59:59.999999+00:00"),
    ("datetimeoffset(6)", "Sat Nov 02 17:30:52 2013 UTC", None, "2013-11-02T17:30:52.000000+00:00"),
    # an instant whose local year is outside 1..9999 but its UTC one is not (issue 31): the
    # decoding session's zone put it there (Kolkata, +05:30; St John's local mean time in year 1)
    ("datetimeoffset(6)", "10000-01-01 05:29:59.999999+05:30", None, "9999-12-31T23:59:59.999999+00:00"),
    ("datetimeoffset(6)", "0001-12-31 20:29:08-03:30:52 BC", None, "0001-01-01T00:00:00.000000+00:00"),
    ("datetimeoffset(6)", "0001-01-01 05:53:28+05:53:28", None, "0001-01-01T00:00:00.000000+00:00"),
    ("datetimeoffset(6)", "10000-01-01 13:59:59+14", None, "9999-12-31T23:59:59.000000+00:00"),
    ("time(6)", "17:30:52.123", None, "17:30:52.123000"),
    ("time(6)", "23:59:59.999999", None, "23:59:59.999999"),
    ("decimal(38,10)", "1.50000000000", None, "1.5000000000"),  # zeros past the scale lose nothing
    ("decimal(5,3)", 3.54, None, "3.540"),
    ("decimal(5,3)", "3.540", None, "3.540"),
    ("money", "$1,234.50", "money", "1234.5000"),
    ("money", "-$3.00", "money", "-3.0000"),
    ("float", "1.5", None, 1.5),
    ("real", 876.563, "real", 876.56298828125),
    ("bit", True, None, True),
    ("bit", "t", None, True),
    ("varchar(20)", "001110010101010", "bit varying(20)", "001110010101010"),
    ("nvarchar(max)", '{"a": [1, 2]}', "jsonb", '{"a": [1, 2]}'),
    ("varbinary(max)", "0102ff", "bytea", "AQL/"),
    ("varbinary(max)", "\\x0102ff", "bytea", "AQL/"),
    (
        "uniqueidentifier",
        "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
        "uuid",
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
    ),
    ("bigint", 9007199254740993, "bigint", 9007199254740993),
    ("nvarchar(10)", None, None, None),
]


@pytest.mark.parametrize(("sql", "value", "pg", "expected"), VALUES)
def test_values(sql: str, value: Any, pg: str | None, expected: Any) -> None:
    assert v2(art(("v", sql)), value, pg) == expected


BAD_VALUES = [
    ("datetimeoffset(6)", "Sat Nov 02 17:30:52 2013 PST", "only numeric offsets"),
    ("datetime2(6)", "2013-11-02 17:30:52+01", "has a time zone"),
    ("datetimeoffset(6)", "2013-11-02 17:30:52", "no time zone offset"),
    ("date", "2013-02-04 BC", "BC dates"),
    ("date", "infinity", "infinities"),
    ("date", "2013-02-31", "day is out of range"),
    ("varbinary(max)", "zz", "bytea_output = hex"),
    ("int", "x", "expected an integer"),
    ("decimal(5,3)", 123.4, "does not fit precision"),
    (
        "decimal(38,10)",
        "0.00000000001",
        "0.00000000001 has more than 10 decimals, which decimal(38,10) would round",
    ),
    ("decimal(12,2)", 1.005, "has more than 2 decimals"),
    ("datetimeoffset(6)", "10000-06-01 05:30:00+05:30", "has no equivalent at a subscriber (years 1 to 9999"),
    ("datetimeoffset(6)", "0001-12-31 12:00:00+00 BC", "has no equivalent at a subscriber (years 1 to 9999"),
    ("datetime2(6)", "10000-01-01 00:00:00", "has no equivalent at a subscriber (years 1 to 9999"),
    ("date", "5874897-12-31", "has no equivalent at a subscriber (years 1 to 9999"),
    ("time(6)", "24:00:00", "a time of day ends at 23:59:59.999999"),
    ("time(6)", "25:00:00", "hour must be in 0..23"),
    ("nvarchar(3)", "abcd", "longer than 3"),
]


@pytest.mark.parametrize(("sql", "value", "why"), BAD_VALUES)
def test_bad_values_name_line_and_field(sql: str, value: Any, why: str) -> None:
    with pytest.raises(InputError) as e:
        v2(art(("v", sql)), value)
    assert str(e.value).startswith("f.jsonl:7: columns[1].value: ") and why in str(e.value)


def test_a_null_in_a_not_null_number_says_what_wal2json_writes_as_null() -> None:
    """wal2json writes a numeric NaN and a real/double NaN or ±Infinity as null: in a NOT NULL
    column that null is refused, saying so (in a nullable one it is a NULL: nothing tells them
    apart)."""
    a = Article(
        "public",
        "t",
        (Column("id", parse_type("int"), False), Column("f", parse_type("float"), False)),
        ("id",),
    )
    line = '{"action":"I","schema":"public","table":"t","columns":[{"name":"id","value":1},{"name":"f","value":null}]}'
    with pytest.raises(InputError) as e:
        list(Wal2json2({a.name: a}).parse(line, "f.jsonl:3"))
    assert str(e.value) == (
        "f.jsonl:3: columns[1].value: column 'f' (float): NULL in a NOT NULL column (wal2json writes a "
        "numeric NaN, and a real or double NaN or ±Infinity, as null without numeric-data-types-as-string, "
        "which wal2json 2.6 and later take)"
    )


# -- numeric-data-types-as-string (wal2json 2.6 and later) ---------------------------------------
# Hand-written as wal2json 2.6 writes them with the option (wal2json.c: every smallint, integer,
# bigint, oid, real, double precision and numeric value quoted, NaN and ±Infinity as their text).
NUMBERS = art(("i8", "bigint"), ("o", "bigint"), ("r", "real"), ("f", "float"), ("n", "decimal(38,10)"))
V1_LINE = Template(
    '{"xid":731,"nextlsn":"0/1925F20","change":[{"kind":"insert","schema":"public","table":"t",'
    '"columnnames":["id","i8","o","r","f","n"],'
    '"columntypes":["integer","bigint","oid","real","double precision","numeric"],'
    '"columnvalues":[$id,$i8,$o,$r,$f,$n]}]}'
)
V2_LINE = Template(
    '{"action":"I","xid":731,"lsn":"0/1925E88","schema":"public","table":"t","columns":['
    '{"name":"id","type":"integer","value":$id},{"name":"i8","type":"bigint","value":$i8},'
    '{"name":"o","type":"oid","value":$o},{"name":"r","type":"real","value":$r},'
    '{"name":"f","type":"double precision","value":$f},{"name":"n","type":"numeric","value":$n}]}'
)
ROW_TEXTS = {
    "id": "1",
    "i8": "-9223372036854775808",
    "o": "4294967295",
    "r": "3.4028235e+38",
    "f": "-0",
    "n": "1.50",
}


def _line(template: Template, quoted: bool, **values: str) -> str:
    texts = {**ROW_TEXTS, **values}
    return template.substitute({k: f'"{v}"' if quoted else v for k, v in texts.items()})


def test_numbers_given_as_strings_read_as_the_same_numbers() -> None:
    """The same row as JSON numbers (what wal2json writes without the option) and as strings, in
    both versions: the same values, -0 keeping its sign."""
    got = []
    for fmt, template in ((Wal2json, V1_LINE), (Wal2json2, V2_LINE)):
        for quoted in (True, False):
            line = _line(template, quoted)
            assert ('"-0"' in line) is quoted
            (c,) = [i for i in fmt(NUMBERS).parse(line, "f.jsonl:2") if isinstance(i, Change)]
            assert c.after is not None
            got.append(dict(c.after))
    assert (
        got[0]
        == got[1]
        == got[2]
        == got[3]
        == {
            "id": 1,
            "i8": -9223372036854775808,
            "o": 4294967295,
            "r": 3.4028234663852886e38,
            "f": -0.0,
            "n": "1.5000000000",
        }
    )
    assert all(str(g["f"]) == "-0.0" for g in got)


@pytest.mark.parametrize("special", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize(("column", "index"), [("r", 3), ("f", 4), ("n", 5)])
def test_nan_and_infinities_as_strings_are_refused_naming_line_column_and_value(
    special: str, column: str, index: int
) -> None:
    """SQL Server's decimal and float hold no NaN or infinity: refused, one line, in both versions."""
    sql = {"r": "real", "f": "float", "n": "decimal(38,10)"}[column]
    why = (
        f"column {column!r} ({sql}): {special!r} has no equivalent at a SQL Server subscriber's decimal/float"
    )
    for fmt, template, field in (
        (Wal2json, V1_LINE, f"change[0].columnvalues[{index}]"),
        (Wal2json2, V2_LINE, f"columns[{index}].value"),
    ):
        line = _line(template, True, **{column: special})
        with pytest.raises(InputError) as e:
            list(fmt(NUMBERS).parse(line, "cap.jsonl:12"))
        assert str(e.value) == f"cap.jsonl:12: {field}: {why}"


@pytest.mark.parametrize(
    ("sql", "value"),
    [
        ("float", "nan"),  # any case, as PostgreSQL's input functions take it
        ("float", " Infinity "),
        ("real", "+Infinity"),
        ("decimal(10,2)", "NaN"),  # a constrained numeric holds NaN too
        ("money", "NaN"),  # not a number money's text can be: refused all the same
    ],
)
def test_every_spelling_of_a_special_number_is_refused(sql: str, value: str) -> None:
    with pytest.raises(InputError) as e:
        v2(art(("v", sql)), value)
    assert "has no equivalent at a SQL Server subscriber's decimal/float" in str(e.value)


def test_a_bare_json_nan_is_refused_and_nan_text_is_text() -> None:
    """Python's json reads a bare NaN (not JSON, but a hand-made file may hold one): refused as
    the string is; in a text column "NaN" is only text."""
    line = '{"action":"I","schema":"public","table":"t","columns":[{"name":"id","value":1},{"name":"v","value":NaN}]}'
    with pytest.raises(InputError) as e:
        list(Wal2json2(art(("v", "float"))).parse(line, "f.jsonl:1"))
    assert "column 'v' (float): 'NaN' has no equivalent" in str(e.value)
    assert v2(art(("v", "nvarchar(10)")), "NaN") == "NaN"
    assert v2(art(("v", "float")), "1e-45") == 1e-45


def test_a_negative_zero_keeps_its_sign() -> None:
    """wal2json writes a real or double -0 as the JSON integer -0 (which int() reads as 0)."""
    arts = art(("v", "float"))
    line = '{"action":"I","schema":"public","table":"t","columns":[{"name":"id","value":1},{"name":"v","value":-0}]}'
    (c,) = Wal2json2(arts).parse(line, "f.jsonl:1")
    assert isinstance(c, Change) and c.after is not None
    assert str(c.after["v"]) == "-0.0" and c.after["id"] == 1


def test_v1_errors_name_the_change_and_column() -> None:
    arts = art(("v", "int"))
    doc = {
        "change": [
            {"kind": "insert", "table": "t", "columnnames": ["id", "v"], "columnvalues": [1, 2]},
            {"kind": "insert", "table": "t", "columnnames": ["id", "v"], "columnvalues": [2, "x"]},
        ]
    }
    with pytest.raises(InputError, match=r"^f:3: change\[1\]\.columnvalues\[1\]: column 'v'"):
        list(Wal2json(arts).parse(json.dumps(doc), "f:3"))
    doc["change"][1]["columnvalues"] = [2]  # type: ignore[index]
    with pytest.raises(InputError, match=r"change\[1\]\.columnvalues: 1 entries for 2 column names"):
        list(Wal2json(arts).parse(json.dumps(doc), "f:3"))
    doc["change"][1] = {"kind": "delete", "table": "t", "oldkeys": {"keynames": ["v"], "keyvalues": [3]}}
    with pytest.raises(InputError, match=r"key column 'id' of article public.t is not among the old keys"):
        list(Wal2json(arts).parse(json.dumps(doc), "f:3"))
    doc["change"][1] = {"kind": "insert", "table": "nope", "columnnames": ["id"], "columnvalues": [1]}
    with pytest.raises(InputError, match=r"change\[1\]: table 'nope' is not an article"):
        list(Wal2json(arts).parse(json.dumps(doc), "f:3"))
    doc["change"][1] = {"kind": "insert", "table": "t", "columnnames": ["id", "w"], "columnvalues": [1, 1]}
    with pytest.raises(InputError, match=r"change\[1\]\.columnvalues\[1\]: column 'w' is not a column"):
        list(Wal2json(arts).parse(json.dumps(doc), "f:3"))


def test_truncate_refused_messages_skipped() -> None:
    arts = art(("v", "int"))
    with pytest.raises(InputError, match=r"^f:2: truncate of public.t: applier has no truncate"):
        list(Wal2json2(arts).parse('{"action":"T","schema":"public","table":"t"}', "f:2"))
    assert (
        list(Wal2json2(arts).parse('{"action":"M","transactional":true,"prefix":"p","content":"c"}', "f:2"))
        == []
    )
    v1 = '{"change":[{"kind":"message","transactional":true,"prefix":"p","content":"c"}]}'
    assert [type(i) for i in Wal2json(arts).parse(v1, "f:2")] == [Begin, Commit]
    with pytest.raises(InputError, match=r"change\[0\]: truncate"):
        list(Wal2json(arts).parse('{"change":[{"kind":"truncate","schema":"public","table":"t"}]}', "f:2"))


def test_wrong_version_and_pretty_print() -> None:
    arts = art(("v", "int"))
    with pytest.raises(InputError, match="use --format wal2json2"):
        list(Wal2json(arts).parse('{"action":"B"}', "f:1"))
    with pytest.raises(InputError, match="use --format wal2json\\)"):
        list(Wal2json2(arts).parse('{"change":[]}', "f:1"))
    with pytest.raises(InputError, match="^f:1: not JSON.*one JSON document per line"):
        list(Wal2json(arts).parse("{", "f:1"))
    assert list(Wal2json(arts).parse("   ", "f:1")) == []


def test_unchanged_toast_value() -> None:
    arts = art(("v", "nvarchar(max)"), ("w", "int"))
    new = [{"name": "id", "value": 1}, {"name": "w", "value": 5}]  # v: unchanged TOAST, left out
    doc = {"action": "U", "schema": "public", "table": "t", "columns": new}
    # REPLICA IDENTITY DEFAULT: marked unchanged, filled later from the row's previous image
    (c,) = Wal2json2(arts).parse(json.dumps(doc), "f:1")
    assert isinstance(c, Change) and c.after == {"id": 1, "w": 5} and c.unchanged == ("v",)
    v1 = {"change": [{"kind": "update", "schema": "public", "table": "t", "columnnames": ["id", "w"],
                      "columnvalues": [1, 5], "oldkeys": {"keynames": ["id"], "keyvalues": [1]}}]}  # fmt: skip
    (c1,) = (i for i in Wal2json(arts).parse(json.dumps(v1), "f:1") if isinstance(i, Change))
    assert c1.after == {"id": 1, "w": 5} and c1.unchanged == ("v",) and c1.before == {"id": 1}
    # REPLICA IDENTITY FULL: the old row has it
    doc["identity"] = [{"name": "id", "value": 1}, {"name": "v", "value": "long"}, {"name": "w", "value": 4}]
    (c,) = Wal2json2(arts).parse(json.dumps(doc), "f:1")
    assert isinstance(c, Change) and c.after == {"id": 1, "w": 5, "v": "long"} and c.unchanged == ()
    # an insert is never partial
    ins = {"action": "I", "schema": "public", "table": "t", "columns": new}
    with pytest.raises(InputError, match="column 'v' is absent from the inserted row"):
        list(Wal2json2(arts).parse(json.dumps(ins), "f:1"))


def test_update_without_old_keys_takes_the_key_from_the_new_row() -> None:
    arts = art(("v", "int"))
    doc = {"action": "U", "table": "t", "columns": [{"name": "id", "value": 1}, {"name": "v", "value": 5}]}
    (c,) = Wal2json2(arts).parse(json.dumps(doc), "f:1")
    assert isinstance(c, Change) and c.before == {"id": 1} and c.after == {"id": 1, "v": 5}
    doc = {"action": "D", "table": "t", "identity": []}
    with pytest.raises(InputError, match="a delete without old keys"):
        list(Wal2json2(arts).parse(json.dumps(doc), "f:1"))
