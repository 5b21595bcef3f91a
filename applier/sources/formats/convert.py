"""A capture's items -> canonical change rows, on the executors (see the package docstring).

Stages, each a Spark pass over the cached items (nothing but counts reaches the driver):

1. read: every record through the format (errors name the place; any -> nothing applied);
2. (file-ordered formats) each change without a transaction gets the one whose Begin came last
   before it in file order: a summary per partition (its last marker), offsets on the driver;
3. group: the items sorted by (transaction, position), partitioned by transaction (bounds from a
   sample), so a transaction is whole in one partition;
4. per transaction: duplicate deliveries dropped (counted), the announced count checked, the
   format's ``combine``; a count per partition gives every partition its first transaction and
   change number;
5. number and validate: lsn, xact_seqno, command_id; ``validate_record`` as for a canonical file.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from applier.articles import Article
from applier.errors import InputError
from applier.records.schema import CHANGE_SCHEMA, ChangeRow, Validated
from applier.sources import reading
from applier.sources.canonical import validate_record
from applier.sources.files import InputFiles, change_files
from applier.sources.formats import Begin, Change, Commit, Expect, Format, Options, Read
from applier.sources.positions import PLACE
from applier.sources.reading import KEPT, raise_errors

SOURCE = "_source"
UNCHANGED = "_unchanged"  # columns an update's new row left out as unchanged (formats.unchanged)
COMMITTED = "_committed"  # the transaction's commit time at the publisher, epoch seconds (or null)
CAPTURED_SCHEMA = (
    f"{PLACE} string, {SOURCE} string, {CHANGE_SCHEMA}, {UNCHANGED} array<string>, {COMMITTED} double"
)


@dataclass(frozen=True)
class Captured:
    """The canonical rows of a capture (with ``_place``, ``_source`` and ``_unchanged``) and what
    the reading found: transactions, changes, duplicate deliveries dropped, updates whose new row
    left out unchanged values (``rows`` holds them without those values until
    :func:`applier.sources.formats.unchanged.fill_unchanged` fills them)."""

    rows: DataFrame
    transactions: int
    changes: int
    duplicates: int
    cached: tuple[Any, ...]
    unchanged: int = 0

    def unpersist(self) -> None:
        for c in self.cached:
            c.unpersist()


def _unexpected(place: str, e: Exception) -> str:
    return reading.unexpected(place, e, "read")


def read_lines(spark: SparkSession, files: Sequence[Any], fmt: Format) -> Any:
    """Every line of every file through ``fmt.parse`` (:func:`applier.sources.reading.read_lines`):
    RDD of (error, item, order) in file order, ``order`` = (file index, line index, item index)
    for file-ordered formats."""

    def parse(text: str, place: str, fi: int, idx: int) -> Iterator[tuple[Any, ...]]:
        for k, item in enumerate(fmt.parse(text, place)):
            yield (None, item, (fi, idx, k))

    def refuse(place: str, e: Exception, fi: int, idx: int) -> tuple[Any, ...]:
        return (str(e) if isinstance(e, InputError) else _unexpected(place, e), None, (fi, idx, 0))

    return reading.read_lines(spark, files, parse, refuse)


def _order(e: tuple[Any, ...]) -> tuple[Any, ...]:
    return e[2] if len(e) > 2 and e[2] is not None else ()


# -- 2. transactions from file order -----------------------------------------------------------
def _markers(idx: int, it: Iterable[tuple[Any, ...]]) -> Iterator[tuple[int, Any]]:
    """The last Begin/Commit of a partition: (idx, (kind, order)) or (idx, None)."""
    last = None
    for e in it:
        item = e[1]
        if isinstance(item, (Begin, Commit)):
            last = _marker(item, e)
    yield (idx, last)


def _marker(item: Begin | Commit, e: tuple[Any, ...]) -> tuple[Any, ...]:
    """(kind, order, place, commit time) of a Begin/Commit marker."""
    at = item.at if isinstance(item, Begin) else None
    return ("B" if isinstance(item, Begin) else "C", _order(e), item.place, at)


def _resolve(starts: Mapping[int, Any]):  # type: ignore[no-untyped-def]
    """Changes without a transaction -> the one whose Begin came last before them."""

    def part(idx: int, it: Iterable[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
        state = starts.get(idx)
        for e in it:
            item = e[1]
            if isinstance(item, (Begin, Commit)):
                state = _marker(item, e)
                continue
            if isinstance(item, Change) and item.tx is None:
                if state is None or state[0] != "B":
                    why = "before any begin" if state is None else f"after the commit at {state[2]}"
                    yield (f"{item.place}: a change outside a transaction ({why})", None, _order(e))
                    continue
                tx = ("file", *state[1])
                yield (None, _with_tx(item, tx, state[3]), _order(e))
                continue
            yield e

    return part


def _with_tx(c: Change, tx: tuple[Any, ...], at: float | None) -> Change:
    committed = c.committed if c.committed is not None else at
    return Change(
        c.article, c.op, c.before, c.after, tx, c.pos, c.source, c.place, c.changed, c.unchanged, committed
    )


def _file_ordered(rdd: Any) -> Any:
    summaries = dict(rdd.mapPartitionsWithIndex(_markers).collect())
    starts: dict[int, Any] = {}
    state = None
    for i in range(rdd.getNumPartitions()):
        starts[i] = state
        if summaries.get(i) is not None:
            state = summaries[i]
    return rdd.mapPartitionsWithIndex(_resolve(starts))


# -- 3. group by transaction -----------------------------------------------------------------
def _keyed(e: tuple[Any, ...]) -> tuple[tuple[Any, ...], Any]:
    """(sort key, the item as a plain tuple: cheaper to pickle through the shuffle)."""
    item = e[1]
    if isinstance(item, Expect):
        return ((item.tx, 1, (), ()), (item.tx, item.count, item.place))
    c: Change = item
    return (
        (c.tx, 0, c.pos, _order(e)),
        (
            c.article,
            c.op,
            c.before,
            c.after,
            c.tx,
            c.pos,
            c.source,
            c.place,
            c.changed,
            c.unchanged,
            c.committed,
        ),
    )


def _bounds(keyed: Any, parts: int) -> list[Any]:
    """Partition bounds on the transaction key, from a sample of every partition (as Spark's
    range partitioner; one pass: up to 20 transaction keys a partition, evenly spaced)."""
    if parts <= 1:
        return []

    def sample(it: Iterable[tuple[Any, Any]]) -> Iterator[Any]:
        keys = [k[0] for k, _ in it]
        step = max(1, len(keys) // 20)
        yield from keys[::step]

    found = sorted(set(keyed.mapPartitions(sample).collect()))
    if not found:
        return []
    step = len(found) / parts
    return sorted({found[min(len(found) - 1, int(step * (i + 1)))] for i in range(parts - 1)})


# -- 4. per transaction ------------------------------------------------------------------------
def _same(a: Change, b: Change) -> bool:
    return (a.tx, a.pos, a.article, a.op) == (b.tx, b.pos, b.article, b.op)


def _transactions(fmt: Format):  # type: ignore[no-untyped-def]
    """Sorted (key, item) -> per transaction: ("tx", changes, duplicates) or ("error", text)."""

    def part(it: Iterable[tuple[Any, Any]]) -> Iterator[tuple[Any, ...]]:
        cur: Any = None
        changes: list[Change] = []
        dups = 0
        expect: Expect | None = None

        def flush() -> Iterator[tuple[Any, ...]]:
            if cur is None:
                return
            if expect is not None and expect.count != len(changes):
                yield (
                    "error",
                    f"{expect.place}: transaction {_tx_text(cur)} announces {expect.count} change(s), "
                    f"the capture holds {len(changes)}",
                )
                return
            if not changes:
                return
            try:
                yield ("tx", fmt.combine(changes), dups)
            except InputError as e:
                yield ("error", str(e))

        for key, t in it:
            tx = key[0]
            if tx != cur:
                yield from flush()
                cur, changes, dups, expect = tx, [], 0, None
            if key[1] == 1:
                expect = Expect(*t)
                continue
            item = Change(*t)
            if changes and _same(changes[-1], item):
                prev = changes[-1]
                if fmt.dedup and (prev.before, prev.after) == (item.before, item.after):
                    dups += 1  # the same change delivered again (at least once)
                    continue
                yield (
                    "error",
                    f"{item.place}: {item.source}: "
                    + (
                        f"two different changes of {item.article} at one source position"
                        if fmt.dedup
                        else "the position appears 2 times; positions must be unique"
                    )
                    + f" (the other at {prev.place})",
                )
                continue
            changes.append(item)
        yield from flush()

    return part


def _tx_text(tx: Any) -> str:
    if isinstance(tx, tuple) and len(tx) == 1:
        return str(tx[0])
    return str(tx)


def _counts(idx: int, it: Iterable[tuple[Any, ...]]) -> Iterator[tuple[int, int, int, int, int]]:
    txs = n = dups = unchanged = 0
    for t in it:
        if t[0] == "tx":
            txs += 1
            n += len(t[1])
            dups += t[2]
            unchanged += sum(1 for c in t[1] if c.unchanged)
    yield (idx, txs, n, dups, unchanged)


# -- 5. number and validate --------------------------------------------------------------------
class CapturedRow(NamedTuple):
    """A capture's validated command: its source position, the row, the columns its update
    left out as unchanged, and its transaction's commit time (or None)."""

    source: str
    change: ChangeRow
    unchanged: list[str]
    committed: float | None


