"""A small reader of the AdventureWorks DDL kept in tests/data/adventureworks/ (MIT, see tests/data/README.md):
CREATE TYPE aliases, CREATE TABLE column lists and the PRIMARY KEY statements -> Articles.

Only what that file uses is read: bracketed names, alias types, IDENTITY, NOT NULL,
computed columns (``[x] AS expr``, not replicated) and typed xml (``[XML](collection)``,
read as xml: the schema collection does not travel).
"""

from __future__ import annotations

import re
from pathlib import Path

from applier.articles import Article, Column, parse_type

DDL = Path(__file__).resolve().parents[1] / "data" / "adventureworks" / "instawdb_selected_tables.sql"


_ALIAS_RE = re.compile(r"CREATE TYPE \[(\w+)\] FROM (\w+(?:\(\d+\))?)", re.I)
_TABLE_RE = re.compile(r"CREATE TABLE \[(\w+)\]\.\[(\w+)\]\((.*?)\n\) ON \[PRIMARY\];", re.I | re.S)
_PK_RE = re.compile(
    r"ALTER TABLE \[(\w+)\]\.\[(\w+)\] WITH CHECK ADD\s+CONSTRAINT \[\w+\] PRIMARY KEY CLUSTERED\s*\((.*?)\)",
    re.I | re.S,
)
_COL_RE = re.compile(r"^\[(\w+)\]\s+(.*?),?$")
_TYPE_RE = re.compile(r"^\[?(\w+)\]?\s*(\(([^)]*)\))?")


def read_articles(text: str) -> list[Article]:
    aliases = {m.group(1).lower(): m.group(2) for m in _ALIAS_RE.finditer(text)}
    keys = {
        (m.group(1), m.group(2)): tuple(re.findall(r"\[(\w+)\]", m.group(3))) for m in _PK_RE.finditer(text)
    }
    out = []
    for m in _TABLE_RE.finditer(text):
        schema, table, body = m.group(1), m.group(2), m.group(3)
        cols = []
        for raw in body.splitlines():
            line = raw.strip()
            cm = _COL_RE.match(line)
            if not cm:
                continue  # CONSTRAINT lines, blank lines
            name, rest = cm.group(1), cm.group(2)
            if rest.upper().startswith("AS "):
                cols.append(Column(name, parse_type("nvarchar(max)"), computed=True))
                continue
            tm = _TYPE_RE.match(rest)
            assert tm, line
            base, args = tm.group(1).lower(), tm.group(3)
            if base == "xml":
                type_text = "xml"  # typed xml: the schema collection stays at the publisher
            elif base in aliases:
                type_text = aliases[base]
            else:
                type_text = f"{base}({args})" if args else base
            cols.append(
                Column(
                    name,
                    parse_type(type_text),
                    nullable="NOT NULL" not in rest.upper(),
                    identity="IDENTITY" in rest.upper(),
                )
            )
        out.append(Article(schema, table, tuple(cols), keys[(schema, table)]))
    return out


def articles() -> list[Article]:
    """The AdventureWorks tables as articles (the file is in the repository: no skip)."""
    return read_articles(DDL.read_text(encoding="utf-8"))
