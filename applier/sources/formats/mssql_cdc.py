"""SQL Server CDC change tables (``cdc.<capture_instance>_CT``) read as canonical changes.

Three ways in, one row reading:

* **CSV** exports of a change table (``--changes F.csv`` or a folder of them), read with Python's
  csv module, one Spark task per file: a header row naming the columns
  (``__$start_lsn, __$end_lsn, __$seqval, __$operation, __$update_mask, <captured columns...>,
  __$command_id``, in any order); binary values (LSNs, the update mask, binary columns) as hex
  with or without ``0x``; **NULL is an empty field or the text NULL** (so an empty string and the
  string 'NULL' of a text column cannot travel through CSV: use Parquet); quoted fields may hold
  commas, quotes and newlines. Errors name ``file:line`` (the line the record starts on).
* **Parquet** exports (``binary(10)`` LSNs as bytes, or hex text), read with pyarrow, one task
  per file; the place is ``file: row N`` (1-based).
* **ODBC** (``Options.source`` and ``Options.capture_instance``): ``SELECT`` from
  ``cdc.<capture_instance>_CT`` in Spark tasks, each with its own pyodbc connection and one slice
  of the rows (the last byte of ``__$seqval`` modulo the number of slices); identifiers quoted
  by the source's dialect. Only the column names are read on the driver.

Column semantics (MicrosoftDocs, cdc.<capture_instance>_CT): ``__$start_lsn`` is the commit LSN,
shared by every change of a transaction: the transaction (``tx``), commit order. ``__$seqval``
orders the changes of a transaction. ``__$operation``: 1 delete, 2 insert, 3 update before
image, 4 update after image; the 3 and the 4 of one row change share ``__$start_lsn`` and
``__$seqval`` and are joined into one update by :meth:`MssqlCdcFormat.combine` (an operation 3
or 4 without the other is an error naming its place). ``__$command_id`` (from the cumulative
updates of KB 3030352, which fixed the order of updated rows) orders the operations of a
transaction when present. Position in a transaction: (``__$command_id`` or 0, ``__$seqval``,
``__$operation``): 3 before 4, and a key update captured as delete + insert at one
``__$seqval`` (as Debezium's SQL Server documentation describes) keeps its delete first; with
``Options.fold_key_changes`` such a pair becomes one key update.

``__$update_mask``: bit *i* (counting from the least significant bit of the last byte, the
mask read as one big-endian number) stands for the captured column of ordinal *i + 1*, the
ordinal being the column's place among the captured columns of the change table
(``sys.fn_cdc_get_column_ordinal``; ``sys.fn_cdc_is_bit_set`` reads byte
``datalength(mask) - (ordinal - 1) / 8``). The columns of an update's mask are its ``changed``
columns (a key column whose value differs is changed whatever the mask says); without a mask
the changed columns are those whose values differ. Inserts and deletes set every bit.

Large objects: ``text``, ``ntext`` and ``image`` columns are NULL in operations 1 and 3;
``varchar(max)``, ``nvarchar(max)``, ``varbinary(max)`` (and ``xml``) are NULL in operation 3
unless the update changed them. Those NULLs are not values: the column is left out of the
before image (before images may be partial). Computed columns a capture includes are always
NULL and are not replicated: ignored.

Which article: the capture instance's source table. ODBC on SQL Server asks
``cdc.change_tables`` (``source_object_id``); otherwise the capture instance is taken to be the
default ``schema_table`` and matched against the articles. For files the capture instance is
``Options.capture_instance`` when given, else the file's name (``dbo_customers_CT.csv``, a
leading ``cdc.`` and the trailing ``_CT`` dropped), else its folder's name (Spark's
``part-*.parquet`` files).

Which column: captured columns are matched to the article's columns by name (exact, then
case-insensitive). A captured column the article does not have is an error naming it; an
article column the capture instance does not capture is an error too (a capture instance
created with a ``@captured_column_list`` that leaves a column out cannot say its value, and an
insert would write NULL there): give the article only the captured columns. ``__$`` columns
other than those above (``__$end_lsn``, ``__$lsn_period``...) are ignored.
"""