def _captured_row(v: Validated[CapturedRow]) -> tuple[Any, ...]:
    """A validated capture row as Spark takes it (:data:`CAPTURED_SCHEMA`)."""
    r = v.good
    return (v.place, r.source, *r.change, r.unchanged, r.committed)


def _numbered(fmt: Format, firsts: Mapping[int, tuple[int, int]]):  # type: ignore[no-untyped-def]
    articles = fmt.articles
    encoded = fmt.encoded

    def part(idx: int, it: Iterable[tuple[Any, ...]]) -> Iterator[Validated[CapturedRow]]:
        xact, lsn = firsts[idx]
        for t in it:
            if t[0] != "tx":
                continue
            xact += 1
            # the transaction's commit time: every change of it carries the same, or none does
            at = max((c.committed for c in t[1] if c.committed is not None), default=None)
            for cmd, c in enumerate(t[1], 1):
                lsn += 1
                rec = {
                    "lsn": lsn,
                    "xact_seqno": xact,
                    "command_id": cmd,
                    "article": c.article,
                    "op": c.op,
                    "before": c.before,
                    "after": c.after,
                    "changed": list(c.changed) if c.changed is not None else None,
                }
                try:
                    row = validate_record(rec, articles, c.place, None, encoded, unchanged=c.unchanged)
                    yield Validated(None, c.place, CapturedRow(c.source, row, list(c.unchanged), at))
                except InputError as e:
                    # named by the capture's position, not the number it was given here
                    msg, numbered = str(e), f"{c.place}: lsn {lsn}"
                    if msg.startswith(numbered):
                        msg = f"{c.place}: {c.source}" + msg[len(numbered) :]
                    yield Validated.refused(msg)
                except Exception as e:  # noqa: BLE001
                    yield Validated.refused(_unexpected(c.place, e))

    return part


