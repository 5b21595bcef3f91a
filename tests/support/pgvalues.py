"""PostgreSQL values for the type round trip (tests/integration/test_publisher_types.py): one
table per type family, each column with its declared type, the applier type ``articles
--from-target`` maps it to, the values written at the publisher (input text, cast to the
column's type; None is NULL) and the expression that shows it as text on both sides.

Row i of a family holds value i of each column (NULL past a column's list; a NOT NULL column
starts its list again), and a last row is all NULL where the columns allow it. A family keyed
by ``id`` is changed by an update that moves every row's values to the next row, a row deleted
and inserted again under another id, and a key change; a family keyed by its typed columns by
an update of ``v``, a key change and a delete.

The values are the types' extremes and awkward cases (sources: PostgreSQL 15's documentation
of each type, https://www.postgresql.org/docs/15/datatype.html). Generated values (every code
point of a plane, random bytes and bits) are made from fixed seeds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

Statement = str | tuple[Any, ...]


@dataclass(frozen=True)
class Col:
    name: str
    type: str  # as declared at the publisher
    mapped: str  # the applier type the articles give it
    values: tuple[str | None, ...]
    text: str = "{c}::text"  # the column as text, the same expression at both ends
    nullable: bool = True


@dataclass(frozen=True)
class Family:
    table: str
    cols: tuple[Col, ...]
    key: tuple[str, ...] = ("id",)  # ("id",): an integer id column is added as the key
    new_key: tuple[str, ...] = ()  # a typed-key family: the key the first row moves to
    null_row: bool = True
    one_row_a_transaction: bool = False
    # REPLICA IDENTITY FULL: the old row supplies values wal2json leaves out of an update's new
    # row (unchanged TOASTed ones: the large values' families)
    identity_full: bool = False
    lost: frozenset[str] = frozenset()  # texts the capture does not carry (they arrive NULL)
    refusals: tuple[str, ...] = ()  # a refused family: what reading each row says

    @property
    def by_id(self) -> bool:
        return self.key == ("id",)

    @property
    def rows(self) -> int:
        n = max(len(c.values) for c in self.cols)
        return n + 1 if self.null_row and self.by_id else n

    def value(self, c: Col, i: int) -> str | None:
        if i < len(c.values):
            return c.values[i]
        return None if c.nullable else c.values[i % len(c.values)]

    def ddl(self) -> str:
        cols = [f"{c.name} {c.type}{'' if c.nullable else ' NOT NULL'}" for c in self.cols]
        if self.by_id:
            cols.insert(0, "id integer")
        else:
            cols.append("v integer")
        create = f"CREATE TABLE {self.table} ({', '.join(cols)}, PRIMARY KEY ({', '.join(self.key)}))"
        return create + (f"; ALTER TABLE {self.table} REPLICA IDENTITY FULL" if self.identity_full else "")

    def _insert(self, i: int) -> tuple[Any, ...]:
        names = [c.name for c in self.cols]
        marks = [f"CAST(? AS {c.type})" for c in self.cols]
        params: list[Any] = [self.value(c, i) for c in self.cols]
        if self.by_id:
            names.insert(0, "id")
            marks.insert(0, "?")
            params.insert(0, i + 1)
        else:
            names.append("v")
            marks.append("?")
            params.append(i)
        return (f"INSERT INTO {self.table} ({', '.join(names)}) VALUES ({', '.join(marks)})", *params)

    def inserts(self) -> list[Statement]:
        return [self._insert(i) for i in range(self.rows)]

    def insert_transactions(self) -> list[list[Statement]]:
        if self.one_row_a_transaction:
            return [[s] for s in self.inserts()]
        return [self.inserts()]

    def changes(self) -> list[list[Statement]]:
        """The transactions after the inserts (none for a refused family)."""
        if self.refusals:
            return []
        t = self.table
        names = ", ".join(c.name for c in self.cols)
        if self.by_id:
            n = self.rows
            moved = ", ".join(f"s.{c.name}" for c in self.cols)
            return [
                [f"UPDATE {t} SET ({names}) = (SELECT {moved} FROM {t} s WHERE s.id = {t}.id % {n} + 1)"],
                [
                    f"WITH gone AS (DELETE FROM {t} WHERE id = 2 RETURNING *) INSERT INTO {t} SELECT id + 100, {names} FROM gone"
                ],
                [f"UPDATE {t} SET id = id + 1000 WHERE id = 1"],
            ]
        keys = [c for c in self.cols if c.name in self.key]
        where = " AND ".join(f"{c.name} = CAST(? AS {c.type})" for c in keys)
        sets = ", ".join(f"{c.name} = CAST(? AS {c.type})" for c in keys)
        first = [c.values[0] for c in keys]
        last = [c.values[self.rows - 1] for c in keys]
        return [
            [f"UPDATE {t} SET v = v + 10"],
            [(f"UPDATE {t} SET {sets} WHERE {where}", *self.new_key, *first)],
            [(f"DELETE FROM {t} WHERE {where}", *last)],
        ]

    def mapped(self) -> dict[str, str]:
        out = {"id": "int"} if self.by_id else {}
        out.update({c.name: c.mapped for c in self.cols})
        if not self.by_id:
            out["v"] = "int"
        return out

    def select_text(self) -> str:
        exprs = [c.text.format(c=c.name) for c in self.cols]
        exprs.insert(0, "id::text") if self.by_id else exprs.append("v::text")
        return f"SELECT {', '.join(exprs)} FROM {self.table}"


def _plane(p: int, stride: int = 1) -> str:
    """The code points of Unicode plane p that PostgreSQL's UTF8 accepts (all but NUL and the
    surrogates U+D800..U+DFFF, which UTF-8 cannot encode): every one, or every ``stride``-th
    and the plane's last."""
    lo, hi = max(1, p << 16), (p + 1) << 16
    points = [*range(lo, hi, stride), hi - 1] if stride > 1 else range(lo, hi)
    return "".join(chr(c) for c in points if not 0xD800 <= c <= 0xDFFF)


