"""The value columns of laid-out rows, read from their JSON texts by pyarrow, vectorized.

:mod:`applier.plan.columns` names the columns; this module fills them for an Arrow batch of
laid-out rows (``article``, ``after``, ``key_before``, ...) where the stream task's rows are
Arrow already: as the plan phase writes a stream's feed file, or as a stream task receives
its batches from Spark. One ``pyarrow.json`` read per article and image of a batch, each with
the article's explicit schema; the values scattered back into the shared columns by position.

A value the typed columns cannot hold as the per-row planner binds it (a JSON number in a
string-class column, an integer beyond int64, text with a lone surrogate, a key of another
length) leaves the values of its image (or key) NULL and marks the row in :data:`UNREAD`:
the planner plans the runs of such rows row by row (:meth:`applier.plan.calls.FastParameters.flat`),
from the JSON texts, so no value is bound but the one the per-row planner binds. (pyarrow
refuses the whole text then: that article's image of the batch is read by ``json``, row by
row, to find the rows.)
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from applier.articles import Article, Column
from applier.plan.columns import CLASS_TYPES, UNREAD, column_types, value_class, value_columns

ARROW_TYPES = {"bigint": pa.int64(), "boolean": pa.bool_(), "double": pa.float64(), "string": pa.string()}
_INT64 = (-(1 << 63), (1 << 63) - 1)
_loads = json.JSONDecoder().decode
# one JSON scalar of a key array as canonical JSON writes it: a string, or a number, true,
# false or null (no nesting, no white space)
_SCALAR = r'("(?:[^"\\]|\\.)*"|[^,"\[\]{}]+)'


def _fits(letter: str, v: Any) -> bool:
    """Whether a parsed JSON value is one a typed column of class ``letter`` holds as the
    per-row planner binds it (NULL always)."""
    if v is None:
        return True
    if letter == "i":
        return type(v) is int and _INT64[0] <= v <= _INT64[1]
    if letter == "b":
        return type(v) is bool
    if letter == "f":
        return type(v) is float  # an integer literal binds as an int row by row
    if type(v) is not str:
        return False
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _lines(texts: pa.Array) -> pa.Buffer:
    """The texts (none NULL), each followed by a newline, as one buffer (one copy, in C++)."""
    joined = pc.binary_join_element_wise(texts, "\n", "")
    _, offsets, data = joined.buffers()
    if not len(joined) or data is None:
        return pa.py_buffer(b"")
    bounds = np.frombuffer(offsets, np.int32, count=len(joined) + 1, offset=4 * joined.offset)
    start, stop = int(bounds[0]), int(bounds[-1])
    return data.slice(start, stop - start)


_INT_KEY = r"^\[-?(?:0|[1-9][0-9]*)\]$"  # a key of one JSON integer


def _int_key(keys: pa.Array) -> pa.Array | None:
    """Keys of one integer each as int64, cast from their text (a tenth of a JSON read's
    time); None when some key is not one JSON integer of int64 (read as JSON then)."""
    if not pc.all(pc.match_substring_regex(keys, _INT_KEY), min_count=0).as_py():
        return None
    try:
        return pc.cast(pc.utf8_slice_codeunits(keys, 1, -1), pa.int64())
    except pa.ArrowInvalid:  # beyond int64
        return None


class _Image:
    """How one article's image (or key) is read: the field names of its JSON objects, each
    field's value column and class."""

    def __init__(self, fields: Sequence[tuple[str, str, str]]) -> None:
        self.fields = list(fields)  # (JSON field, value column, class letter)
        self.types = [ARROW_TYPES[CLASS_TYPES[letter]] for _, _, letter in self.fields]
        self.schema = pa.schema([(f, t) for (f, _, _), t in zip(self.fields, self.types, strict=True)])
        self.options = pj.ParseOptions(explicit_schema=self.schema, unexpected_field_behavior="ignore")

    def read(self, lines: pa.Array) -> tuple[list[pa.Array], pa.Array]:
        """Per field its values, and per row whether the row's values could not be read,
        of ``lines`` (JSON objects, none NULL)."""
        n = len(lines)
        if not self.fields:
            return [], pa.array(np.zeros(n, bool))
        buf = _lines(lines)
        try:
            table = pj.read_json(
                pa.BufferReader(buf),
                read_options=pj.ReadOptions(use_threads=False, block_size=max(buf.size + 1, 1 << 20)),
                parse_options=self.options,
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return self._one_by_one(lines)
        if table.num_rows != n:  # a text that is not one object (never canonical)
            return self._one_by_one(lines)
        return [table.column(i).combine_chunks() for i in range(len(self.fields))], pa.array(
            np.zeros(n, bool)
        )

    def _one_by_one(self, lines: pa.Array) -> tuple[list[pa.Array], pa.Array]:
        """:meth:`read` where pyarrow refused the texts: each parsed by ``json``, a row whose
        value does not fit its column (or whose text is no object) marked unread."""
        cols: list[list[Any]] = [[] for _ in self.fields]
        unread = []
        for text in lines.to_pylist():
            try:
                obj = _loads(text)
            except ValueError:
                obj = None
            got = [obj.get(f) for f, _, _ in self.fields] if isinstance(obj, dict) else None
            ok = got is not None and all(
                _fits(letter, v) for v, (_, _, letter) in zip(got, self.fields, strict=True)
            )
            unread.append(not ok)
            for c, v in zip(cols, got if ok and got is not None else [None] * len(self.fields), strict=True):
                c.append(v)
        return [pa.array(c, t) for c, t in zip(cols, self.types, strict=True)], pa.array(unread, pa.bool_())


class _ArticleReader:
    """One article's value columns from its rows' ``after`` and ``key_before`` texts."""

    def __init__(self, article: Article) -> None:
        vc = value_columns(article)
        self.after = _Image(
            [(c.name, n, value_class(c)[0]) for n, c in zip(vc.after, article.replicated, strict=True)]
        )
        keys: list[Column] = list(article.key_columns)
        self.key = _Image(
            [(str(i), n, value_class(c)[0]) for i, (n, c) in enumerate(zip(vc.key, keys, strict=True))]
        )
        # a key array [v0,v1,...] as the object {"0":v0,"1":v1,...}: pyarrow reads a list of
        # one type only, and a composite key's values may be of several
        k = len(keys)
        self.key_pattern = r"^\[" + ",".join([_SCALAR] * k) + r"\]$"
        self.key_object = "{" + ",".join(f'"{i}":\\{i + 1}' for i in range(k)) + "}"
        self.int_key = k == 1 and value_class(keys[0])[0] == "i"

    def read(self, after: pa.Array, key: pa.Array) -> tuple[dict[str, pa.Array], pa.Array]:
        """The value columns of rows (``after`` and ``key_before`` texts), and which rows are
        unread."""
        out: dict[str, pa.Array] = {}
        a_vals, a_unread = self.after.read(pc.fill_null(after, "{}"))
        for (_, name, _), v in zip(self.after.fields, a_vals, strict=True):
            out[name] = v
        if self.int_key:  # [integer] (the usual key): no JSON to read
            ints = _int_key(key)
            if ints is not None:
                out[self.key.fields[0][1]] = ints
                return out, a_unread
        objects = pc.replace_substring_regex(key, self.key_pattern, self.key_object)
        bad = pc.fill_null(pc.starts_with(objects, "["), False)  # not k scalars: row by row
        objects = pc.if_else(bad, "{}", pc.fill_null(objects, "{}"))
        k_vals, k_unread = self.key.read(objects)
        for (_, name, _), v in zip(self.key.fields, k_vals, strict=True):
            out[name] = v
        return out, pc.or_(pc.or_(a_unread, k_unread), bad)


@functools.lru_cache(maxsize=16)
def _readers(articles: tuple[Article, ...]) -> tuple[list[_ArticleReader], pa.Array, dict[str, pa.DataType]]:
    """Per article its reader, the articles' names, and every value column with its type."""
    types = {name: ARROW_TYPES[t] for name, t in column_types(articles).items()}
    return [_ArticleReader(a) for a in articles], pa.array([a.name for a in articles], pa.string()), types


def with_value_columns(batch: pa.RecordBatch, articles: Sequence[Article]) -> pa.RecordBatch:
    """``batch`` (laid-out rows) with the value columns of :mod:`applier.plan.columns` and
    :data:`UNREAD`: each article's after-image values and ``key_before`` values, typed by
    their canonical class, NULL in the columns an article does not use and where its image or
    key is NULL. A batch that has them already is returned as it is."""
    if UNREAD in batch.schema.names:
        return batch
    readers, names, types = _readers(tuple(articles))
    n = batch.num_rows
    after, key, article = (batch.column(c).cast(pa.string()) for c in ("after", "key_before", "article"))
    # per row its article's place (a row of no article given: after them all)
    which = pc.fill_null(pc.index_in(article, value_set=names), len(readers)).to_numpy()
    if n and (which == which[0]).all():  # one article (the usual batch): no reordering
        groups: list[tuple[int, int, int]] = [(int(which[0]), 0, n)]
        order = None
    else:  # the rows grouped by article (a stable sort), their values put back in row order
        order = pa.array(np.argsort(which, kind="stable"))
        ordered = which[order.to_numpy()]
        cuts = [0, *(np.flatnonzero(np.diff(ordered)) + 1).tolist(), n]
        groups = [(int(ordered[a]), a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]
    parts: dict[str, list[pa.Array]] = {name: [] for name in [*types, UNREAD]}
    for g, a, b in groups:
        if g < len(readers):
            rows = slice(a, b)
            if order is None:
                values, unread = readers[g].read(after, key)
            else:
                at = order[rows]
                values, unread = readers[g].read(pc.take(after, at), pc.take(key, at))
        else:
            values, unread = {}, pa.array(np.zeros(b - a, bool))
        for name, t in types.items():
            parts[name].append(values.get(name, pa.nulls(b - a, t)))
        parts[UNREAD].append(unread)
    back = pc.sort_indices(order) if order is not None else None
    columns = []
    for name, got in parts.items():
        typ = types.get(name, pa.bool_())
        col = pa.concat_arrays(got) if got else pa.array([], typ)
        columns.append(pc.take(col, back) if back is not None else col)
    return pa.RecordBatch.from_arrays([*batch.columns, *columns], [*batch.schema.names, *parts])


def with_values(batches: Iterator[pa.RecordBatch], articles: Sequence[Article]) -> Iterator[pa.RecordBatch]:
    """:func:`with_value_columns` of every batch."""
    for b in batches:
        yield with_value_columns(b, articles)