def captured(spark: SparkSession, fmt: Format, files: Sequence[Path], what: str = "capture") -> Captured:
    """The capture in ``files`` (or the format's own source) as canonical rows; InputError naming
    the places of the first bad records, nothing applied, otherwise."""
    raw = fmt.read(spark, files).persist(StorageLevel.MEMORY_AND_DISK)
    cached: list[Any] = [raw]
    try:
        raise_errors(raw.filter(lambda e: e[0] is not None).map(lambda e: e[0]).take(KEPT), what)
        items = raw.filter(lambda e: e[1] is not None)
        positional = fmt.positional
        if positional is None:  # known from the data: some record is a begin or commit marker
            positional = not items.filter(lambda e: isinstance(e[1], (Begin, Commit))).isEmpty()
        if positional:
            items = _file_ordered(items).persist(StorageLevel.MEMORY_AND_DISK)
            cached.append(items)
            raise_errors(items.filter(lambda e: e[0] is not None).map(lambda e: e[0]).take(KEPT), what)
        items = items.filter(lambda e: isinstance(e[1], (Change, Expect)))
        keyed = items.map(_keyed)
        parts = max(1, raw.getNumPartitions())
        bounds = _bounds(keyed, parts)

        def partition(key: Any) -> int:
            return bisect.bisect_left(bounds, key[0])

        grouped = (
            keyed.repartitionAndSortWithinPartitions(len(bounds) + 1, partition)
            .mapPartitions(_transactions(fmt))
            .persist(StorageLevel.MEMORY_AND_DISK)
        )
        cached.append(grouped)
        raise_errors(grouped.filter(lambda t: t[0] == "error").map(lambda t: t[1]).take(KEPT), what)
        counts = sorted(grouped.mapPartitionsWithIndex(_counts).collect())
        firsts: dict[int, tuple[int, int]] = {}
        xact = lsn = dups = unchanged = 0
        for idx, txs, n, d, u in counts:
            firsts[idx] = (xact, lsn)
            xact, lsn, dups, unchanged = xact + txs, lsn + n, dups + d, unchanged + u
        # No row change at all is a valid capture (wal2json's transactions on a table with
        # REPLICA IDENTITY NOTHING carry none): nothing is applied and the subscriber must still
        # hold its snapshot; the report's input says 0 changes.
        rows = grouped.mapPartitionsWithIndex(_numbered(fmt, firsts)).persist(StorageLevel.MEMORY_AND_DISK)
        cached.append(rows)
        raise_errors(rows.filter(lambda v: v.error is not None).map(lambda v: v.error).take(KEPT), what)
        df = spark.createDataFrame(rows.map(_captured_row), CAPTURED_SCHEMA)
        return Captured(df, xact, lsn, dups, tuple(cached), unchanged)
    except BaseException:
        for c in cached:
            c.unpersist()
        raise


