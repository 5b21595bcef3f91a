"""Plan: a routed command -> the call that applies it. Pure functions, no I/O.

Parameter orders are those of seed 003 (and 002): CALL insert c1..cn; CALL update
c1..cn, pkc1..pkck; SCALL update changed values only (others NULL), pkc, bitmap; MCALL
update all values, pkc, bitmap; XCALL update before image then after image; CALL delete
pkc; XCALL delete the before image. XCALL before images of LOB columns are NULL.
SQL statement delivery binds the values its statement names (:func:`statement_params`);
NONE plans nothing (the operation is not replicated).

There is one planner. :class:`CompiledPlan` takes every decision for one article and
operation once (call text, parameter order, one value converter per column from
:func:`applier.values.param_converter`, bitmaps per changed-column set), then turns each
canonical row into its :class:`Call`: planning is a stream task's main CPU cost, on the
same cores as the subscriber. :class:`Planner` keeps one compiled plan per (article, op);
the stream tasks, the benchmark's ceiling and ``applier lint`` all plan through it.

A canonical row is a mapping with ``article``, ``op``, ``before`` and ``after`` (image JSON
texts), ``changed`` and, for updates and deletes, ``key_before`` (the key text of the before
image, :func:`applier.values.key_text`): the key is read from it, so the before image is
parsed only where XCALL passes it whole.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from applier.articles import Article, Syntax
from applier.dialects.base import Dialect, bit_of, bitmap_width
from applier.values import dumps_image, param_converter

Row = Mapping[str, Any]
_loads = json.JSONDecoder().decode  # json.loads without its per-call argument checks


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


def statement_columns(article: Article, changed: Sequence[str] | None) -> tuple[str, ...]:
    """Columns an SQL-statement update sets: the changed ones in article order, identity
    columns never (DESIGN); every settable column when the source does not say what changed."""
    ch = None if changed is None else set(changed)
    return tuple(c.name for c in article.replicated if not c.identity and (ch is None or c.name in ch))


def _conv(f: Callable[[Any], Any] | None, v: Any) -> Any:
    return v if v is None or f is None else f(v)


class Parameters:
    """The bound values of one article's operation, in the seed's parameter order."""

    def __init__(self, article: Article, op: str) -> None:
        self.article = article
        self.op = op
        self.syntax = article.delivery(op).syntax
        cols = article.replicated
        self.cols = [(c.name, param_converter(c.type), c.type.is_lob) for c in cols]
        self.index = {c.name: i for i, c in enumerate(cols)}
        self.keys = [(c.name, param_converter(c.type)) for c in article.key_columns]
        self.bitmaps: dict[tuple[str, ...], bytes] = {}

    def _pk(self, row: Row) -> tuple[Any, ...]:
        kb = row.get("key_before")
        if kb is not None:
            return tuple(_conv(f, v) for (_, f), v in zip(self.keys, _loads(kb), strict=True))
        before = _loads(row["before"])
        return tuple(_conv(f, before[n]) for n, f in self.keys)

    def _image(self, image: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple([_conv(f, image.get(n)) for n, f, _ in self.cols])

    def _bitmap(self, changed: tuple[str, ...]) -> bytes:
        b = self.bitmaps.get(changed)
        if b is None:
            b = self.bitmaps[changed] = bitmap(self.article, changed)
        return b

    def of(self, row: Row) -> tuple[Any, ...]:
        """The procedure's parameters for one canonical row (CALL, SCALL, MCALL, XCALL)."""
        op, syntax = self.op, self.syntax
        if op == "I":
            return self._image(_loads(row["after"]))
        if syntax == Syntax.XCALL:
            before = _loads(row["before"])
            old = tuple([None if lob else _conv(f, before.get(n)) for n, f, lob in self.cols])
            return old if op == "D" else old + self._image(_loads(row["after"]))
        pk = self._pk(row)
        if op == "D":
            return pk
        after = _loads(row["after"])
        if syntax == Syntax.SCALL:
            changed = tuple(row["changed"] or ())
            vals: list[Any] = [None] * len(self.cols)
            cols, index = self.cols, self.index
            for n in changed:
                i = index[n]
                vals[i] = _conv(cols[i][1], after.get(n))
            return (*vals, *pk, self._bitmap(changed))
        new = self._image(after)
        if syntax == Syntax.MCALL:
            return (*new, *pk, self._bitmap(tuple(row["changed"] or ())))
        return new + pk  # CALL

    def statement(self, row: Row, set_cols: Sequence[str]) -> tuple[Any, ...]:
        """Bound values of an SQL statement (:meth:`Dialect.statement_sql`): inserts c1..cn;
        updates the values of set_cols then pkc1..pkck; deletes pkc1..pkck."""
        if self.op == "I":
            return self._image(_loads(row["after"]))
        pk = self._pk(row)
        if self.op == "D":
            return pk
        after = _loads(row["after"])
        return tuple(_conv(self.cols[self.index[n]][1], after.get(n)) for n in set_cols) + pk


