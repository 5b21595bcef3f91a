"""The initial snapshot load: the rows inserted in key ranges, each committed with its watermark.

Every key range of the snapshot commits its rows and its row of ``applier.ranges``
(:class:`applier.targets.progress.ProgressTable`) in one transaction, so a load killed part-way
(kill -9, a lost host) leaves whole ranges and their record, never half of one; a resumed
load skips the ranges recorded there and loads the rest. The record's primary key
(subscription, range) refuses a range committed twice, so no row is loaded twice even by a task
Spark retries (which skips what its first try committed). Spark tasks load the ranges, each
with its own connection, in multi-row INSERTs (or one JSON text, where the dialect has a bulk
statement) with bound parameters: the driver never holds the rows.

**The ranges.** The snapshot's rows in the order of (article, key text), the key text being
the canonical one (``[17]``, ``["k17"]``: text order, not the key's own), cut into ranges of
about ``range_rows`` rows (``[run] snapshot_range_rows``, default :data:`RANGE_ROWS`). The
boundaries are quantiles of a sample that depends on the keys alone: the rows whose
``xxhash64(article, key)`` is a multiple of :func:`sample_every` (one in 64 at the default: about
390 sampled keys per range, so a range is within a few per cent of its size), sorted, every
``range_rows / every``-th one beginning a range. The same snapshot gives the same sample and so
the same boundaries, however Spark partitions it and whatever the session: a resume computes
the ranges the killed run loaded. Their digest (:attr:`KeyRanges.layout`) is recorded with each
range, and a resume that computes another (``snapshot_range_rows`` changed in between) loads the
snapshot again into tables created again (:func:`applier.pipeline.prepare.prepare`). A snapshot
known to hold at most ``range_rows`` rows is one range, found with no Spark job.

**Cost.** One Spark job reads the keys for the sample (a generated snapshot is cached: that job
builds the cache the load then reads); each row gets its range in the JVM (a binary search over
the boundaries written as nested CASE WHENs, :func:`range_column`), the rows are shuffled by
range into up to ``partitions`` loaders (each with at least :data:`LOADER_ROWS` rows to load) and
sorted by range, and each loader commits range after range. Measured on 1,000,000 generated rows
(40 ranges, 4 loaders, a shared 2-core machine): 5.7-6.9 s where the load without ranges took
3.6-5.6 s (the sample 0.3-1.6 s, the shuffle and sort ~2 s); a resume loads only its ranges.

The subscriber's unique and foreign keys are not added here: the run adds them once, after the
last range, in the transaction that records the load's phase (the snapshot may arrive in any
order, and a resume after they were added must not add them again).
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from applier import failpoints
from applier.articles import Article
from applier.config.model import RunSettings
from applier.dialects.base import Dialect
from applier.errors import TargetError
from applier.targets.endpoint import Endpoint
from applier.targets.progress import LoadedRange, ProgressTable

RANGE_ROWS = RunSettings().snapshot_range_rows  # rows of a key range (one transaction of the load)
SAMPLE_PER_RANGE = 100  # sampled keys per range at least, where the range is that large
SAMPLE_EVERY = 64  # ... and at most one key in this many sampled: ~390 per range at RANGE_ROWS
BULK_LOAD_ROWS = 10_000  # snapshot rows per statement where the dialect loads JSON
# snapshot rows below which another loader (a task, a connection) costs more than it saves
LOADER_ROWS = 20_000
_SEP = "\0"  # between the article and the key text in the order the ranges follow


def sample_every(range_rows: int) -> int:
    """One key in how many the sample takes: enough for :data:`SAMPLE_PER_RANGE` a range, at
    most one in :data:`SAMPLE_EVERY`; every key where ranges are under 200 rows."""
    return max(1, min(SAMPLE_EVERY, range_rows // SAMPLE_PER_RANGE))


@dataclass(frozen=True)
class KeyRanges:
    """The snapshot cut into key ranges: ``bounds[i]`` is the first (article, key text) of range
    ``i + 1`` (as ``article + "\\0" + key``); range 0 holds the keys before ``bounds[0]``.
    ``rows``: about how many rows the snapshot holds (known, or estimated from the sample)."""

    bounds: tuple[str, ...]
    rows: int

    @property
    def count(self) -> int:
        return len(self.bounds) + 1

    @property
    def layout(self) -> str:
        """The digest of the boundaries: a resume that computes other ranges finds it differs."""
        text = json.dumps(list(self.bounds), ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def of(self, article: str, key: str) -> int:
        """The range of the row of ``article`` with key text ``key``."""
        return bisect.bisect_right(self.bounds, f"{article}{_SEP}{key}")


def key_ranges(snapshot: DataFrame, range_rows: int = RANGE_ROWS, rows: int | None = None) -> KeyRanges:
    """The key ranges of ``snapshot`` (article, key, image) for ranges of about ``range_rows``
    rows; ``rows``: how many it holds, where known (at most ``range_rows``: one range, no job).
    Deterministic: the same keys give the same ranges (see the module's docstring)."""
    if range_rows < 1:
        raise ValueError(f"snapshot_range_rows must be at least 1, got {range_rows}")
    if rows is not None and rows <= range_rows:
        return KeyRanges((), rows)
    every = sample_every(range_rows)
    picked = snapshot.select("article", "key")
    if every > 1:
        picked = picked.where(F.pmod(F.xxhash64("article", "key"), F.lit(every)) == 0)
    sample = sorted(f"{r['article']}{_SEP}{r['key']}" for r in picked.collect())
    estimated = len(sample) * every
    n = max(1, min(len(sample), round(estimated / range_rows)))
    return KeyRanges(tuple(sample[(i * len(sample)) // n] for i in range(1, n)), estimated)


def range_column(bounds: Sequence[str]) -> Column:
    """The range of each row of (article, key) as a Spark column: :meth:`KeyRanges.of` as a binary
    search unrolled into nested CASE WHENs (log2(ranges) comparisons a row). Spark compares strings
    by their UTF-8 bytes, which orders them as Python orders them (by code point)."""
    composite = F.concat(F.col("article"), F.lit(_SEP), F.col("key"))

    def search(lo: int, hi: int) -> Column:  # the range among lo..hi whose bounds hold the row
        if lo == hi:
            return F.lit(lo)
        mid = (lo + hi + 1) // 2  # range mid begins at bounds[mid - 1]
        return F.when(composite >= F.lit(bounds[mid - 1]), search(mid, hi)).otherwise(search(lo, mid - 1))

    return search(0, len(bounds)).cast("int")


@dataclass(frozen=True)
class SnapshotLoad:
    """What a load did: the snapshot's rows in the subscriber (the ranges loaded before and now),
    the rows this load inserted, the snapshot's key ranges and how many of them an earlier,
    killed load had committed (not loaded again)."""

    rows: int
    loaded: int
    ranges: int
    resumed: int


def _insert_many_sql(dialect: Dialect, article: Article, nrows: int) -> str:
    cols = ", ".join(dialect.quote(c) for c in article.column_names)
    one = "(" + ", ".join(dialect.param_marker(c.type) for c in article.replicated) + ")"
    return f"INSERT INTO {dialect.table(article)} ({cols}) VALUES " + ", ".join([one] * nrows)


def load_snapshot(
    snapshot: DataFrame,
    target: Endpoint,
    articles: Sequence[Article],
    subscription: str,
    *,
    ranges: KeyRanges | None = None,
    done: Mapping[int, LoadedRange] | None = None,
    partitions: int = 4,
    rows: int | None = None,
    range_rows: int = RANGE_ROWS,
) -> SnapshotLoad:
    """Insert the snapshot rows (article, key, image) range by range, each range's rows and its
    record in ``applier.ranges`` in one transaction, in up to ``partitions`` parallel tasks.
    ``ranges``: the snapshot's key ranges (None: :func:`key_ranges` of ``range_rows``, given
    ``rows``, about how many rows it holds where known); ``done``: the ranges an earlier load
    of the same ranges committed, skipped (the caller checked their layout)."""
    ranges = ranges if ranges is not None else key_ranges(snapshot, range_rows, rows)
    done = dict(done or {})
    before = sum(r.rows for n, r in done.items() if n < ranges.count)
    todo = [n for n in range(ranges.count) if n not in done]
    if not todo:
        return SnapshotLoad(before, 0, ranges.count, len(done))
    load = _loader(target, articles, subscription, ranges.layout)
    rows_todo = ranges.rows if ranges.count == 1 else ranges.rows * len(todo) // ranges.count
    want = max(1, min(partitions, len(todo), -(-rows_todo // LOADER_ROWS)))
    snap = snapshot.select("article", "key", "image")
    if ranges.count == 1:
        # One range, one transaction: one task. The count is the JVM's (a Python RDD of the
        # DataFrame costs a conversion: ~0.35 s on a new JVM); coalesce: no shuffle of the images.
        have = int(snap._jdf.rdd().getNumPartitions())  # noqa: SLF001 - no Python RDD made
        spread = (snap.coalesce(1) if have > 1 else snap).withColumn("range", F.lit(0))
    else:
        # the range of each row in the JVM (no Python pass over the rows before the load's own):
        # whole ranges to each loader (a range partitioning of the range numbers), in order
        placed = snap.withColumn("range", range_column(ranges.bounds))
        if done:
            placed = placed.where(~F.col("range").isin(sorted(done)))
        spread = placed.repartitionByRange(want, "range").sortWithinPartitions("range")
    # one row per task: summed here, not by a shuffle (two more Spark jobs under AQE)
    loaded = sum(int(r["n"]) for r in spread.mapInArrow(load, "n long").collect())
    return SnapshotLoad(before + loaded, loaded, ranges.count, len(done))


def _loader(
    target: Endpoint, articles: Sequence[Article], subscription: str, layout: str
) -> Any:  # the mapInArrow function
    by_name = {a.name: a for a in articles}

    def load(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        dialect = target.dialect
        table = ProgressTable(dialect)
        conn = target.connect()
        cur = conn.cursor()
        pending: dict[str, list[Any]] = {}
        bulk = {name: dialect.bulk_insert_sql(a) for name, a in by_name.items()}
        loaded = 0
        current: int | None = None  # the range being loaded
        count = 0  # ... its rows so far
        skip = False  # ... committed by an earlier try of this task

        def flush(name: str) -> None:
            rows = pending.pop(name, [])
            if not rows:
                return
            sql = bulk[name]
            if sql is not None:  # the images as they are, one JSON text
                cur.execute(sql, "[" + ",".join(rows) + "]")
            else:
                params = [v for r in rows for v in r]
                cur.execute(_insert_many_sql(dialect, by_name[name], len(rows)), params)
            failpoints.reach("load.batch")

        def commit_range() -> None:  # its rows and its record, in one transaction
            nonlocal loaded
            if current is None or skip:
                return
            for name in list(pending):
                flush(name)
            table.write_range(cur, subscription, current, count, layout)
            conn.commit()
            loaded += count
            failpoints.reach("load.range")

        try:
            done = table.read_ranges(cur, subscription)
            for b in batches:
                for name, image, no in zip(
                    b.column("article").to_pylist(),
                    b.column("image").to_pylist(),
                    b.column("range").to_pylist(),
                    strict=True,
                ):
                    if no != current:
                        commit_range()
                        current, count, skip = no, 0, no in done
                    if skip:
                        continue
                    a = by_name[name]
                    if bulk[name] is not None:
                        pending.setdefault(name, []).append(image)
                        limit = BULK_LOAD_ROWS
                    else:
                        img = json.loads(image)
                        pending.setdefault(name, []).append(
                            tuple(
                                dialect.to_param(c.type, v) for c in a.replicated for v in (img.get(c.name),)
                            )
                        )
                        limit = min(dialect.MAX_PARAMS_PER_BATCH // len(a.replicated), 1000)
                    count += 1
                    if len(pending[name]) >= limit:
                        flush(name)
            commit_range()
        except Exception as e:
            dialect.rollback(conn)
            raise TargetError(f"loading the snapshot into {target.redacted} failed: {e}") from None
        finally:
            conn.close()
        yield pa.RecordBatch.from_pydict({"n": pa.array([loaded], pa.int64())})

    return load
