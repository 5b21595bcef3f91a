"""A change table's rows (``cdc.<capture_instance>_CT``) -> changes: the ``__$`` columns, binary
and column values, the layout of a table checked against its article, the article a capture
instance names, and the halves of an update joined. Every transport (:mod:`.files`,
:mod:`.odbc`) reads its rows through :func:`change`."""

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from applier.articles import Article, Column
from applier.errors import InputError
from applier.sources.formats import Change
from applier.values import ValueError_, encode

START_LSN = "__$start_lsn"
SEQVAL = "__$seqval"
OPERATION = "__$operation"
UPDATE_MASK = "__$update_mask"
COMMAND_ID = "__$command_id"
TRAN_END_TIME = "tran_end_time"  # an export may add cdc.lsn_time_mapping's commit time (--pace source)
_REQUIRED = (START_LSN, SEQVAL, OPERATION)
_OPERATIONS = {1: "D", 2: "I", 3: "U", 4: "U"}
_OPERATION_TEXT = "1 delete, 2 insert, 3 update (before image), 4 update (after image)"
_LSN_RE = re.compile(r"^(?:0[xX])?([0-9a-fA-F]{20})$")
_HEX_RE = re.compile(r"^(?:0[xX])?([0-9a-fA-F]*)$")
_NULL_TEXT = "NULL"
_ALWAYS_NULL_LOB = ("text", "ntext", "image")  # NULL in operations 1 and 3
_FRACTION_RE = re.compile(r"(\.\d{6})\d+")  # datetime2(7) / time(7): Python keeps microseconds
_OFFSET_SPACE_RE = re.compile(r"\s+([+-]\d{2}:\d{2})$")