def unicode_family(table: str, stride: int) -> Family:
    """Text of every plane, a plane a row: every code point (stride 1: about 4.4 MB of UTF-8),
    or every ``stride``-th. Its updates leave the large values unchanged: REPLICA IDENTITY FULL."""
    rows = tuple(_plane(p, stride) for p in range(17))
    return Family(table, (Col("tx", "text", "nvarchar(max)", rows),), identity_full=True)


def _bits(n: int, seed: int) -> str:
    r = random.Random(seed)
    return "".join(r.choice("01") for _ in range(n))


def _hex(n: int, seed: int) -> str:
    return "\\x" + random.Random(seed).randbytes(n).hex()


TRIM = "trim_scale({c}::numeric)::text"  # a value compared as a number (scale not kept)
MOOD = ("sad", "ok", "", "with space", "é😀", "it's", "😀" * 15 + "abc")  # the last: 63 bytes

TYPES: list[Statement] = [
    "CREATE TYPE public.mood AS ENUM (" + ", ".join("'" + m.replace("'", "''") + "'" for m in MOOD) + ")",
    "CREATE DOMAIN public.posint AS integer CHECK (VALUE > 0)",
    "CREATE DOMAIN public.label AS text",
    "CREATE DOMAIN public.price AS numeric(10,2) NOT NULL",
    "CREATE DOMAIN public.price2 AS public.price",
    "CREATE DOMAIN public.mood_d AS public.mood",
    "CREATE DOMAIN public.moment AS timestamptz",
    "CREATE DOMAIN public.cash AS money",
    "CREATE DOMAIN public.blob AS bytea",
    "CREATE DOMAIN public.doc AS jsonb",
    "CREATE DOMAIN public.short AS varchar(5)",
]

UNICODE_SAMPLES = (
    "".join(chr((p << 16) | 0x1F600 % 0x10000) if p else "A" for p in range(17)),  # one a plane
    "e\u0301 Z" + "".join(chr(c) for c in range(0x300, 0x370)),  # combining marks, all of U+0300..U+036F
    "\u0915\u094d\u0937\u093f \u1100\u1161\u11a8 \u0e01\u0e34\u0e4a",  # conjuncts, jamo, Thai marks
    "👨\u200d👩\u200d👧\u200d👦 🇫🇷 👍🏽 \ufe0f\u20e3",  # ZWJ sequence, flag, skin tone, keycap
    "עברית العربية \u202eabc\u202c \u200f",  # right to left, overrides
    "".join(chr(c) for c in range(1, 32)) + "\x7f" + "".join(chr(c) for c in range(0x80, 0xA0)),  # C0, C1
    "\u2028\u2029\r\n\t\x0b\x0c",
    'it\'s "q" \\ \\x00 \\u0000 $$ $applier$ -- /* */ ;',
    "\ufffe\uffff\ufdd0\ufdef\U0001fffe\U0010ffff\U0010fffe",  # noncharacters
    "\ufeffBOM \ue000 \U000f0000 \U0010fffd",  # BOM, private use
    "\ud7ff\ue000",  # either side of the surrogates
    "",
    "   ",
)

