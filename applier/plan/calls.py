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
from itertools import chain
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from applier.articles import Article, Syntax
from applier.dialects.base import Dialect
from applier.dialects.procedures import bit_of, bitmap_width
from applier.plan.columns import UNREAD, value_columns
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


def _conv(f: Callable[[Any], Any] | None, v: Any, null: Any = None) -> Any:
    if v is None:
        return null
    return v if f is None else f(v)


class Parameters:
    """The bound values of one article's operation, in the seed's parameter order."""

    def __init__(self, article: Article, op: str, dialect: Dialect | None = None) -> None:
        self.article = article
        self.op = op
        self.syntax = article.delivery(op).syntax
        cols = article.replicated
        conv = dialect.param_converter if dialect is not None else param_converter
        self.cols = [(c.name, conv(c.type), c.type.is_lob) for c in cols]
        self.index = {c.name: i for i, c in enumerate(cols)}
        self.keys = [(c.name, conv(c.type)) for c in article.key_columns]
        # what a NULL of each column binds as (Dialect.null_param: None, or a typed NULL)
        null = dialect.null_param if dialect is not None else (lambda t: None)
        self.nulls = [null(c.type) for c in cols]
        self.key_nulls = [null(c.type) for c in article.key_columns]
        self.bitmaps: dict[tuple[str, ...], bytes] = {}

    def _pk(self, row: Row) -> tuple[Any, ...]:
        kb = row.get("key_before")
        nulls = self.key_nulls
        if kb is not None:
            return tuple(_conv(f, v, z) for (_, f), v, z in zip(self.keys, _loads(kb), nulls, strict=True))
        before = _loads(row["before"])
        return tuple(_conv(f, before[n], z) for (n, f), z in zip(self.keys, nulls, strict=True))

    def _image(self, image: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple([_conv(f, image.get(n), z) for (n, f, _), z in zip(self.cols, self.nulls, strict=True)])

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
            old = tuple(
                [
                    z if lob else _conv(f, before.get(n), z)
                    for (n, f, lob), z in zip(self.cols, self.nulls, strict=True)
                ]
            )
            return old if op == "D" else old + self._image(_loads(row["after"]))
        pk = self._pk(row)
        if op == "D":
            return pk
        after = _loads(row["after"])
        if syntax == Syntax.SCALL:
            changed = tuple(row["changed"] or ())
            vals: list[Any] = list(self.nulls)
            cols, index = self.cols, self.index
            for n in changed:
                i = index[n]
                vals[i] = _conv(cols[i][1], after.get(n), vals[i])
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
        index, cols, nulls = self.index, self.cols, self.nulls
        return tuple(_conv(cols[index[n]][1], after.get(n), nulls[index[n]]) for n in set_cols) + pk


PROCEDURE_SYNTAXES = (Syntax.CALL, Syntax.SCALL, Syntax.MCALL, Syntax.XCALL)


class Values(Protocol):
    """Rows as Arrow columns (a stream task's share, :class:`applier.apply.share.Share`)."""

    def has(self, name: str) -> bool: ...

    def arrow(self, name: str, start: int, stop: int) -> pa.Array:
        """Column ``name`` of rows start..stop-1."""
        ...


def _pylist(f: Callable[[Any], Any] | None, values: pa.Array, null: Any = None) -> list[Any]:
    """Values as the per-row planner binds them: converted by the column's converter, a NULL
    as the column's NULL binds (:meth:`Dialect.null_param`)."""
    out: list[Any] = values.to_pylist()
    if f is None:
        return out if null is None or not values.null_count else [null if v is None else v for v in out]
    return [null if v is None else f(v) for v in out]


def _flat(columns: Sequence[Sequence[Any]]) -> list[Any]:
    """Row-major: the first row's values, then the second's, ..."""
    return list(chain.from_iterable(zip(*columns, strict=True)))


class FastParameters:
    """:meth:`Parameters.of` for a run of rows at once, from the value columns
    (:mod:`applier.plan.columns`): CALL, SCALL and MCALL. The same values, converted by the
    same converters, in the same order, the same bitmap objects."""

    def __init__(self, p: Parameters) -> None:
        self.p = p
        vc = value_columns(p.article)
        self.after = [(name, f, z) for name, (_, f, _), z in zip(vc.after, p.cols, p.nulls, strict=True)]
        self.key = [(name, f, z) for name, (_, f), z in zip(vc.key, p.keys, p.key_nulls, strict=True)]
        op = p.op
        # what the rows must carry for their values to be these: the texts the per-row
        # planner reads (a missing one raises there, so those rows go that way)
        self.needs = (["after"] if op in ("I", "U") else []) + (["key_before"] if op in ("U", "D") else [])
        self.width = (
            len(self.after) * (op != "D")
            + len(self.key) * (op != "I")
            + (op == "U" and p.syntax in (Syntax.SCALL, Syntax.MCALL))
        )
        self.masks: dict[str, tuple[tuple[bool, ...], bytes]] = {}

    def usable(self, rows: Values) -> bool:
        return all(rows.has(name) for name, _, _ in self.after + self.key)

    def _mask(self, key: str) -> tuple[tuple[bool, ...], bytes]:
        """Which columns a changed set (its names joined by NUL) sets, and its bitmap."""
        m = self.masks.get(key)
        if m is None:
            changed = tuple(key.split("\x00")) if key else ()
            chosen = [False] * len(self.p.cols)
            for n in changed:
                chosen[self.p.index[n]] = True
            m = self.masks[key] = (tuple(chosen), self.p._bitmap(changed))
        return m

    def flat(self, rows: Values, start: int, stop: int) -> list[Any] | None:
        """The parameters of rows start..stop-1, one call after the other (None: some row lacks
        a text the per-row planner reads, or has values the columns could not hold
        (:data:`~applier.plan.columns.UNREAD`): plan those rows one by one)."""
        if any(rows.arrow(n, start, stop).null_count for n in self.needs):
            return None
        if not rows.has(UNREAD) or pc.any(rows.arrow(UNREAD, start, stop)).as_py():
            return None  # values the typed columns do not hold as a row's JSON gives them
        p, op = self.p, self.p.op
        key = [] if op == "I" else [_pylist(f, rows.arrow(name, start, stop), z) for name, f, z in self.key]
        if op == "D":
            return _flat(key)
        if op == "I" or p.syntax == Syntax.CALL:
            return _flat([_pylist(f, rows.arrow(name, start, stop), z) for name, f, z in self.after] + key)
        # SCALL, MCALL: per row its changed set (NULL: none, as an empty one), as an index into
        # the distinct sets of the run
        changed = pc.fill_null(pc.binary_join(rows.arrow("changed", start, stop), "\x00"), "")
        encoded = pc.dictionary_encode(changed)
        sets = [self._mask(k) for k in encoded.dictionary.to_pylist()]
        which = encoded.indices
        bitmaps = list(map([m[1] for m in sets].__getitem__, which.to_pylist()))
        if p.syntax == Syntax.MCALL:
            return _flat(
                [_pylist(f, rows.arrow(name, start, stop), z) for name, f, z in self.after] + key + [bitmaps]
            )
        # SCALL: the changed values only, the others NULL
        after = []
        for i, (name, f, z) in enumerate(self.after):
            chosen = pc.take(pa.array([m[0][i] for m in sets], pa.bool_()), which)
            values = rows.arrow(name, start, stop)
            after.append(_pylist(f, pc.if_else(chosen, values, pa.scalar(None, values.type)), z))
        return _flat([*after, *key, bitmaps])


class CompiledPlan:
    """Every decision for one article and operation, taken once: the call text, the parameter
    order and converters, the bitmaps, the statement texts of SQL delivery, and what set-based
    apply needs (the set procedure's call, the changed-column masks)."""

    def __init__(self, dialect: Dialect, article: Article, op: str) -> None:
        self.dialect = dialect
        self.article = article
        self.op = op
        self.syntax = article.delivery(op).syntax
        self.parameters = Parameters(article, op, dialect)
        self.sql = dialect.call_sql(article, op) if self.syntax in PROCEDURE_SYNTAXES else None
        self.statements: dict[tuple[str, ...], str] = {}
        self.set_sql = dialect.set_call_sql(article, op) if dialect.set_eligible(article, op) else None
        self.mask_name = dialect.set_mask_name(article)
        self.mask_key = json.dumps(self.mask_name)
        self.names = [c.name for c in article.replicated]
        self.masks: dict[tuple[str, ...] | None, str] = {}
        fast = self.sql is not None and self.syntax in (Syntax.CALL, Syntax.SCALL, Syntax.MCALL)
        self.fast = FastParameters(self.parameters) if fast and op in ("I", "U", "D") else None

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
