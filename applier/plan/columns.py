"""Image values as typed columns: what a stream task plans its calls from without parsing JSON.

The laid-out rows of procedure calls (the agent model) get one column per value their call
binds: the after image's values and the before key's (``key_before``), read from their JSON
texts once, by pyarrow (:mod:`applier.plan.reading`), as the plan phase writes a stream's feed
or as a stream task receives its batches from Spark. A stream task then turns a round's share
into calls column by column (:meth:`.calls.CompiledPlan.fast`) instead of parsing two JSON
texts and building a dict per command (most of its Python time).

A value column's type is its value's class in the canonical encoding (:mod:`applier.values`):
integers as bigint, booleans as boolean, floats as double, and everything else (decimals,
text, base64 binary, ISO 8601 dates and times, uuids) as the canonical JSON string, which the
planner converts with the converter an image's value gets (:func:`applier.values.param_converter`):
the values bound are the ones the JSON images give. Articles share the columns: the k-th
after-image value of class c of any article is column ``_vck`` (``_kck`` for the key), so the
layout is as wide as the widest article, not as all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from applier.articles import Article, Column

# canonical kind -> the type its values are read as (any other kind: its JSON string)
_CLASSES = {"int": ("i", "bigint"), "bool": ("b", "boolean"), "float": ("f", "double")}
_STRING = ("s", "string")
CLASS_TYPES = dict([*_CLASSES.values(), _STRING])  # class letter -> the Spark type its values are read as
VALUE_PREFIX = "_v"
KEY_PREFIX = "_k"
# per row: its values could not be read into the typed columns (they are NULL): plan it row by
# row (applier.plan.reading)
UNREAD = "_unread"


def value_class(col: Column) -> tuple[str, str]:
    """(class letter, type name) of a column's values."""
    return _CLASSES.get(col.type.kind, _STRING)


def _names(prefix: str, cols: Sequence[Column]) -> tuple[str, ...]:
    seen: dict[str, int] = {}
    out = []
    for c in cols:
        letter = value_class(c)[0]
        k = seen.get(letter, 0)
        seen[letter] = k + 1
        out.append(f"{prefix}{letter}{k}")
    return tuple(out)


@dataclass(frozen=True)
class ValueColumns:
    """Where one article's values are: per replicated column (article order) the column of its
    after-image value; per key column (key order) the column of its ``key_before`` value."""

    after: tuple[str, ...]
    key: tuple[str, ...]


def value_columns(article: Article) -> ValueColumns:
    return ValueColumns(_names(VALUE_PREFIX, article.replicated), _names(KEY_PREFIX, article.key_columns))


def column_types(articles: Sequence[Article]) -> dict[str, str]:
    """Every value column the articles use, with its type's SQL name, in a stable order."""
    out: dict[str, str] = {}
    for a in articles:
        vc = value_columns(a)
        for name, c in [*zip(vc.after, a.replicated, strict=True), *zip(vc.key, a.key_columns, strict=True)]:
            out.setdefault(name, value_class(c)[1])
    return dict(sorted(out.items()))


def is_value_column(name: str) -> bool:
    """Whether a column is one the plan adds to the laid-out rows (a value column, or
    :data:`UNREAD`), not a field of a row."""
    return name == UNREAD or (
        name.startswith((VALUE_PREFIX, KEY_PREFIX)) and len(name) > 3 and name[3:].isdigit()
    )


_FIXED_BYTES = 64  # a number, date, time, uuid or boolean as canonical JSON, with room to spare


def _value_bytes(col: Column) -> int | None:
    """The most bytes one value of ``col`` takes as canonical JSON (None: no bound, a LOB)."""
    t = col.type
    if t.is_lob:
        return None
    n = t.length if t.length is not None and t.length > 0 else 1
    if t.kind == "str":
        return 6 * n + 2  # every character escaped as \\uXXXX, and the quotes
    if t.kind == "bytes":
        return 4 * (n // 3 + 1) + 2  # base64
    return _FIXED_BYTES


def row_bytes_bound(articles: Sequence[Article]) -> int | None:
    """An upper bound of the bytes one laid-out row of these articles carries from Spark (its
    before and after images as JSON, the key texts and the bookkeeping columns: the value
    columns are made in Python, from the batches, :mod:`applier.plan.reading`); None when some
    column has no bound (text, image, xml, (max) types)."""
    bound = 0
    for a in articles:
        image, key = 0, 0
        for c in a.replicated:
            v = _value_bytes(c)
            if v is None:
                return None
            image += v + len(c.name.encode()) + 6
            if c in a.key_columns:
                key += v + 2
        bound = max(bound, 2 * image + 2 * key + 512)
    return bound