FAMILIES: list[Family] = [
    Family(
        "public.t_time",
        (
            Col("ts", "timestamp", "datetime2(6)", ("0001-01-01 00:00:00", "9999-12-31 23:59:59.999999",
                "2000-02-29 12:00:00.5", "1970-01-01 00:00:00.000001")),
            Col("ts0", "timestamp(0)", "datetime2(0)", ("0001-01-01 00:00:00", "9999-12-31 23:59:59",
                "2000-01-01 00:00:00.4")),
            # the extremes: decoded in Asia/Kolkata the last is 10000-01-01 05:29:59.999999+05:30,
            # in America/St_Johns the first is 0001-12-31 20:29:08-03:30:52 BC (local mean time)
            Col("tstz", "timestamptz", "datetimeoffset(6)", ("0001-01-01 00:00:00+00",
                "9999-12-31 23:59:59.999999+00", "2024-03-10 02:30:00 America/New_York",
                "1970-01-01 00:00:00.000001+05:45", "2024-11-03 01:30:00-04")),
            Col("tstz3", "timestamp(3) with time zone", "datetimeoffset(3)", ("0001-01-01 00:00:00.001+00",
                "9999-12-31 23:59:59.999+00")),
            Col("d", "date", "date", ("0001-01-01", "9999-12-31", "2000-02-29", "1970-01-01")),
            Col("t", "time", "time(6)", ("00:00:00", "23:59:59.999999", "12:34:56.789")),
            Col("t2", "time(2)", "time(2)", ("23:59:59.99", "00:00:00.01")),
            Col("ttz", "timetz", "nvarchar(max)", ("00:00:00+15:59", "23:59:59.999999-15:59", "24:00:00+00",
                "12:00:00+05:30")),
            Col("iv", "interval", "nvarchar(max)", ("-178000000 years", "178000000 years",
                "1 year 2 mons 3 days 04:05:06.789", "-1 days +02:03:00", "0", "00:00:00.000001",
                "2147483647 days 2562047788:00:54.775807")),
            Col("ivs", "interval day to second(3)", "nvarchar(max)", ("1 day 00:00:00.1234", "-00:00:00.001")),
            Col("ivm", "interval year to month", "nvarchar(max)", ("1 year 11 mons", "-178000000 years")),
        ),
    ),
    Family(
        "public.t_num",
        (
            Col("n", "numeric", "decimal(38,10)", ("1234567890123456789012345678.0123456789",
                "-1234567890123456789012345678.0123456789", "0.0000000001", "1.50", "0", "-0.5"), TRIM),
            Col("n38", "numeric(38,0)", "decimal(38,0)", ("9" * 38, "-" + "9" * 38, "0", "1")),
            Col("n38s", "numeric(38,38)", "decimal(38,38)", ("0." + "9" * 38, "-0." + "9" * 38, "0." + "0" * 37 + "1")),
            Col("n10", "numeric(10,2)", "decimal(10,2)", ("99999999.99", "-99999999.99", "0.01", "-0.01", "0.00")),
            Col("nneg", "numeric(5,-2)", "decimal(7,0)", ("9999900", "-9999900", "149", "0")),
            Col("nfrac", "numeric(3,5)", "decimal(5,5)", ("0.00999", "-0.00999", "0.00001")),
            Col("m", "money", "money(19,4)", ("922337203685477.58", "-922337203685477.58", "0.01", "0", "-0.01",
                "1234.5"), TRIM),
            Col("i2", "smallint", "smallint", ("-32768", "32767", "0")),
            Col("i4", "integer", "int", ("-2147483648", "2147483647")),
            Col("i8", "bigint", "bigint", ("-9223372036854775808", "9223372036854775807")),
            Col("r", "real", "real", ("3.4028235e+38", "-3.4028235e+38", "1e-45", "1.1754944e-38", "0.1", "-0",
                "16777217", "1.0000001")),
            Col("f", "double precision", "float", ("1.7976931348623157e+308", "-1.7976931348623157e+308",
                "5e-324", "2.2250738585072014e-308", "0.1", "-0", "9007199254740993", "1.0000000000000002")),
            Col("o", "oid", "bigint", ("0", "4294967295")),
            Col("b", "boolean", "bit", ("true", "false")),
        ),
    ),
    Family(
        "public.t_special",
        (
            Col("r", "real", "real", ("NaN", "Infinity", "-Infinity", "1")),
            Col("f", "double precision", "float", ("NaN", "Infinity", "-Infinity", "1")),
            Col("n", "numeric", "decimal(38,10)", ("NaN", "Infinity", "-Infinity", "1"), TRIM),
        ),
        lost=frozenset({"NaN", "Infinity", "-Infinity"}),
    ),
    Family(
        "public.t_text",
        (
            Col("c5", "character(5)", "nchar(5)", ("a", "😀😀😀😀😀", "e\u0301", "", "ab   ", "\U00020000")),
            Col("vc", "varchar(10)", "nvarchar(10)", ("\U00020000" * 10, "é" * 10, "\U0010ffff" * 10, "")),
            Col("tx", "text", "nvarchar(max)", UNICODE_SAMPLES),
            Col("nm", "name", "nvarchar(63)", ("😀" * 15, "x" * 63, "")),
            # a blank: "char" ' ' is nchar(1) ' ', which the subscriber's character(1) shows as ''
            Col("ch", '"char"', "nchar(1)", ("a", " ", "Z"), "rpad({c}::text, 1)"),
        ),
    ),
    # every 61st code point of each plane, and its last (every one: EVERY_CODE_POINT, e2e)
    unicode_family("public.t_unicode", 61),
    Family(
        "public.t_bin",
        (
            Col("by", "bytea", "varbinary(max)", ("\\x", "\\x" + bytes(range(256)).hex(), "\\x00",
                _hex(100_000, 31))),
            Col("u", "uuid", "uniqueidentifier", ("00000000-0000-0000-0000-000000000000",
                "ffffffff-ffff-ffff-ffff-ffffffffffff", "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
                "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a12}")),
        ),
        identity_full=True,
    ),
    Family(
        "public.t_doc",
        (
            Col("j", "json", "nvarchar(max)", ("null", '"text"', '{"a": 1,  "a": [2.50, 1e400, -0]}',
                ' [1, "😀", "\\u0000", "\\ud83d\\ude00"] ', "{}", "123456789012345678901234567890.123")),
            Col("jb", "jsonb", "nvarchar(max)", ("null", '{"b": 1, "a": [true, false, null], "é😀": "\\u00e9"}',
                "1e400", '"😀"', "[]")),
            # compared as PostgreSQL's xml output function writes it (what wal2json captures): it
            # drops a declaration that says only version 1.0 and an encoding (xml.c, xml_out_internal)
            Col("x", "xml", "xml", ('<a b="1">x &amp; é 😀</a>', '<?xml version="1.0" encoding="UTF-8"?><r/>',
                '<?xml version="1.0" standalone="yes"?><r/>', "text only", "<!-- c --><a/><b/>",
                "<![CDATA[<not markup>]]>", ""), "xml_out({c}::xml)::text"),
        ),
    ),
    Family(
        "public.t_bits",
        (
            Col("b1", "bit", "varchar(1)", ("0", "1")),
            Col("b8", "bit(8)", "varchar(8)", ("00000000", "11111111", "10101010")),
            Col("vb", "bit varying", "varchar(max)", ("", "1", _bits(1000, 31))),
            Col("vb5", "varbit(5)", "varchar(5)", ("10101", "0", "")),
        ),
    ),
    Family(
        "public.t_net",
        (
            # as their output functions write them (what wal2json captures); ::text would show a
            # host's /32 or /128, which inet_out leaves out (the same value)
            Col("i", "inet", "nvarchar(43)", ("0.0.0.0", "255.255.255.255/32", "192.168.1.5/24", "::",
                "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db8::1/64", "::ffff:1.2.3.4",
                "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127"), "inet_out({c}::inet)::text"),
            Col("c", "cidr", "nvarchar(43)", ("0.0.0.0/0", "10.0.0.0/8", "2001:db8::/32",
                "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"), "cidr_out({c}::cidr)::text"),
            Col("m", "macaddr", "nvarchar(17)", ("00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff", "08-00-2B-01-02-03")),
            Col("m8", "macaddr8", "nvarchar(23)", ("08:00:2b:01:02:03:04:05", "ff:ff:ff:ff:ff:ff:ff:ff",
                "08:00:2b:01:02:03")),
        ),
    ),
    Family(
        "public.t_misc",
        (
            Col("tsv", "tsvector", "nvarchar(max)", ("'a':1A 'fat':2B,4C 'it''s':5 '😀':3", "")),
            Col("tsq", "tsquery", "nvarchar(max)", ("'fat' & ( 'rat' | !'cat' ) <-> 'x':*",)),
            Col("l", "pg_lsn", "nvarchar(max)", ("0/0", "FFFFFFFF/FFFFFFFF")),
        ),
    ),
    Family(
        "public.t_enum",
        (
            Col("e", "public.mood", "nvarchar(63)", MOOD),
            Col("e2", "public.mood", "nvarchar(63)", MOOD[::-1]),
        ),
    ),
    Family(
        "public.t_domain",
        (
            Col("pi", "public.posint", "int", ("1", "2147483647")),
            Col("lb", "public.label", "nvarchar(max)", ("😀 domain", "")),
            Col("deep", "public.price2", "decimal(10,2)", ("99999999.99", "-0.01", "0.00"), nullable=False),
            Col("dm", "public.mood_d", "nvarchar(63)", ("sad", "é😀")),
            Col("dtz", "public.moment", "datetimeoffset(6)", ("0001-01-01 00:00:00+00", "9999-12-31 23:59:59.999999+00")),
            Col("dmo", "public.cash", "money(19,4)", ("922337203685477.58", "-1.5"), TRIM),
            Col("dby", "public.blob", "varbinary(max)", ("\\x00ff",)),
            Col("dj", "public.doc", "nvarchar(max)", ('{"a": null}',)),
            Col("dv", "public.short", "nvarchar(5)", ("abcde",)),
        ),
    ),
    # a key of six typed columns: rows found again by their before image (wal2json's old
    # keys), keys hashed to streams, a key moved; equal numerics of other scales are one key
    Family(
        "public.k_typed",
        (
            Col("u", "uuid", "uniqueidentifier", ("00000000-0000-0000-0000-000000000000",
                "ffffffff-ffff-ffff-ffff-ffffffffffff", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")),
            Col("k", "text", "nvarchar(max)", ("é", "e\u0301", "😀", "\U0010ffff")),
            Col("e", "public.mood", "nvarchar(63)", ("sad", "", "é😀", "it's")),
            Col("tz", "timestamptz", "datetimeoffset(6)", ("0001-01-01 00:00:00+00", "9999-12-31 23:59:59.999999+00",
                "2024-03-10 02:30:00 America/New_York", "2024-03-10 02:30:00 America/New_York")),
            Col("d", "date", "date", ("0001-01-01", "9999-12-31", "2024-03-10", "2024-03-10")),
            Col("n", "numeric", "decimal(38,10)", ("1.50", "-0.0000000001", "1234567890123456789012345678.0123456789", "0"),
                TRIM),
        ),
        key=("u", "k", "e", "tz", "d", "n"),
        new_key=("11111111-2222-3333-4444-555555555555", "\U00020000 moved", "with space", "2024-11-03 01:30:00-05",
            "2024-11-03", "1.5000"),
    ),
]  # fmt: skip

# Every code point PostgreSQL's UTF8 accepts (test_publisher_types.py's e2e test).
EVERY_CODE_POINT = unicode_family("public.t_every_code_point", 1)

# Values a subscriber cannot hold: each row refused when its capture is read (one a transaction).
REFUSED_VALUES: list[Family] = [
    Family(
        "public.r_ts",
        (
            Col(
                "ts",
                "timestamp",
                "datetime2(6)",
                ("infinity", "-infinity", "10000-01-01 00:00:00", "0001-12-31 23:59:59 BC"),
            ),
        ),
        null_row=False,
        one_row_a_transaction=True,
        refusals=(
            "column 'ts' (datetime2(6)): 'infinity' has no equivalent at a subscriber",
            "column 'ts' (datetime2(6)): '-infinity' has no equivalent at a subscriber",
            "column 'ts' (datetime2(6)): '10000-01-01 00:00:00'",
            "column 'ts' (datetime2(6)): '0001-12-31 23:59:59 BC' has no equivalent at a subscriber",
        ),
    ),
    Family(
        "public.r_tstz",
        (
            Col(
                "tz",
                "timestamptz",
                "datetimeoffset(6)",
                ("infinity", "10000-06-01 00:00:00+00", "0001-12-31 12:00:00+00 BC"),
            ),
        ),
        null_row=False,
        one_row_a_transaction=True,
        refusals=(
            "column 'tz' (datetimeoffset(6)): 'infinity' has no equivalent at a subscriber",
            "column 'tz' (datetimeoffset(6)): '10000-0",
            "column 'tz' (datetimeoffset(6)): '0001-12-31 ",
        ),
    ),
    Family(
        "public.r_date",
        (
            Col(
                "d",
                "date",
                "date",
                ("infinity", "-infinity", "10000-01-01", "0001-12-31 BC", "5874897-12-31"),
            ),
        ),
        null_row=False,
        one_row_a_transaction=True,
        refusals=(
            "column 'd' (date): 'infinity' has no equivalent at a subscriber",
            "column 'd' (date): '-infinity' has no equivalent at a subscriber",
            "column 'd' (date): '10000-01-01'",
            "column 'd' (date): '0001-12-31 BC' has no equivalent at a subscriber",
            "column 'd' (date): '5874897-12-31'",
        ),
    ),
    Family(
        "public.r_time",
        (Col("t", "time", "time(6)", ("24:00:00",)),),
        null_row=False,
        one_row_a_transaction=True,
        refusals=("column 't' (time(6)): '24:00:00' has no equivalent at a subscriber",),
    ),
    Family(
        "public.r_money",
        (Col("m", "money", "money", ("92233720368547758.07", "-92233720368547758.08")),),
        null_row=False,
        one_row_a_transaction=True,
        refusals=(
            "column 'm' (money(19,4)): does not fit precision 19 (scale 4)",
            "column 'm' (money(19,4)): does not fit precision 19 (scale 4)",
        ),
    ),
    Family(
        "public.r_num",
        (Col("n", "numeric", "decimal(38,10)", ("1" + "0" * 28, "0.00000000001")),),
        null_row=False,
        one_row_a_transaction=True,
        refusals=(
            "column 'n' (decimal(38,10)): does not fit precision 38 (scale 10)",
            "column 'n' (decimal(38,10)): 0.00000000001 has more than 10 decimals, which decimal(38,10) would round",
        ),
    ),
    Family(
        "public.r_notnull",
        (
            Col("f", "double precision", "float", ("NaN", "1", "-Infinity"), nullable=False),
            Col("n", "numeric", "decimal(38,10)", ("1", "NaN", "2"), nullable=False),
        ),
        null_row=False,
        one_row_a_transaction=True,
        refusals=(
            "column 'f' (float): NULL in a NOT NULL column",
            "column 'n' (decimal(38,10)): NULL in a NOT NULL column",
            "column 'f' (float): NULL in a NOT NULL column",
        ),
    ),
]

# Types applier cannot carry: left out of the article, each with its one-line reason.
NOT_CARRIED_DDL: list[str] = [
    "CREATE TYPE public.pair AS (a integer, b text)",
    "CREATE TYPE public.floatrange AS RANGE (subtype = float8)",
    "CREATE DOMAIN public.intlist AS integer[]",
    "CREATE EXTENSION citext",
    "CREATE TABLE public.nc_types (id integer PRIMARY KEY, arr integer[], grid text[][], rng int4range, "
    "trng tstzrange, mrng int4multirange, urng public.floatrange, pt point, ln line, seg lseg, bx box, "
    "pth path, poly polygon, circ circle, comp public.pair, darr public.intlist, wide numeric(39,0), "
    "ci citext)",
    "CREATE TABLE public.nc_keyed (k int4range PRIMARY KEY, v integer)",
]
NOT_CARRIED = ("public.nc_types", "public.nc_keyed")
NOT_CARRIED_WHY: dict[str, str] = {
    "arr": "arrays cannot be carried",
    "grid": "arrays cannot be carried",
    "rng": "range types cannot be carried",
    "trng": "range types cannot be carried",
    "mrng": "range types cannot be carried",
    "urng": "is a range type",
    "pt": "geometric types cannot be carried",
    "ln": "geometric types cannot be carried",
    "seg": "geometric types cannot be carried",
    "bx": "geometric types cannot be carried",
    "pth": "geometric types cannot be carried",
    "poly": "geometric types cannot be carried",
    "circ": "geometric types cannot be carried",
    "comp": "is a composite type",
    "darr": "domain intlist over integer[]: PostgreSQL type 'integer[]': arrays cannot be carried",
    "wide": "beyond 38",
    "ci": "not a built-in scalar type",
    "k": "table skipped",
}
