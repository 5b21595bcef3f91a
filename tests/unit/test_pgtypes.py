"""PostgreSQL type names (wal2json columntypes / include-types, format_type(), DDL) -> applier
column types, and the types refused with a reason."""

from __future__ import annotations

import pytest

from applier.articles import parse_type
from applier.catalog.pgtypes import base_name, is_serial, sql_type
from applier.errors import ConfigError

MAPPED = [
    # integers, internal names and serials
    ("smallint", "smallint"),
    ("int2", "smallint"),
    ("integer", "int"),
    ("int", "int"),
    ("int4", "int"),
    ("bigint", "bigint"),
    ("int8", "bigint"),
    ("smallserial", "smallint"),
    ("serial2", "smallint"),
    ("serial", "int"),
    ("serial4", "int"),
    ("bigserial", "bigint"),
    ("serial8", "bigint"),
    ("oid", "bigint"),
    # exact numerics
    ("numeric(5,3)", "decimal(5,3)"),
    ("NUMERIC ( 12 , 2 )", "decimal(12,2)"),
    ("decimal(10,0)", "decimal(10,0)"),
    ("numeric(7)", "decimal(7,0)"),
    ("numeric(38,38)", "decimal(38,38)"),
    # PostgreSQL 15: a negative scale rounds to tens, hundreds...; a scale beyond the precision
    # keeps only decimals: the decimal that holds the same values
    ("numeric(5,-2)", "decimal(7,0)"),
    ("numeric(3,5)", "decimal(5,5)"),
    ("numeric(36,-2)", "decimal(38,0)"),
    ("numeric", "decimal(38,10)"),
    ("money", "money"),
    # floats
    ("real", "real"),
    ("float4", "real"),
    ("float(24)", "real"),
    ("double precision", "float"),
    ("double  precision", "float"),
    ("float8", "float"),
    ("float", "float"),
    ("float(53)", "float"),
    # booleans
    ("boolean", "bit"),
    ("bool", "bit"),
    # characters
    ("character(10)", "nchar(10)"),
    ("char(10)", "nchar(10)"),
    ("bpchar", "nchar(1)"),
    ("character", "nchar(1)"),
    ("character varying(30)", "nvarchar(30)"),
    ("varchar(30)", "nvarchar(30)"),
    ("varchar", "nvarchar(max)"),
    ("character varying", "nvarchar(max)"),
    ("varchar(10485760)", "nvarchar(max)"),
    ("text", "nvarchar(max)"),
    ("name", "nvarchar(63)"),
    ('"char"', "nchar(1)"),
    # carried as text
    ("json", "nvarchar(max)"),
    ("jsonb", "nvarchar(max)"),
    ("tsvector", "nvarchar(max)"),
    ("tsquery", "nvarchar(max)"),
    ("interval", "nvarchar(max)"),
    ("interval(3)", "nvarchar(max)"),
    ("interval day to second(3)", "nvarchar(max)"),  # format_type() of an interval with fields
    ("interval year to month", "nvarchar(max)"),
    ("INTERVAL  HOUR", "nvarchar(max)"),
    ("time with time zone", "nvarchar(max)"),
    ("timetz", "nvarchar(max)"),
    ("pg_lsn", "nvarchar(max)"),
    ("bit varying(20)", "varchar(20)"),
    ("varbit", "varchar(max)"),
    ("bit varying", "varchar(max)"),
    ("bit(8)", "varchar(8)"),
    ("bit", "varchar(1)"),
    ("inet", "nvarchar(43)"),
    ("cidr", "nvarchar(43)"),
    ("macaddr", "nvarchar(17)"),
    ("macaddr8", "nvarchar(23)"),
    ("xml", "xml"),
    # dates and times
    ("date", "date"),
    ("time", "time(6)"),
    ("time(3)", "time(3)"),
    ("time without time zone", "time(6)"),
    ("time(0) without time zone", "time(0)"),
    ("timestamp", "datetime2(6)"),
    ("timestamp without time zone", "datetime2(6)"),
    ("timestamp(3) without time zone", "datetime2(3)"),
    ("timestamp with time zone", "datetimeoffset(6)"),
    ("timestamp(0) with time zone", "datetimeoffset(0)"),
    ("timestamptz", "datetimeoffset(6)"),
    ("TIMESTAMPTZ", "datetimeoffset(6)"),
    # others
    ("uuid", "uniqueidentifier"),
    ("bytea", "varbinary(max)"),
]


@pytest.mark.parametrize(("pg", "expected"), MAPPED)
def test_mapped(pg: str, expected: str) -> None:
    t = sql_type(pg)
    assert t == parse_type(expected)
    assert str(t) == str(parse_type(expected))
    t.kind  # noqa: B018 - a known base


REFUSED = [
    ("integer[]", "arrays"),
    ("character varying(30)[]", "arrays"),
    ("_int4", "arrays"),
    ("int[3][3]", "arrays"),
    ("integer array", "arrays"),
    ("int4range", "range"),
    ("tstzrange", "range"),
    ("daterange", "range"),
    ("int8multirange", "range"),
    ("point", "geometric"),
    ("polygon", "geometric"),
    ("circle", "geometric"),
    ("box", "geometric"),
    ("mood", "user-defined"),
    ("citext", "citext"),
    ("public.mood", "user-defined"),
    ('"MyType"', "user-defined"),
    ("numeric(50,2)", "beyond 38"),
    ("numeric(37,-2)", "39 digits, beyond 38"),
    ("numeric(5,39)", "39 digits, beyond 38"),
    ("numeric(1000,0)", "1000 digits, beyond 38"),
    ("integer day to second", "unreadable"),  # interval fields on another type
    ("timestamp(9)", "precision must be 0..6"),
    ("float(60)", "1..53"),
    ("integer(4)", "takes no length"),
    ("json(3)", "takes no length"),
    ("", "empty"),
    ("character(0)", "at least 1"),
]


@pytest.mark.parametrize(("pg", "why"), REFUSED)
def test_refused(pg: str, why: str) -> None:
    with pytest.raises(ConfigError, match="PostgreSQL type") as e:
        sql_type(pg)
    assert why in str(e.value)


def test_serials_and_base_names() -> None:
    assert [is_serial(t) for t in ("serial", "BIGSERIAL", "serial2", "integer", "smallint")] == [
        True,
        True,
        True,
        False,
        False,
    ]
    assert base_name("int4") == "integer"
    assert base_name("character varying(30)") == "character varying"
    assert base_name("timestamptz") == "timestamp with time zone"
    assert base_name("timestamp(3) without time zone") == "timestamp"
    assert base_name("bpchar") == "character"
    assert base_name("varbit") == "bit varying"