def read_capture(
    cls: type[Format],
    spark: SparkSession,
    articles: Mapping[str, Article],
    path: str | Path | None,
    options: Options,
    scanned: InputFiles | None = None,
) -> Read:
    """A capture's reading (:meth:`applier.sources.formats.Reader.reading`): the files at
    ``path`` (or the format's own source, mssql-cdc's ``--source``) through its Format class
    ``cls`` and :func:`captured`."""
    fmt = cls(articles, options)
    if path is None:
        if options.source is None:
            raise InputError(f"--format {options.format}: give --changes (or --source for mssql-cdc)")
        files: tuple[Path, ...] = ()
        origin = f"{options.format} from {options.capture_instance or 'the source'}"
    else:
        found = scanned or change_files(path, cls.suffixes)
        files, origin = found.files, str(found.path)
    got = captured(spark, fmt, files, origin)
    notes = {
        "format": options.format,
        "transactions": got.transactions,
        "changes": got.changes,
        "duplicates_dropped": got.duplicates,
        "fold_key_changes": options.fold_key_changes,
        "unchanged_filled": got.unchanged,
    }
    return Read(
        got.rows,
        origin,
        origin if options.format == "canonical" else f"{origin} ({options.format})",
        options.format,
        got.cached,
        captured=True,
        transactions=got.transactions,
        changes=got.changes,
        unchanged=got.unchanged,
        notes=notes,
    )


def commit_times(rows: DataFrame, transactions: int, origin: str, fmt: str) -> tuple[float, ...]:
    """Each transaction's commit time at the publisher (epoch seconds), by ``xact_seqno``
    (1 .. ``transactions``: index ``xact_seqno - 1``), from a capture's rows (one small job: a
    number per transaction reaches the driver). Times never go back: a commit stamped earlier
    than the one before it (clocks, or a capture merged from two) is taken as at that one.
    InputError naming the first transaction without a time, and what gives one."""
    got = {
        int(r[0]): (r[1], r[2])
        for r in rows.groupBy("xact_seqno").agg(F.max(COMMITTED), F.min(PLACE)).toLocalIterator()
    }
    out: list[float] = []
    last = float("-inf")
    for x in range(1, transactions + 1):
        at, place = got.get(x, (None, None))
        if at is None:
            raise InputError(
                f"{place or origin}: --pace source: this transaction carries no commit time "
                + _WHERE_TIMES.get(fmt, f"({fmt} captures carry none: pace them with --rate)")
            )
        last = max(last, float(at))
        out.append(last)
    return tuple(out)


_WHERE_TIMES = {
    "wal2json": "(capture with -o include-timestamp=1)",
    "wal2json2": "(capture with -o include-timestamp=1)",
    "debezium": "(Debezium gives it in source.ts_ms)",
    "maxwell": "(Maxwell gives it in ts)",
    "mssql-cdc": "(export the change table with a tran_end_time column: "
    "sys.fn_cdc_map_lsn_to_time(__$start_lsn))",
}


def canonical_json(r: Any, source: bool = True) -> str:
    """A canonical row -> its JSON Lines text (images as objects), with its source position."""
    r = r.asDict() if hasattr(r, "asDict") else r
    d: dict[str, Any] = {
        f: r[f] for f in ("lsn", "xact_seqno", "command_id", "article", "op", "schema_version")
    }
    if r["op"] in ("DDL", "SQL", "PROC"):
        d[{"DDL": "ddl", "SQL": "sqldml", "PROC": "procedure"}[r["op"]]] = json.loads(r["after"])
    else:
        d["before"] = json.loads(r["before"]) if r["before"] else None
        d["after"] = json.loads(r["after"]) if r["after"] else None
        d["changed"] = list(r["changed"] or [])
    if source and r.get(SOURCE) is not None:
        d["source"] = r[SOURCE]
    return json.dumps(d, ensure_ascii=False, separators=(",", ":"))
