"""wal2json's regression examples (tests/data/captures/wal2json) as applier inputs: the articles
from each example's CREATE TABLEs (types through applier.catalog.pgtypes), the rows its tables
held when the slot was created (the snapshot), and the rows a subscriber must hold once the
captured changes are applied: written by hand from the example's .sql and .out.

Keys. Replication needs one; wal2json's examples also have tables without a primary key:
* ``table_without_pk`` is keyed by ``a`` (its smallserial: every row the examples insert has
  its own). wal2json gives its updates and deletes only under REPLICA IDENTITY FULL (delete3,
  update3, whose old rows hold ``a``); elsewhere they are not captured at all (a WARNING at the
  publisher), so the subscriber keeps the row: that is the capture's outcome.
* ``table_with_unique`` is keyed by its unique index ``(g, n)``: its REPLICA IDENTITY USING
  INDEX (delete4, update4) gives exactly those old keys.
* ``w2j_pk_without_pk`` (pk) is keyed by ``a``; only its insert is captured.
* ``w2j_pk_with_ri`` (pk) by ``a``, its unique replica identity index.
* ``tbl`` (include_xids, include_lsn) by ``id``; those examples' .out hold only the count checks,
  so their captures are written from the .sql (see the folder's README).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from applier.catalog.pgtypes import sql_type
from applier.config import parse_config

DATA = Path(__file__).resolve().parents[1] / "data" / "captures" / "wal2json"

KEYS = {
    "table_without_pk": ["a"],
    "table_with_unique": ["g", "n"],
    "w2j_pk_without_pk": ["a"],
    "w2j_pk_with_ri": ["a"],
    "tbl": ["id"],
}

_IDENT = r'(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_]*)'


def _unquote(name: str) -> str:
    return name[1:-1].replace('""', '"') if name.startswith('"') else name.lower()


def _items(body: str) -> list[str]:
    """A CREATE TABLE body split at its top-level commas."""
    items, depth, cur = [], 0, ""
    for ch in body:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [i for i in (*items, cur.strip()) if i]


def tables(example: str) -> list[dict[str, Any]]:
    """The [[articles]] entries of an example's CREATE TABLE statements."""
    sql = (DATA / f"{example}.sql").read_text()
    out: list[dict[str, Any]] = []
    for m in re.finditer(rf"CREATE TABLE ({_IDENT}(?:\.{_IDENT})?) \((.*?)\);\n", sql, re.S):
        parts = re.findall(_IDENT, m.group(1))
        schema, table = (
            (_unquote(parts[0]), _unquote(parts[1])) if len(parts) == 2 else ("public", _unquote(parts[0]))
        )
        cols: list[dict[str, Any]] = []
        key: list[str] = []
        for line in _items(m.group(2)):
            pk = re.match(r"PRIMARY KEY\s*\((.*)\)", line, re.I)
            if pk:
                key = [c.strip() for c in pk.group(1).split(",")]
                continue
            if re.match(r"UNIQUE\s*\(", line, re.I):
                continue
            cm = re.match(rf"({_IDENT})\s+(.*)$", line)
            assert cm, line
            name, rest = _unquote(cm.group(1)), cm.group(2)
            not_null = bool(re.search(r"not null", rest, re.I))
            inline_pk = bool(re.search(r"primary key", rest, re.I))
            pg_type = re.sub(r"\s+(not null|primary key).*$", "", rest, flags=re.I).strip()
            cols.append(
                {"name": name, "type": str(sql_type(pg_type)), "nullable": not (not_null or inline_pk)}
            )
            if inline_pk:
                key = [name]
        key = key or KEYS[table]
        for c in cols:
            if c["name"] in key:
                c["nullable"] = False
        out.append({"schema": schema, "table": table, "columns": cols, "key": key})
    return out


def config(example: str, streams: int = 4, subscription: str | None = None):  # type: ignore[no-untyped-def]
    return parse_config(
        {
            "run": {
                "streams": streams,
                "commit_batch_size": 1,
                "subscription": subscription or f"w2j_{example}",
            },
            "articles": tables(example),
        },
        f"<wal2json example {example}>",
    )


def articles(example: str) -> dict[str, Any]:
    return {a.name: a for a in config(example).articles}


# -- the rows of the examples ----------------------------------------------------------------
# The row every example inserts first (INSERT ... VALUES(1, 2, 3, 3.54, 876.563452345, 1.23,
# 'teste', 'testando', 'um texto longo', B'001110010101010', '2013-11-02 17:30:52',
# '2013-02-04', true, '{ "a": 123 }', 'Old Old Parr'::tsvector)) in canonical encoding, as the
# capture shows it: the examples run with extra_float_digits = 0, so the real 876.563452345
# (float4 876.5634765625) travels as 876.563, and the snapshot holds what the capture carries;
# the tsvector is its normalised text.
ROW = {
    "a": 1,
    "b": 1,
    "c": 2,
    "d": 3,
    "e": "3.540",
    "f": 876.56298828125,  # float4(876.563): wal2json's text of the stored real
    "g": 1.23,
    "h": "teste     ",
    "i": "testando",
    "j": "um texto longo",
    "k": "001110010101010",
    "l": "2013-11-02T17:30:52.000000",
    "m": "2013-02-04",
    "n": True,
    "o": '{ "a": 123 }',
    "p": "'Old' 'Parr'",
}


def row(**changes: Any) -> dict[str, Any]:
    return {**ROW, **changes}
