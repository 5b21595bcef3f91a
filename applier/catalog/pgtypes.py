"""PostgreSQL type names -> applier's column types (SQL Server vocabulary).

``sql_type`` reads a type as PostgreSQL writes it in every place applier meets one: wal2json's
``columntypes`` (internal names: ``int4``, ``bpchar``, ``varbit``, ``timestamptz``) and
``"type"`` / ``include-types`` (``format_type()`` names: ``character varying(30)``,
``timestamp without time zone``, ``numeric(5,3)``), and DDL (``int``, ``serial``,
``varchar(30)``, ``timestamp(3) with time zone``, ``double precision``). Case and extra spaces
do not matter; a type with its typmod left out (wal2json's ``include-typmod`` off) gets the
default below.

The mapping (PostgreSQL -> applier):

* ``smallint``/``int2``, ``integer``/``int``/``int4``, ``bigint``/``int8`` -> smallint, int,
  bigint; ``smallserial``/``serial``/``bigserial`` (``serial2/4/8``) -> the same integer types
  (their identity is the caller's to note: :func:`is_serial`); ``oid`` -> bigint.
* ``numeric(p,s)``/``decimal(p,s)`` -> decimal(p,s) (p up to 38); ``numeric(p)`` -> decimal(p,0);
  PostgreSQL 15's scale below 0 or above p -> the decimal that holds the same values (p - s
  integer digits, max(s, 0) decimals: ``numeric(5,-2)`` -> decimal(7,0), ``numeric(3,5)`` ->
  decimal(5,5)), refused past 38 digits; ``numeric`` without a typmod -> decimal(38,10):
  unconstrained numerics hold any scale, so a value with more than 10 decimals or 28 integer
  digits is refused when it is read (naming the column) rather than rounded, and the
  subscriber shows every value with 10 decimals (``1.50`` as ``1.5000000000``, the same
  number). ``money`` -> money (its locale text, ``$1,234.50``, is read by the wal2json format;
  a value beyond SQL Server's money, ±922,337,203,685,477.5807, is refused when it is read).
* ``real``/``float4``/``float(1..24)`` -> real; ``double precision``/``float8``/``float`` -> float.
* ``boolean``/``bool`` -> bit.
* ``character(n)``/``char(n)``/``bpchar(n)`` -> nchar(n) (``character`` alone: nchar(1));
  ``character varying(n)``/``varchar(n)`` -> nvarchar(n) (no length, or over 4000:
  nvarchar(max)); ``text`` -> nvarchar(max); ``name`` -> nvarchar(63); ``"char"`` -> nchar(1).
  PostgreSQL text is Unicode, hence the n-types.
* Carried as their text form (PostgreSQL's output text, compared as text at the subscriber):
  ``json``, ``jsonb``, ``tsvector``, ``tsquery``, ``interval``, ``time with time zone``
  (``timetz``), ``pg_lsn`` -> nvarchar(max) (``interval`` with its fields too: ``interval day
  to second(3)``, as ``format_type()`` writes it); bit strings ``bit(n)`` / ``bit varying(n)``
  (``varbit``) -> varchar(n) of '0'/'1' (no length: varchar(max); ``bit`` alone is bit(1):
  varchar(1)); ``inet``/``cidr`` -> nvarchar(43), ``macaddr`` -> nvarchar(17), ``macaddr8`` ->
  nvarchar(23); ``xml`` -> xml.
* ``date`` -> date; ``time(p) [without time zone]`` -> time(p) (no p: time(6));
  ``timestamp(p) [without time zone]`` -> datetime2(p) (no p: datetime2(6));
  ``timestamp(p) with time zone``/``timestamptz`` -> datetimeoffset(p) (no p: 6).
* ``uuid`` -> uniqueidentifier; ``bytea`` -> varbinary(max).

User-defined types are known by what the catalog says they are, which a name alone does not
tell (:mod:`applier.catalog.target` reads ``pg_type.typtype``; :mod:`applier.catalog.ddl` the
script's ``CREATE TYPE`` / ``CREATE DOMAIN``):

* an enum -> :data:`ENUM_LABEL_TYPE`, nvarchar(63): its label text (a label is at most 63 bytes);
  the subscriber compares and orders it as text, not in the enum's declared order;
* a domain -> its base type's mapping (a domain over a domain followed down to the first type
  that is not one, with the typmod the innermost domain gives it; NOT NULL when any of them
  says so; a domain over an enum is carried as the enum is); its CHECK constraints stay at the
  publisher;
* a composite or range type is refused with its kind.

Refused with a :class:`ConfigError` saying why: arrays (``integer[]``, ``_int4``, a domain over
one), ranges and multiranges (``int4range``, ``tstzrange``...), geometric types (``point``,
``polygon``...), and any other name given alone (a user-defined type this function cannot
tell, an extension's type such as ``citext``, a schema-qualified or quoted name): applier
cannot carry them to a SQL Server subscriber. Each is refused when the articles are made: the
column is left out of its article (the table skipped when it is a key column) with one line
naming the table, the column, its type and this reason (:mod:`applier.catalog.model`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from applier.articles import SqlType
from applier.catalog.tsqltypes import Alias
from applier.errors import ConfigError

# Internal and alias names -> the canonical base name used below.
_ALIASES: dict[str, str] = {
    "int2": "smallint",
    "int": "integer",
    "int4": "integer",
    "int8": "bigint",
    "serial2": "smallserial",
    "serial4": "serial",
    "serial8": "bigserial",
    "decimal": "numeric",
    "float4": "real",
    "float8": "double precision",
    "bool": "boolean",
    "char": "character",
    "bpchar": "character",
    "varchar": "character varying",
    "varbit": "bit varying",
    "timestamptz": "timestamp with time zone",
    "timetz": "time with time zone",
    "timestamp without time zone": "timestamp",
    "time without time zone": "time",
}

_INTS = {
    "smallint": "smallint",
    "integer": "int",
    "bigint": "bigint",
    "smallserial": "smallint",
    "serial": "int",
    "bigserial": "bigint",
    "oid": "bigint",
}
_SERIALS = {"smallserial", "serial", "bigserial"}
_TEXTUAL_MAX = {"json", "jsonb", "tsvector", "tsquery", "interval", "time with time zone", "pg_lsn", "text"}
_FIXED = {
    "uuid": SqlType("uniqueidentifier"),
    "bytea": SqlType("varbinary", length=-1),
    "boolean": SqlType("bit"),
    "date": SqlType("date"),
    "real": SqlType("real"),
    "double precision": SqlType("float"),
    "money": SqlType("money", precision=19, scale=4),
    "xml": SqlType("xml"),
    "name": SqlType("nvarchar", length=63),
    '"char"': SqlType("nchar", length=1),
    "inet": SqlType("nvarchar", length=43),
    "cidr": SqlType("nvarchar", length=43),
    "macaddr": SqlType("nvarchar", length=17),
    "macaddr8": SqlType("nvarchar", length=23),
}
_RANGES = {
    "int4range",
    "int8range",
    "numrange",
    "tsrange",
    "tstzrange",
    "daterange",
    "int4multirange",
    "int8multirange",
    "nummultirange",
    "tsmultirange",
    "tstzmultirange",
    "datemultirange",
}
_GEOMETRIC = {"point", "line", "lseg", "box", "path", "polygon", "circle"}
_MAX_DECIMAL_DIGITS = 38  # SQL Server's decimal
_NVARCHAR_MAX_LENGTH = 4000  # SQL Server's nvarchar(n) limit; longer is nvarchar(max)
_CHAR_MAX_LENGTH = 8000

# name, then an optional (typmod), then an optional "with/without time zone" (PostgreSQL writes
# timestamp(3) with time zone: the typmod between the name and the zone).
_TYPE_RE = re.compile(
    r"""^(?P<name>"char"|[a-z_][a-z0-9_]*(?:\s+(?:varying|precision))?)
        (?P<fields>\s+(?:year|month|day|hour|minute|second)(?:\s+to\s+(?:month|hour|minute|second))?)?
        \s*(?:\(\s*(?P<a>\d+)\s*(?:,\s*(?P<b>-?\d+)\s*)?\))?
        \s*(?P<zone>with(?:out)?\s+time\s+zone)?$""",
    re.X,
)


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def base_name(pg_type_text: str) -> str:
    """The canonical PostgreSQL name of a type, typmod dropped: 'int4' -> 'integer',
    'character varying(30)' -> 'character varying', 'timestamptz' -> 'timestamp with time zone'.
    Unreadable text comes back normalised (lower case, single spaces)."""
    t = _normal(pg_type_text)
    m = _TYPE_RE.match(t)
    if not m:
        return t
    name = re.sub(r"\s+", " ", m.group("name"))
    if m.group("zone"):
        name = f"{name} {m.group('zone')}"
    name = _ALIASES.get(name, name)
    return _ALIASES.get(name, name)


def is_serial(pg_type_text: str) -> bool:
    """smallserial/serial/bigserial (serial2/4/8): an integer column with a sequence default."""
    return base_name(pg_type_text) in _SERIALS


# What a name alone cannot say: an enum or a domain is carried when it is known to be one.
_UNDECLARED = (
    "; a user-defined enum or domain is carried when the script declares it (CREATE TYPE ... AS ENUM, "
    "CREATE DOMAIN) or the articles come from the catalog (--from-target)"
)


def _refuse(text: str, why: str) -> ConfigError:
    return ConfigError(f"PostgreSQL type {text.strip()!r}: {why}")


def sql_type(pg_type_text: str) -> SqlType:
    """The applier column type of a PostgreSQL type name (see the module docstring), or
    ConfigError saying why it cannot be carried."""
    t = _normal(pg_type_text)
    if not t:
        raise _refuse(pg_type_text, "empty type name")
    if t.endswith("]") or (t.startswith("_") and not t.startswith("__")) or " array" in t:
        raise _refuse(pg_type_text, "arrays cannot be carried (no SQL Server column type holds one)")
    m = _TYPE_RE.match(t)
    if not m:
        if "." in t or '"' in t:
            raise _refuse(
                pg_type_text, f"a schema-qualified or quoted name is a user-defined type{_UNDECLARED}"
            )
        raise _refuse(pg_type_text, "unreadable type name")
    name = base_name(t)
    if m.group("fields") and name != "interval":
        raise _refuse(pg_type_text, "unreadable type name")
    a = int(m.group("a")) if m.group("a") is not None else None
    b = int(m.group("b")) if m.group("b") is not None else None

    def no_typmod() -> None:
        if a is not None:
            raise _refuse(pg_type_text, f"{name} takes no length or precision")

    if name in _INTS:
        no_typmod()
        return SqlType(_INTS[name])
    if name == "numeric":
        if a is None:
            return SqlType("decimal", precision=38, scale=10)
        scale = b if b is not None else 0
        # PostgreSQL 15 takes a scale below 0 (rounding to tens, hundreds...) or above the
        # precision (only decimals): the decimal holding the same values keeps p - s integer
        # digits and max(s, 0) decimals. numeric(5,-2): decimal(7,0); numeric(3,5): decimal(5,5).
        digits = max(a - scale, 0) + max(scale, 0)
        if a < 1:
            raise _refuse(pg_type_text, "precision must be at least 1")
        if digits > _MAX_DECIMAL_DIGITS:
            raise _refuse(
                pg_type_text,
                f"its values need {digits} digits, beyond {_MAX_DECIMAL_DIGITS} (the most a decimal column holds)",
            )
        return SqlType("decimal", precision=digits, scale=max(scale, 0))
    if name == "float":
        if a is None:
            return SqlType("float")
        if not 1 <= a <= 53:
            raise _refuse(pg_type_text, "float precision must be 1..53")
        return SqlType("real") if a <= 24 else SqlType("float")
    if name in ("character", "character varying"):
        if a is not None and a < 1:
            raise _refuse(pg_type_text, "length must be at least 1")
        if name == "character":
            n = a if a is not None else 1
            if n > _NVARCHAR_MAX_LENGTH:
                raise _refuse(pg_type_text, f"character({n}) is longer than nchar's {_NVARCHAR_MAX_LENGTH}")
            return SqlType("nchar", length=n)
        if a is None or a > _NVARCHAR_MAX_LENGTH:
            return SqlType("nvarchar", length=-1)
        return SqlType("nvarchar", length=a)
    if name in ("bit", "bit varying"):
        bits = a if a is not None else (1 if name == "bit" else None)
        if bits is None or bits > _CHAR_MAX_LENGTH:
            return SqlType("varchar", length=-1)
        return SqlType("varchar", length=bits)
    if name == "time":
        return SqlType("time", precision=_fraction(a, pg_type_text))
    if name == "timestamp":
        return SqlType("datetime2", precision=_fraction(a, pg_type_text))
    if name == "timestamp with time zone":
        return SqlType("datetimeoffset", precision=_fraction(a, pg_type_text))
    if name == "interval" and m.group("fields"):
        return SqlType("nvarchar", length=-1)  # its text, whatever fields it keeps
    if name in _TEXTUAL_MAX:
        if name not in ("interval", "time with time zone"):
            no_typmod()
        return SqlType("nvarchar", length=-1)
    if name in _FIXED:
        no_typmod()
        return _FIXED[name]
    if name in _RANGES:
        raise _refuse(pg_type_text, "range types cannot be carried (no SQL Server column type holds one)")
    if name in _GEOMETRIC:
        raise _refuse(pg_type_text, "geometric types cannot be carried (no SQL Server column type holds one)")
    raise _refuse(
        pg_type_text,
        f"not a built-in scalar type applier carries (an extension's type such as citext?){_UNDECLARED}",
    )


# An enum value is one of its labels, and a label is at most NAMEDATALEN - 1 = 63 bytes
# (https://www.postgresql.org/docs/15/datatype-enum.html): at most 63 characters.
ENUM_LABEL_TYPE = SqlType("nvarchar", length=63)


def enum_note(type_text: str) -> str:
    """What an articles file notes about a column of an enum type (or a domain over one)."""
    return (
        f"enum {type_text}: carried as its label text ({ENUM_LABEL_TYPE}); the subscriber orders it "
        "as text, not in the enum's declared order"
    )


def _fraction(a: int | None, text: str) -> int:
    if a is None:
        return 6
    if not 0 <= a <= 6:
        raise _refuse(text, "fractional seconds precision must be 0..6")
    return a


_PG_NAME = re.compile(
    r'^\s*((?:"(?:[^"]|"")*"|[A-Za-z_][\w$]*)(?:\s*\.\s*(?:"(?:[^"]|"")*"|[A-Za-z_][\w$]*))*)\s*$'
)
_PG_PART = re.compile(r'"(?:[^"]|"")*"|[A-Za-z_][\w$]*')


def _user_type_name(text: str) -> str | None:
    """A user type's name as PostgreSQL resolves it (unquoted folded), or None if not a name."""
    m = _PG_NAME.match(text)
    if not m:
        return None
    parts = _PG_PART.findall(m.group(1))
    last = parts[-1]
    return str(last[1:-1].replace('""', '"') if last.startswith('"') else last.lower())


def ddl_type(text: str, aliases: Mapping[str, Alias]) -> tuple[SqlType, str, bool | None, bool]:
    """A column's type as a DDL script writes it: (type, note, the nullability its domain says,
    serial); a domain or an enum of the script (``aliases``, by name) is followed to what it is."""
    name = _user_type_name(text)
    if name is not None and name in aliases:
        alias = aliases[name]
        if alias.carried is not None:
            return alias.carried, alias.note, alias.nullable, False
        if alias.base is None:
            raise ConfigError(alias.why)
        try:
            t, note, _, serial = ddl_type(alias.base, {k: v for k, v in aliases.items() if k != name})
        except ConfigError as e:
            raise ConfigError(f"domain {name} over {alias.base}: {e}") from None
        return t, note, alias.nullable, serial
    serial = is_serial(text)
    return sql_type(text), "", False if serial else None, serial
