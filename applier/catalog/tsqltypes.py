"""SQL Server type names as a script or the catalog writes them -> :class:`SqlType`.

``[nvarchar](50)``, ``NVARCHAR(MAX)``, ``[dbo].[Name]`` (an alias type: ``CREATE TYPE ... FROM``),
``[XML]([Person].[Schema])`` (typed xml), ``double precision``. A type applier cannot carry
raises :class:`ConfigError` saying why; a type carried with a change comes with a note.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from applier.articles import SqlType, parse_type
from applier.errors import ConfigError

_PART = r'(?:\[(?:[^\]]|\]\])*\]|"(?:[^"]|"")*"|[\w@#$]+)'
_TYPE = re.compile(rf"^\s*({_PART}(?:\s*\.\s*{_PART})*(?:\s+[a-z]+)*)\s*(?:\((.*)\))?\s*$", re.I | re.S)
_PARTS = re.compile(_PART)

# several words (SQL standard spellings SQL Server accepts) -> the name it uses
_SYNONYMS = {
    "double precision": "float",
    "integer": "int",
    "dec": "decimal",
    "character": "char",
    "character varying": "varchar",
    "char varying": "varchar",
    "national character": "nchar",
    "national char": "nchar",
    "national character varying": "nvarchar",
    "national char varying": "nvarchar",
    "nchar varying": "nvarchar",
    "national text": "ntext",
    "binary varying": "varbinary",
}
_WHY = {
    "geography": "a spatial (CLR) type: applier carries no spatial values",
    "geometry": "a spatial (CLR) type: applier carries no spatial values",
    "sql_variant": "sql_variant holds values of many types; applier carries one type per column",
    "cursor": "not a column type",
    "table": "not a column type",
    "vector": "a vector type: applier carries no vectors",
    "json": "SQL Server's json type is not carried yet (use nvarchar(max) at the publisher)",
}


@dataclass(frozen=True)
class Alias:
    """A ``CREATE TYPE`` of the script: an alias of a base type, or a type applier cannot carry."""

    base: str | None  # 'nvarchar(50)'; None: not an alias (a CLR or table type)
    nullable: bool | None = None  # the alias's own NULL / NOT NULL, if it says
    why: str = ""
    # a type carried as another without a base to read (a PostgreSQL enum: its labels), and its note
    carried: SqlType | None = None
    note: str = ""


def _unquote(part: str) -> str:
    if part.startswith("["):
        return part[1:-1].replace("]]", "]")
    if part.startswith('"'):
        return part[1:-1].replace('""', '"')
    return part


def split_type(text: str) -> tuple[list[str], str | None]:
    """(name parts, the text between the parentheses or None); ConfigError if unreadable."""
    m = _TYPE.match(text)
    if not m:
        raise ConfigError(f"unreadable type {text!r}")
    words = m.group(1)
    parts = [_unquote(p) for p in _PARTS.findall(words)]
    if "." not in words and len(parts) > 1:  # several words: one name
        parts = [" ".join(p.lower() for p in parts)]
    return parts, m.group(2)


def alias_key(parts: list[str]) -> str:
    """How an alias is looked up: its name without schema, lower case (names ignore case)."""
    return parts[-1].lower()


def sql_type(text: str, aliases: Mapping[str, Alias] | None = None) -> tuple[SqlType, str, bool | None]:
    """(the type, a note if carried with a change, the alias's nullability if it says)."""
    parts, args = split_type(text)
    aliases = aliases or {}
    name = parts[-1].lower()
    name = _SYNONYMS.get(name, name)
    schema = parts[-2].lower() if len(parts) > 1 else None
    builtin = schema in (None, "sys")
    if not builtin or name not in _BUILTIN:
        alias = aliases.get(alias_key(parts))
        if alias is not None:
            if alias.base is None:
                raise ConfigError(alias.why)
            base, note, _ = sql_type(alias.base)
            return base, note, alias.nullable
        what = ".".join(parts)
        raise ConfigError(
            f"user-defined type {what}: not an alias type of the script (CREATE TYPE {what} FROM <base type>)"
        )
    if name in _WHY:
        raise ConfigError(_WHY[name])
    if name == "xml":
        note = (
            f"typed xml: carried as xml; the XML schema collection {args.strip()} stays at the publisher"
            if args
            else ""
        )
        return parse_type("xml"), note, None
    if name in ("timestamp", "rowversion"):
        return (
            parse_type("binary(8)"),
            f"{name}: carried as binary(8), as SQL Server replication creates it at a subscriber "
            "(a rowversion cannot be written)",
            None,
        )
    if name == "sysname":
        return parse_type("nvarchar(128)"), "", False
    if name == "float" and args and args.strip().isdigit() and int(args) <= 24:
        return parse_type("real"), "", None
    if name == "float":
        return parse_type("float"), "", None
    return parse_type(f"{name}({args})" if args else name), "", None


_BUILTIN = {
    "bit", "tinyint", "smallint", "int", "bigint", "decimal", "numeric", "money", "smallmoney",
    "float", "real", "char", "varchar", "nchar", "nvarchar", "text", "ntext", "xml", "date",
    "time", "datetime", "datetime2", "smalldatetime", "datetimeoffset", "uniqueidentifier",
    "binary", "varbinary", "image", "timestamp", "rowversion", "hierarchyid", "sysname",
    *_WHY,
}  # fmt: skip