PROCEDURE_SYNTAXES = (Syntax.CALL, Syntax.SCALL, Syntax.MCALL, Syntax.XCALL)


class CompiledPlan:
    """Every decision for one article and operation, taken once: the call text, the parameter
    order and converters, the bitmaps, the statement texts of SQL delivery, and what set-based
    apply needs (the set procedure's call, the changed-column masks)."""

    def __init__(self, dialect: Dialect, article: Article, op: str) -> None:
        self.dialect = dialect
        self.article = article
        self.op = op
        self.syntax = article.delivery(op).syntax
        self.parameters = Parameters(article, op)
        self.sql = dialect.call_sql(article, op) if self.syntax in PROCEDURE_SYNTAXES else None
        self.statements: dict[tuple[str, ...], str] = {}
        self.set_sql = dialect.set_call_sql(article, op) if dialect.set_eligible(article, op) else None
        self.mask_name = dialect.set_mask_name(article)
        self.mask_key = json.dumps(self.mask_name)
        self.names = [c.name for c in article.replicated]
        self.masks: dict[tuple[str, ...] | None, str] = {}

    def call(self, row: Row) -> Call | None:
        """The call of one canonical row; None when the operation is not replicated (NONE)."""
        if self.sql is not None:
            return Call(self.sql, self.parameters.of(row))
        if self.syntax == Syntax.NONE:
            return None
        set_cols = statement_columns(self.article, row["changed"]) if self.op == "U" else ()
        sql = self.statements.get(set_cols)
        if sql is None:
            sql = self.statements[set_cols] = self.dialect.statement_sql(self.article, self.op, set_cols)
        return Call(sql, self.parameters.statement(row, set_cols))

    def mask(self, row: Row) -> str:
        """An update's changed-column mask for the set procedure ('1' = set the column)."""
        changed = tuple(row["changed"] or ()) if self.syntax != Syntax.CALL else None
        m = self.masks.get(changed)
        if m is None:
            chosen = set(self.names) if changed is None else set(changed)
            m = self.masks[changed] = "".join("1" if n in chosen else "0" for n in self.names)
        return m


class Planner:
    """Turns canonical rows into calls for one dialect, through one compiled plan per
    (article, op)."""

    def __init__(self, dialect: Dialect, articles: Sequence[Article]) -> None:
        self.dialect = dialect
        self.articles = {a.name: a for a in articles}
        self._compiled: dict[tuple[str, str], CompiledPlan] = {}

    def compiled(self, article: str, op: str) -> CompiledPlan:
        key = (article, op)
        plan = self._compiled.get(key)
        if plan is None:
            plan = self._compiled[key] = CompiledPlan(self.dialect, self.articles[article], op)
        return plan

    def of_row(self, row: Row) -> CompiledPlan:
        return self.compiled(row["article"], row["op"])

    def call(self, row: Row) -> Call | None:
        """The call of one canonical row (None: the operation is not replicated)."""
        return self.compiled(row["article"], row["op"]).call(row)

    def plan(
        self, article: str, op: str, before: str | None, after: str | None, changed: Sequence[str] | None
    ) -> Call | None:
        """The call of one command given as image texts (None: not replicated)."""
        return self.call({"article": article, "op": op, "before": before, "after": after, "changed": changed})


def _row(
    op: str, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None, changed: Sequence[str]
) -> dict[str, Any]:
    return {
        "op": op,
        "before": dumps_image(before) if before is not None else None,
        "after": dumps_image(after) if after is not None else None,
        "changed": list(changed),
    }


def call_params(
    article: Article,
    op: str,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    changed: Sequence[str],
) -> tuple[Any, ...]:
    """Bound values for the procedure of op, in the seed's parameter order, from images given
    as dicts of canonical values (the same planner as the stream tasks')."""
    return Parameters(article, op).of(_row(op, before, after, changed))


def statement_params(
    article: Article,
    op: str,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    set_cols: Sequence[str],
) -> tuple[Any, ...]:
    """Bound values of an SQL statement from images given as dicts (see
    :meth:`Parameters.statement`)."""
    return Parameters(article, op).statement(_row(op, before, after, ()), set_cols)