def shown(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


# -- binary values --------------------------------------------------------------------------------
def lsn_text(value: Any, column: str, place: str) -> str:
    """A binary(10) LSN (bytes, or hex text with or without 0x) -> 20 lower-case hex digits
    (fixed width: text order is LSN order), or InputError naming the place and column."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        b = bytes(value)
        if len(b) == 10:
            return b.hex()
    elif isinstance(value, str):
        m = _LSN_RE.match(value.strip())
        if m:
            return m.group(1).lower()
    raise InputError(
        f"{place}: column {column!r}: bad LSN {shown(value)} (expected binary(10): 20 hex digits, 0x optional)"
    )


def _binary(value: Any, column: str, place: str) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        m = _HEX_RE.match(value.strip())
        if m and len(m.group(1)) % 2 == 0:
            return bytes.fromhex(m.group(1))
    raise InputError(f"{place}: column {column!r}: expected hex digits (0x optional), got {shown(value)}")


def mask_ordinals(mask: bytes) -> set[int]:
    """The column ordinals (1-based) an update mask sets: the mask is one big-endian number whose
    bit i stands for ordinal i + 1 (the last byte holds ordinals 1..8)."""
    n = int.from_bytes(mask, "big")
    out: set[int] = set()
    i = 0
    while n:
        if n & 1:
            out.add(i + 1)
        n >>= 1
        i += 1
    return out


def mask_of(ordinals: Sequence[int], width: int) -> bytes:
    """The update mask setting ``ordinals`` among ``width`` captured columns (tests, exports)."""
    n = 0
    for o in ordinals:
        n |= 1 << (o - 1)
    return n.to_bytes(max(1, (width + 7) // 8), "big")


# -- column values --------------------------------------------------------------------------------
def _iso(text: str) -> str:
    return _OFFSET_SPACE_RE.sub(r"\1", _FRACTION_RE.sub(r"\1", text.strip()))


def from_text(col: Column, text: str) -> Any:
    """A value as an export writes it as text -> the Python value of the column's type (then
    :func:`applier.values.encode`); ValueError_ naming the column when it is not one."""
    kind = col.type.kind
    try:
        if kind == "str":
            return text
        t = text.strip()
        if kind == "bool":
            low = t.lower()
            if low in ("1", "true"):
                return True
            if low in ("0", "false"):
                return False
            raise ValueError
        if kind == "float":
            return float(t)
        if kind == "bytes":
            m = _HEX_RE.match(t)
            if not m or len(m.group(1)) % 2:
                raise ValueError
            return bytes.fromhex(m.group(1))
        if kind == "date":
            return dt.date.fromisoformat(t[:10] if len(t) > 10 and t[10] in " T" else t)
        if kind in ("datetime", "datetimeoffset"):
            return dt.datetime.fromisoformat(_iso(t))
        if kind == "time":
            return dt.time.fromisoformat(_iso(t))
    except ValueError:
        raise ValueError_(
            f"column {col.name!r} ({col.type}): not a {kind} value, got {shown(text)}"
        ) from None
    return t  # int, decimal, uuid: encode reads text


def column_value(col: Column, value: Any, text: bool) -> Any:
    """A captured value (text from CSV, a driver's or pyarrow's value otherwise) -> canonical
    encoding; ValueError_ naming the column when it does not fit."""
    if value is None:
        return None
    if text or (isinstance(value, str) and col.type.kind != "str"):
        if text and value in ("", _NULL_TEXT):
            return None
        value = from_text(col, value)
    return encode(col, value)


# -- the layout of a change table -----------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """Where each column of a change table is (indexes into a row), checked against the article."""

    article: Article
    table: str  # shown in sources: cdc.<capture instance>_CT
    meta: Mapping[str, int]  # lower-case __$ name -> index
    captured: tuple[tuple[int, Column | None], ...]  # (row index, article column; None: computed)

    @property
    def width(self) -> int:
        return len(self.captured)


def layout(names: Sequence[str], article: Article, table: str, place: str) -> Layout:
    """The columns of a change table (header, Parquet schema, cursor) -> Layout, or InputError
    naming ``place`` and the column."""
    meta: dict[str, int] = {}
    captured: list[tuple[int, Column | None]] = []
    by_name = {c.name: c for c in article.columns}
    by_low: dict[str, list[Column]] = {}
    for c in article.columns:
        by_low.setdefault(c.name.lower(), []).append(c)
    seen: set[str] = set()
    for i, raw in enumerate(names):
        name = raw.strip()
        low = name.lower()
        if low.startswith("__$") or (low == TRAN_END_TIME and low not in by_low):
            if low in meta:
                raise InputError(f"{place}: column {name!r} appears twice")
            meta[low] = i
            continue
        col = by_name.get(name)
        if col is None and len(by_low.get(low, [])) == 1:
            col = by_low[low][0]
        if col is None:
            raise InputError(
                f"{place}: column {name!r} of {table} is not a column of article {article.name} "
                f"(its columns: {', '.join(c.name for c in article.columns)})"
            )
        if col.name in seen:
            raise InputError(f"{place}: column {name!r} appears twice")
        seen.add(col.name)
        captured.append((i, None if col.computed else col))
    missing = [n for n in _REQUIRED if n not in meta]
    if missing:
        raise InputError(
            f"{place}: {table} has no column {missing[0]!r} (a change table has {', '.join(_REQUIRED)})"
        )
    uncaptured = [c.name for c in article.replicated if c.name not in seen]
    if uncaptured:
        raise InputError(
            f"{place}: column {uncaptured[0]!r} of article {article.name} is not captured by {table} "
            "(its value is not known: give the article only the captured columns)"
        )
    return Layout(article, table, meta, tuple(captured))


def change(lay: Layout, row: Sequence[Any], place: str, text: bool) -> Change:
    """One change-table row -> a Change (operations 3 and 4 are halves joined by ``combine``)."""
    if len(row) < len(lay.meta) + lay.width:
        raise InputError(f"{place}: {len(row)} fields, the header names {len(lay.meta) + lay.width}")

    def meta(name: str) -> Any:
        i = lay.meta.get(name)
        v = None if i is None else row[i]
        return None if text and v in ("", _NULL_TEXT) else v

    start = lsn_text(meta(START_LSN), START_LSN, place)
    seq = lsn_text(meta(SEQVAL), SEQVAL, place)
    raw_op = meta(OPERATION)
    try:
        op = int(raw_op.strip()) if isinstance(raw_op, str) else raw_op
    except ValueError:
        op = None
    if isinstance(op, bool) or op not in _OPERATIONS:
        raise InputError(
            f"{place}: column {OPERATION!r}: unknown operation {shown(raw_op)} ({_OPERATION_TEXT})"
        )
    raw_cmd = meta(COMMAND_ID)
    command = 0
    if raw_cmd is not None:
        try:
            command = int(raw_cmd.strip()) if isinstance(raw_cmd, str) else int(raw_cmd)
        except (TypeError, ValueError):
            raise InputError(
                f"{place}: column {COMMAND_ID!r}: expected an integer, got {shown(raw_cmd)}"
            ) from None
    raw_mask = meta(UPDATE_MASK)
    ordinals = None if raw_mask is None else mask_ordinals(_binary(raw_mask, UPDATE_MASK, place))
    image: dict[str, Any] = {}
    for ordinal, (i, col) in enumerate(lay.captured, 1):
        if col is None:
            continue
        try:
            value = column_value(col, row[i], text)
        except ValueError_ as e:
            raise InputError(f"{place}: {e}") from None
        if value is None and _unknown_lob(col, op, ordinals is not None and ordinal in ordinals):
            continue  # a LOB the change table does not carry here: not part of the before image
        image[col.name] = value
    changed = None
    if op == 4 and ordinals is not None:
        changed = tuple(c.name for o, (_, c) in enumerate(lay.captured, 1) if c is not None and o in ordinals)
    committed = _tran_end_time(meta(TRAN_END_TIME), place)
    source = f"{START_LSN}=0x{start} {SEQVAL}=0x{seq} {OPERATION}={op}"
    if raw_cmd is not None:
        source += f" {COMMAND_ID}={command}"
    return Change(
        article=lay.article.name,
        op=_OPERATIONS[op],
        before=image if op in (1, 3) else None,
        after=image if op in (2, 4) else None,
        tx=(start,),
        pos=(command, seq, op),
        source=source,
        place=place,
        changed=changed,
        committed=committed,
    )


def _tran_end_time(v: Any, place: str) -> float | None:
    """A change table export's ``tran_end_time`` (``cdc.lsn_time_mapping``'s, joined on
    ``__$start_lsn``: the transaction's commit) -> epoch seconds, the server's local time read
    as UTC (only the differences between commits are used); None when the export has none."""
    if v is None:
        return None
    if isinstance(v, dt.datetime):
        moment = v
    else:
        try:
            moment = dt.datetime.fromisoformat(str(v).strip())
        except ValueError:
            raise InputError(
                f"{place}: column {TRAN_END_TIME!r}: expected a date and time, got {shown(v)}"
            ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return float(moment.timestamp())


def _unknown_lob(col: Column, op: int, in_mask: bool) -> bool:
    base = col.type.base
    if op == 1:
        return base in _ALWAYS_NULL_LOB
    if op == 3:
        return base in _ALWAYS_NULL_LOB or (col.type.is_lob and not in_mask)
    return False


# -- which article ----------------------------------------------------------------------------------
def instance_article(articles: Mapping[str, Article], instance: str, place: str) -> Article | None:
    """The article whose default capture instance (schema_table) is ``instance``, or None."""
    for fold in (False, True):
        found = [
            a
            for a in articles.values()
            if (
                f"{a.schema}_{a.table}".lower() == instance.lower()
                if fold
                else f"{a.schema}_{a.table}" == instance
            )
        ]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise InputError(
                f"{place}: capture instance {instance!r} matches several articles "
                f"({', '.join(sorted(a.name for a in found))})"
            )
    return None


def instance_of_file(name: str) -> str:
    stem = name
    for suffix in (".csv", ".parquet"):
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
    if stem.lower().startswith("cdc."):
        stem = stem[4:]
    if stem.lower().endswith("_ct"):
        stem = stem[:-3]
    return stem


def no_article(articles: Mapping[str, Article], tried: Sequence[str], place: str) -> InputError:
    known = ", ".join(sorted(articles)) or "none"
    names = " or ".join(repr(t) for t in tried)
    return InputError(
        f"{place}: capture instance {names} names no article (a table's default capture instance is "
        f"schema_table; give --capture-instance; known articles: {known})"
    )


def joined(before: Change, after: Change) -> Change:
    changed = after.changed
    if before.changed is not None and changed is not None:
        changed = tuple(dict.fromkeys((*changed, *before.changed)))
    return Change(
        article=after.article,
        op="U",
        before=before.before,
        after=after.after,
        tx=after.tx,
        pos=after.pos,
        source=f"{before.source} + {_op_part(after.source)}",
        place=before.place if before.place == after.place else f"{before.place} and {after.place}",
        changed=changed,
        committed=after.committed if after.committed is not None else before.committed,
    )


def _op_part(source: str) -> str:
    for part in source.split():
        if part.startswith(OPERATION):
            return part
    return source
