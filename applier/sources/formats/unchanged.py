"""Values a capture leaves out of an update's new row because they did not change, taken from
the row's previous image.

PostgreSQL keeps a large value out of line (TOAST: a row over ~2 kB after compression). An update
that leaves such a value alone writes no new copy, so logical decoding has no value for it in the
new row: wal2json leaves the column out (format versions 1 and 2 alike, whether or not the update
moves the key), Debezium writes ``__debezium_unavailable_value``
(https://www.postgresql.org/docs/15/storage-toast.html; PostgreSQL's own apply worker receives
it as ``u``, "unchanged toasted datum", and leaves the column alone). Only ``REPLICA IDENTITY
FULL`` puts the old value in the old row, and the readers take it from there. Otherwise the
reader marks the column ``unchanged`` (:class:`applier.sources.formats.Change`) and this module
fills it: the value is the row's as it stood before the update, which is the after image of the
command that last left a row at the update's before key (an insert, or an update that left the
row there: a key move lands it), or the snapshot's row at that key when no command did.

On the executors, nothing collected but counts and the first errors:

1. For every (update, column left out), a window over the key events of (article, column, key)
   in lsn order (the snapshot first, an update's consuming its before key before its producing
   its after key) finds the last earlier event that holds the value, or that moved the row to
   this key: its *anchor*. An update at the same key that left the column out too holds the
   same value as the one before it, so it is passed over.
2. An anchor that moved the row here without the value is itself an update with the column left
   out, whose anchor was found at its own before key: each pass replaces such anchors by theirs
   (pointer jumping), so a chain of k such moves takes about log2(k) passes.
3. The values are joined from the anchors' images and set into the after images (the canonical
   JSON text written again); the update's ``changed`` columns never included them.

A row whose earlier image is nowhere (no command before it produced the key and the snapshot does
not hold it: a capture started without its snapshot) is refused naming the command's place, its
source position and the column, with what would give the value.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from applier.errors import InputError
from applier.sources.formats.convert import SOURCE, UNCHANGED
from applier.sources.positions import PLACE
from applier.sources.reading import KEPT, raise_errors
from applier.sparkenv import without_aqe
from applier.values import dumps_image

MAX_PASSES = 64  # 2**64 moves: a chain can never be longer
_ANCHOR = "struct<at:bigint,whole:boolean,key:string>"


def _anchor(at: Any, whole: bool, key: Any = None) -> Any:
    """(lsn of the image, does it hold the value, the snapshot's key when at is 0)."""
    return F.struct(
        at.cast("bigint").alias("at"),
        F.lit(whole).alias("whole"),
        (key if key is not None else F.lit(None)).cast("string").alias("key"),
    )


def _fill(after: str, fills: Sequence[Any]) -> str:
    image = json.loads(after)
    for f in fills:
        image[f["col"]] = json.loads(f["image"])[f["col"]]
    return dumps_image(image)


def _missing(r: Any) -> str:
    return (
        f"{r[PLACE]}: {r[SOURCE]}: column {r['col']!r} is left out of the update's new row as unchanged "
        "(an unchanged TOASTed value) and no earlier image of the row holds it: neither a command "
        "before it nor the snapshot has the row (capture with its snapshot: applier capture "
        "--create-slot --snapshot FILE, then run --snapshot FILE; or set REPLICA IDENTITY FULL on the table)"
    )


@contextlib.contextmanager
def _no_broadcast(spark: Any) -> Iterator[None]:
    """Joins as shuffles inside one job: a broadcast join runs its small side as a Spark job of
    its own (the fill of a 600-transaction capture: 12 jobs, 5 without broadcasts)."""
    key = "spark.sql.autoBroadcastJoinThreshold"
    before = spark.conf.get(key, None)
    spark.conf.set(key, "-1")
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def fill_unchanged(
    rows: DataFrame, snapshot: DataFrame, what: str, changes: int
) -> tuple[DataFrame, tuple[DataFrame, ...]]:
    """``rows`` (a capture's canonical rows with ``_unchanged``) with every value left out as
    unchanged taken from the row's previous image in ``rows`` or ``snapshot``; InputError naming
    the first commands whose value is nowhere. ``changes``: the rows' number (the shuffles' size).
    Returns the rows (persisted, computed) and what was cached. One Spark job, one more a pass of
    pointer jumping, one for the rows filled (adaptive execution and broadcasts off: a job a
    query)."""
    spark = rows.sparkSession
    cached: list[DataFrame] = []
    try:
        with without_aqe(spark, rows=changes), _no_broadcast(spark):
            resolved = _anchors(rows, snapshot)
            cached.append(resolved)
            counts = resolved.select(
                F.count(F.when(F.col("anchor").isNull(), 1)), F.count(F.when(~F.col("anchor.whole"), 1))
            ).first()
            assert counts is not None  # an aggregate has one row
            nowhere, moved = counts
            if nowhere:
                raise_errors(resolved.where(F.col("anchor").isNull()).rdd.map(_missing).take(KEPT), what)
            for _ in range(MAX_PASSES):
                if not moved:
                    break
                step = _jump(resolved).persist(StorageLevel.MEMORY_AND_DISK)
                moved = step.where(~F.col("anchor.whole")).count()
                cached.remove(resolved)
                resolved.unpersist()
                resolved = step
                cached.append(resolved)
            else:
                raise InputError(
                    f"{what}: unchanged values: a chain of key moves longer than 2**{MAX_PASSES}"
                )
            out = _filled(rows, snapshot, resolved).persist(StorageLevel.MEMORY_AND_DISK)
            cached.append(out)
            out.count()
        for c in cached[:-1]:
            c.unpersist()
        return out, (out,)
    except BaseException:
        for c in cached:
            c.unpersist()
        raise


def _anchors(rows: DataFrame, snapshot: DataFrame) -> DataFrame:
    """Every (update, column left out) with the anchor its key's events give (persisted)."""
    need = rows.where(F.size(UNCHANGED) > 0).select(
        "lsn", "article", F.col("key_before").alias("key"), F.explode(UNCHANGED).alias("col"), PLACE, SOURCE
    )
    keys = need.select("article", "col", "key").distinct()
    has = ~F.array_contains(F.col(UNCHANGED), F.col("col"))
    moved = ~F.col("key_before").eqNullSafe(F.col("key_after"))
    produced = (
        rows.where(F.col("op").isin("I", "U"))
        .select("lsn", "article", F.col("key_after").alias("key"), "key_before", "key_after", UNCHANGED)
        .join(keys, ["article", "key"], "inner")  # only the keys an update needs a value at
        .select(
            "article",
            "col",
            "key",
            "lsn",
            F.lit(1).alias("kind"),
            F.when(has, _anchor(F.col("lsn"), True))
            .when(moved, _anchor(F.col("lsn"), False))
            .alias("anchor"),
        )
    )
    snap = snapshot.join(keys, ["article", "key"], "inner").select(
        "article",
        "col",
        "key",
        F.lit(0).cast("bigint").alias("lsn"),
        F.lit(1).alias("kind"),
        _anchor(F.lit(0), True, F.col("key")).alias("anchor"),
    )
    consumed = need.select(
        "article",
        "col",
        "key",
        "lsn",
        F.lit(0).alias("kind"),
        F.lit(None).cast(_ANCHOR).alias("anchor"),
        PLACE,
        SOURCE,
    )
    earlier = Window.partitionBy("article", "col", "key").orderBy("lsn", "kind")
    earlier = earlier.rowsBetween(Window.unboundedPreceding, -1)
    nothing = F.lit(None).cast("string")
    return (
        produced.withColumn(PLACE, nothing)
        .withColumn(SOURCE, nothing)
        .unionByName(snap.withColumn(PLACE, nothing).withColumn(SOURCE, nothing))
        .unionByName(consumed)
        .withColumn("found", F.last("anchor", ignorenulls=True).over(earlier))
        .where(F.col("kind") == 0)
        .select("lsn", "article", "col", PLACE, SOURCE, F.col("found").alias("anchor"))
        .persist(StorageLevel.MEMORY_AND_DISK)
    )


def _jump(resolved: DataFrame) -> DataFrame:
    """Each anchor that moved the row without its value replaced by that update's own anchor."""
    nxt = resolved.select(
        F.col("lsn").alias("_at"), F.col("col").alias("_col"), F.col("anchor").alias("_next")
    )
    on = (F.col("anchor.at") == F.col("_at")) & (F.col("col") == F.col("_col")) & ~F.col("anchor.whole")
    return resolved.join(nxt, on, "left").select(
        "lsn",
        "article",
        "col",
        PLACE,
        SOURCE,
        F.when(F.col("anchor.whole"), F.col("anchor")).otherwise(F.col("_next")).alias("anchor"),
    )


def _filled(rows: DataFrame, snapshot: DataFrame, resolved: DataFrame) -> DataFrame:
    """``rows`` with the anchors' values set into the after images that left them out."""
    images = rows.select(F.col("lsn").alias("_at"), F.col("after").alias("image"))
    from_rows = resolved.where(F.col("anchor.at") > 0).join(images, F.col("anchor.at") == F.col("_at"))
    snaps = snapshot.select(F.col("article").alias("_a"), F.col("key").alias("_k"), "image")
    from_snap = resolved.where(F.col("anchor.at") == 0).join(
        snaps, (F.col("article") == F.col("_a")) & (F.col("anchor.key") == F.col("_k"))
    )
    fills = (
        from_rows.select("lsn", "col", "image")
        .unionByName(from_snap.select("lsn", "col", "image"))
        .groupBy("lsn")
        .agg(F.collect_list(F.struct("col", "image")).alias("_fills"))
    )
    fill = F.udf(lambda after, fills: _fill(after, fills), "string")
    to_fill = (
        rows.join(fills, "lsn").withColumn("after", fill(F.col("after"), F.col("_fills"))).drop("_fills")
    )
    return rows.join(fills.select("lsn"), "lsn", "left_anti").unionByName(to_fill)
