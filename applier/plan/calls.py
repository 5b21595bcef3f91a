"""Plan: a routed command -> the call that applies it. Pure functions, no I/O.

Parameter orders are those of seed 003 (and 002): CALL insert c1..cn; CALL update
c1..cn, pkc1..pkck; SCALL update changed values only (others NULL), pkc, bitmap; MCALL
update all values, pkc, bitmap; XCALL update before image then after image; CALL delete
pkc; XCALL delete the before image. XCALL before images of LOB columns are NULL.
SQL statement delivery binds the values its statement names (:func:`statement_params`);
NONE plans nothing (the operation is not replicated).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from applier.articles import Article, Syntax
from applier.dialects.base import Dialect, bit_of, bitmap_width
from applier.values import to_param


@dataclass(frozen=True)
class Call:
    """One statement to send: its text (with ? markers) and the values to bind."""

    sql: str
    params: tuple[Any, ...]


def bitmap(article: Article, changed: Sequence[str]) -> bytes:
    """SCALL/MCALL bitmap: column i (1-based) is bit 2^((i-1)%8) of byte (i-1)/8+1."""
    out = bytearray(bitmap_width(len(article.column_names)))
    for name in changed:
        i = article.column_names.index(name) + 1
        byte, bit = bit_of(i)
        out[byte - 1] |= bit
    return bytes(out)


def call_params(
    article: Article,
    op: str,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    changed: Sequence[str],
) -> tuple[Any, ...]:
    """Bound values for the procedure of op, in the seed's parameter order."""
    cols = article.replicated
    syntax = article.delivery(op).syntax
    if op == "I":
        assert after is not None
        return tuple(to_param(c.type, after.get(c.name)) for c in cols)
    assert before is not None
    pk = tuple(to_param(c.type, before[c.name]) for c in article.key_columns)
    old = tuple(None if c.type.is_lob else to_param(c.type, before.get(c.name)) for c in cols)
    if op == "D":
        return old if syntax == Syntax.XCALL else pk
    assert after is not None
    new = tuple(to_param(c.type, after.get(c.name)) for c in cols)
    if syntax == Syntax.XCALL:
        return old + new
    if syntax == Syntax.SCALL:
        ch = set(changed)
        vals = tuple(v if c.name in ch else None for c, v in zip(cols, new, strict=True))
        return vals + pk + (bitmap(article, changed),)
    if syntax == Syntax.MCALL:
        return new + pk + (bitmap(article, changed),)
    return new + pk  # CALL


def statement_columns(article: Article, changed: Sequence[str] | None) -> tuple[str, ...]:
    """Columns an SQL-statement update sets: the changed ones in article order, identity
    columns never (DESIGN); every settable column when the source does not say what changed."""
    ch = None if changed is None else set(changed)
    return tuple(c.name for c in article.replicated if not c.identity and (ch is None or c.name in ch))


def statement_params(
    article: Article,
    op: str,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    set_cols: Sequence[str],
) -> tuple[Any, ...]:
    """Bound values of an SQL statement (:meth:`Dialect.statement_sql`): inserts c1..cn;
    updates the values of set_cols then pkc1..pkck; deletes pkc1..pkck."""
    if op == "I":
        assert after is not None
        return tuple(to_param(c.type, after.get(c.name)) for c in article.replicated)
    assert before is not None
    pk = tuple(to_param(c.type, before[c.name]) for c in article.key_columns)
    if op == "D":
        return pk
    assert after is not None
    return tuple(to_param(article.column(n).type, after.get(n)) for n in set_cols) + pk


class Planner:
    """Turns canonical rows into calls for one dialect; caches call text per article and op."""

    def __init__(self, dialect: Dialect, articles: Sequence[Article]) -> None:
        self.dialect = dialect
        self.articles = {a.name: a for a in articles}
        self._sql: dict[tuple[str, str], str | None] = {}
        self._statements: dict[tuple[str, str, tuple[str, ...]], str] = {}

    def call_sql(self, article: Article, op: str) -> str | None:
        """Procedure call text of op; None for NONE (not replicated) and SQL statements."""
        key = (article.name, op)
        if key not in self._sql:
            syntax = article.delivery(op).syntax
            if syntax in (Syntax.NONE, Syntax.SQL):
                self._sql[key] = None
            else:
                self._sql[key] = self.dialect.call_sql(article, op)
        return self._sql[key]

    def statement_sql(self, article: Article, op: str, set_cols: tuple[str, ...]) -> str:
        key = (article.name, op, set_cols)
        if key not in self._statements:
            self._statements[key] = self.dialect.statement_sql(article, op, set_cols)
        return self._statements[key]

    def plan(
        self, article_name: str, op: str, before: str | None, after: str | None, changed: Sequence[str] | None
    ) -> Call | None:
        """None when the article does not replicate op (NONE)."""
        article = self.articles[article_name]
        syntax = article.delivery(op).syntax
        if syntax == Syntax.NONE:
            return None
        b = json.loads(before) if before else None
        a = json.loads(after) if after else None
        if syntax == Syntax.SQL:
            set_cols = statement_columns(article, changed) if op == "U" else ()
            sql = self.statement_sql(article, op, set_cols)
            return Call(sql, statement_params(article, op, b, a, set_cols))
        call = self.call_sql(article, op)
        assert call is not None
        return Call(call, call_params(article, op, b, a, changed or ()))