from __future__ import annotations

import csv
import datetime as dt
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from applier.articles import Article, Column
from applier.errors import InputError
from applier.sources.formats import Change, Format, Item
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
_SLICE_SQL = {
    # a small non-negative integer per row, spread over the rows: the last byte of __$seqval
    "postgres": "get_byte({seqval}, 9)",
    "tsql": "CAST(SUBSTRING({seqval}, 10, 1) AS int)",
}
_FETCH = 1000


def _shown(v: Any) -> str:
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
        f"{place}: column {column!r}: bad LSN {_shown(value)} (expected binary(10): 20 hex digits, 0x optional)"
    )


def _binary(value: Any, column: str, place: str) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        m = _HEX_RE.match(value.strip())
        if m and len(m.group(1)) % 2 == 0:
            return bytes.fromhex(m.group(1))
    raise InputError(f"{place}: column {column!r}: expected hex digits (0x optional), got {_shown(value)}")


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
            f"column {col.name!r} ({col.type}): not a {kind} value, got {_shown(text)}"
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
            f"{place}: column {OPERATION!r}: unknown operation {_shown(raw_op)} ({_OPERATION_TEXT})"
        )
    raw_cmd = meta(COMMAND_ID)
    command = 0
    if raw_cmd is not None:
        try:
            command = int(raw_cmd.strip()) if isinstance(raw_cmd, str) else int(raw_cmd)
        except (TypeError, ValueError):
            raise InputError(
                f"{place}: column {COMMAND_ID!r}: expected an integer, got {_shown(raw_cmd)}"
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
                f"{place}: column {TRAN_END_TIME!r}: expected a date and time, got {_shown(v)}"
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


def _instance_of_file(name: str) -> str:
    stem = name
    for suffix in (".csv", ".parquet"):
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
    if stem.lower().startswith("cdc."):
        stem = stem[4:]
    if stem.lower().endswith("_ct"):
        stem = stem[:-3]
    return stem


def _no_article(articles: Mapping[str, Article], tried: Sequence[str], place: str) -> InputError:
    known = ", ".join(sorted(articles)) or "none"
    names = " or ".join(repr(t) for t in tried)
    return InputError(
        f"{place}: capture instance {names} names no article (a table's default capture instance is "
        f"schema_table; give --capture-instance; known articles: {known})"
    )


# -- the format --------------------------------------------------------------------------------------
@dataclass
class MssqlCdcFormat(Format):
    name: ClassVar[str] = "mssql-cdc"
    suffixes: ClassVar[tuple[str, ...]] = (".csv",)
    positional: ClassVar[bool | None] = False

    def parse(self, text: str, place: str) -> Iterator[Item]:
        raise InputError(f"{place}: mssql-cdc reads CSV or Parquet exports of a change table, or --source")

    # -- reading ---------------------------------------------------------------------------------
    def file_article(self, path: Path) -> tuple[Article, str]:
        """The article a change-table file belongs to and the capture instance that names it."""
        tried: list[str] = []
        for ci in (
            self.options.capture_instance,
            _instance_of_file(path.name),
            _instance_of_file(path.parent.name),
        ):
            if not ci or ci in tried:
                continue
            tried.append(ci)
            a = instance_article(self.articles, ci, str(path))
            if a is not None:
                return a, ci
            if ci == self.options.capture_instance:
                break  # the user's choice is not second-guessed by the file's name
        raise _no_article(self.articles, tried, str(path))

    def file_items(self, path: Path) -> Iterator[tuple[str | None, Change | None]]:
        """(error, change) for every row of one CSV or Parquet file, in file order."""
        try:
            article, ci = self.file_article(path)
            if path.suffix.lower() == ".parquet":
                yield from self._parquet_items(path, article, ci)
            else:
                yield from self._csv_items(path, article, ci)
        except InputError as e:
            yield (str(e), None)
        except OSError as e:
            yield (f"{path}: cannot read the file: {e.strerror or e}", None)
        except UnicodeDecodeError as e:
            yield (f"{path}: not UTF-8 text ({e.reason} at byte {e.start} of a chunk)", None)

    def _csv_items(self, path: Path, article: Article, ci: str) -> Iterator[tuple[str | None, Change | None]]:
        with path.open(newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f, strict=True)
            try:
                header = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                yield (f"{path}:1: {e}", None)
                return
            lay = layout(header, article, f"cdc.{ci}_CT", f"{path}:1")
            while True:
                start = reader.line_num + 1
                try:
                    row = next(reader)
                except StopIteration:
                    return
                except csv.Error as e:
                    yield (f"{path}:{start}: {e}", None)
                    return
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                place = f"{path}:{start}"
                if len(row) != len(header):
                    yield (f"{place}: {len(row)} fields, the header names {len(header)}", None)
                    continue
                try:
                    yield (None, change(lay, row, place, text=True))
                except InputError as e:
                    yield (str(e), None)

    def _parquet_items(
        self, path: Path, article: Article, ci: str
    ) -> Iterator[tuple[str | None, Change | None]]:
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(str(path))
        names = list(pf.schema_arrow.names)
        lay = layout(names, article, f"cdc.{ci}_CT", f"{path}: schema")
        n = 0
        for batch in pf.iter_batches(batch_size=4096):
            columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
            for r in range(batch.num_rows):
                n += 1
                place = f"{path}: row {n}"
                try:
                    yield (None, change(lay, [c[r] for c in columns], place, text=False))
                except InputError as e:
                    yield (str(e), None)

    def read(self, spark: Any, files: Sequence[Any]) -> Any:
        if self.options.source:
            return self._read_odbc(spark)
        paths = [str(f) for f in files]
        if not paths:
            raise InputError(
                "mssql-cdc: no change-table files, and no --source to read the change table from"
            )
        fmt = self
        return spark.sparkContext.parallelize(paths, len(paths)).flatMap(lambda p: fmt.file_items(Path(p)))

    # -- ODBC ------------------------------------------------------------------------------------
    def _read_odbc(self, spark: Any) -> Any:
        from applier.targets.connstr import dialect_for, redact

        cs = self.options.source
        ci = self.options.capture_instance
        assert cs is not None
        if not ci:
            raise InputError("mssql-cdc: --source needs --capture-instance (the change table cdc.<name>_CT)")
        dialect = dialect_for(cs)
        table = dialect.qualified("cdc", f"{ci}_CT")
        shown = f"cdc.{ci}_CT"
        conn = _connect(cs, shown)
        try:
            cur = conn.cursor()
            article = self._source_article(cur, dialect.language, ci, shown)
            try:
                cur.execute(f"SELECT * FROM {table} WHERE 1 = 0")
            except Exception as e:  # noqa: BLE001 - the driver's error, said with the table
                raise InputError(f"{shown}: cannot read the change table: {_first_line(e)}") from None
            names = [d[0] for d in cur.description]
        finally:
            conn.close()
        lay = layout(names, article, shown, shown)
        sql, slices = select_sql(dialect, ci, names, lay, int(spark.sparkContext.defaultParallelism))
        redacted = redact(cs)

        def task(n: int) -> Iterator[tuple[str | None, Change | None]]:
            try:
                c = _connect(cs, shown)
            except InputError as e:
                yield (str(e).replace(cs, redacted), None)
                return
            try:
                cur = c.cursor()
                cur.execute(sql, n) if slices > 1 else cur.execute(sql)
                while True:
                    rows = cur.fetchmany(_FETCH)
                    if not rows:
                        break
                    for row in rows:
                        values = list(row)
                        place = _odbc_place(shown, lay, values)
                        try:
                            yield (None, change(lay, values, place, text=False))
                        except InputError as e:
                            yield (str(e), None)
            except Exception as e:  # noqa: BLE001 - a lost connection: refused, not a Java stack
                yield (f"{shown}: cannot read the change table: {_first_line(e)}", None)
            finally:
                c.close()

        return spark.sparkContext.parallelize(range(slices), slices).flatMap(task)

    def _source_article(self, cur: Any, dialect: str, ci: str, place: str) -> Article:
        tried = [ci]
        if dialect == "tsql":
            try:
                found = cur.execute(
                    "SELECT OBJECT_SCHEMA_NAME(source_object_id), OBJECT_NAME(source_object_id) "
                    "FROM cdc.change_tables WHERE capture_instance = ?",
                    ci,
                ).fetchone()
            except Exception:  # noqa: BLE001 - no cdc.change_tables: the default naming
                found = None
            if found is not None and found[1] is not None:
                a = self.articles.get(f"{found[0]}.{found[1]}")
                if a is None:
                    a = next(
                        (
                            x
                            for x in self.articles.values()
                            if x.name.lower() == f"{found[0]}.{found[1]}".lower()
                        ),
                        None,
                    )
                if a is not None:
                    return a
                raise InputError(
                    f"{place}: capture instance {ci!r} captures {found[0]}.{found[1]}, which is not an article "
                    f"(known: {', '.join(sorted(self.articles))})"
                )
        a = instance_article(self.articles, ci, place)
        if a is None:
            raise _no_article(self.articles, tried, place)
        return a

    # -- per transaction ---------------------------------------------------------------------------
    def combine(self, changes: list[Change]) -> list[Change]:
        """Operation 3 + 4 of one row change (same __$seqval) -> one update; with
        ``fold_key_changes``, a delete + insert of one article at one __$seqval -> one update."""
        out: list[Change] = []
        i = 0
        while i < len(changes):
            c = changes[i]
            nxt = changes[i + 1] if i + 1 < len(changes) else None
            op = c.pos[-1]
            same = nxt is not None and nxt.pos[:-1] == c.pos[:-1] and nxt.article == c.article
            if op == 3:
                if nxt is None or not same or nxt.pos[-1] != 4:
                    raise InputError(
                        f"{c.place}: {c.source}: an update's before image (operation 3) without its after "
                        f"image (operation 4 at the same {START_LSN} and {SEQVAL})"
                    )
                out.append(_joined(c, nxt))
                i += 2
                continue
            if op == 4:
                raise InputError(
                    f"{c.place}: {c.source}: an update's after image (operation 4) without its before "
                    f"image (operation 3 at the same {START_LSN} and {SEQVAL})"
                )
            if self.options.fold_key_changes and op == 1 and same and nxt is not None and nxt.pos[-1] == 2:
                out.append(_joined(c, nxt))
                i += 2
                continue
            out.append(c)
            i += 1
        return out


def _joined(before: Change, after: Change) -> Change:
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


def select_sql(
    dialect: Any, instance: str, names: Sequence[str], lay: Layout, slices: int
) -> tuple[str, int]:
    """The SELECT of one slice of ``cdc.<instance>_CT`` (the slice number its one parameter) and
    the number of slices (1, no parameter, when the dialect has no slicing expression)."""
    cols = ", ".join(dialect.quote(n) for n in names)
    sql = f"SELECT {cols} FROM {dialect.qualified('cdc', f'{instance}_CT')}"
    expr = _SLICE_SQL.get(dialect.name)
    if expr is None or slices <= 1:
        return sql, 1
    seqval = dialect.quote(names[lay.meta[SEQVAL]])
    return f"{sql} WHERE {expr.format(seqval=seqval)} % {int(slices)} = ?", int(slices)


def _odbc_place(table: str, lay: Layout, values: Sequence[Any]) -> str:
    parts = []
    for name in (START_LSN, SEQVAL, OPERATION):
        v = values[lay.meta[name]]
        parts.append(
            f"{name} {('0x' + bytes(v).hex()) if isinstance(v, (bytes, bytearray, memoryview)) else v}"
        )
    return f"{table}: " + ", ".join(parts)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return (text.splitlines()[0] if text else type(e).__name__)[:300]


def _connect(cs: str, shown: str) -> Any:
    import pyodbc

    from applier.targets.connstr import ensure_odbc_env, redact

    ensure_odbc_env()
    try:
        return pyodbc.connect(cs, autocommit=True, timeout=30)
    except pyodbc.Error as e:
        raise InputError(f"{shown}: cannot connect to the source ({redact(cs)}): {_first_line(e)}") from None


FORMATS: dict[str, type[Format]] = {"mssql-cdc": MssqlCdcFormat}
