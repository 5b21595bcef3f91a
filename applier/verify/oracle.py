"""The oracle: the state the subscriber must reach, without a serial replay.

Every command emits key events: an insert produces its after key; a delete removes its
before key; an update removes its before key and produces its after key (a key-preserving
update removes and produces the same key: the produce, ordered after, wins). For each key
the latest event by (lsn, order) decides: produced -> the row exists with that after
image; removed -> it does not; no event -> the initial snapshot stands (each snapshot row
is its key's first event, a produce). One group-by in Spark.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from applier.articles import Article, Syntax


def replicated(changes: DataFrame, articles: Sequence[Article]) -> DataFrame:
    """The commands a subscriber receives: an operation delivered as NONE is not replicated
    (seed 003: "Transactions of that type are not replicated"), so it is no key event."""
    dropped = [(a.name, op) for a in articles for op in "IUD" if a.delivery(op).syntax == Syntax.NONE]
    if not dropped:
        return changes
    cond = F.lit(False)
    for name, op in dropped:
        cond = cond | ((F.col("article") == name) & (F.col("op") == op))
    return changes.where(~cond)


def key_events(changes: DataFrame) -> DataFrame:
    """(article, key, lsn, ord, produced, image, schema_version) for every key event of every
    command (a stream without schema_version, as routed for the streams, is all at version 1)."""
    # A key-preserving update's remove is always outranked by its own produce (same lsn,
    # ord 1 > 0): only deletes and key changes remove. One scan of the commands, each giving
    # its two events in an array (a union of two selects read the commands twice).
    version = F.col("schema_version") if "schema_version" in changes.columns else F.lit(1)
    removes = (F.col("op") == "D") | (
        (F.col("op") == "U") & ~F.col("key_before").eqNullSafe(F.col("key_after"))
    )
    removed = F.struct(
        F.col("key_before").alias("key"),
        F.lit(0).alias("ord"),
        F.lit(False).alias("produced"),
        F.lit(None).cast("string").alias("image"),
        F.when(removes, True).alias("keep"),
    )
    produced = F.struct(
        F.col("key_after").alias("key"),
        F.lit(1).alias("ord"),
        F.lit(True).alias("produced"),
        F.col("after").alias("image"),
        F.when(F.col("op").isin("I", "U"), True).alias("keep"),
    )
    return (
        changes.select(
            "article",
            "lsn",
            version.alias("schema_version"),
            F.explode(F.array(removed, produced)).alias("e"),
        )
        .where("e.keep")
        .select("article", "e.key", "lsn", "e.ord", "e.produced", "e.image", "schema_version")
    )


def latest_rows(changes: DataFrame, snapshot: DataFrame) -> DataFrame:
    """(article, key, image, schema_version): every row after the whole stream, each image
    at the schema version of the command that wrote it (the snapshot's at version 1)."""
    # The snapshot is each key's first event (a produce before any lsn): one group-by gives
    # every row, where a join of the untouched snapshot rows cost a second shuffle.
    initial = snapshot.select(
        "article",
        "key",
        F.lit(-(2**63)).cast("long").alias("lsn"),
        F.lit(0).alias("ord"),
        F.lit(True).alias("produced"),
        "image",
        F.lit(1).alias("schema_version"),
    )
    # The latest event of a key by (lsn, ord): max_by, not max of one struct holding the image
    # (that one compares whole structs and measured ~1.7x slower at 1M commands).
    return (
        key_events(changes)
        .unionByName(initial)
        .groupBy("article", "key")
        .agg(F.max_by(F.struct("produced", "image", "schema_version"), F.struct("lsn", "ord")).alias("last"))
        .where("last.produced")
        .select("article", "key", "last.image", "last.schema_version")
    )


def oracle(changes: DataFrame, snapshot: DataFrame) -> DataFrame:
    """(article, key, image) of every row the subscriber must hold after the whole stream."""
    return latest_rows(changes, snapshot).select("article", "key", "image")


DIGEST_SALT = 0x5EED  # the second hash's seed input: two independent 64-bit hashes


def _hashes(image: Column | str) -> tuple[Column, Column]:
    """Two independent 64-bit xxhash64s of an image text."""
    return F.xxhash64(image), F.xxhash64(F.lit(DIGEST_SALT), image)


def digest(image: Column) -> Column:
    """An image text as struct(h1, h2) of :func:`_hashes`: equal texts give equal digests;
    two different texts give equal ones with probability ~2^-128."""
    h1, h2 = _hashes(image)
    return F.struct(h1.alias("h1"), h2.alias("h2"))


def digested(rows: DataFrame) -> DataFrame:
    """(article, key, image) with each image replaced by its :func:`digest`."""
    return rows.select("article", "key", digest(F.col("image")).alias("image"))


def _hash_sql(image: str) -> tuple[str, str]:
    """:func:`_hashes` as Spark SQL text."""
    return f"xxhash64({image})", f"xxhash64({DIGEST_SALT}, {image})"


def _digest_rows(changes: DataFrame, snapshot: DataFrame, found: DataFrame | None) -> DataFrame:
    """(article, key, lsn, produced, h1, h2, s1, s2, f1, f2): every key event with its image's
    digest (h), every snapshot row with its own (s) and every subscriber row with its own (f),
    these two with a NULL lsn. Expressions as SQL text on the DataFrames (not ``spark.sql``
    over them: that reads a cached stream again from its source): built as Columns they took
    ~900 calls to the JVM, ~0.3 s of a warm run's driver."""
    h1, h2 = _hash_sql("e.image")
    s1, s2 = _hash_sql("image")
    null = "CAST(NULL AS BIGINT)"
    events = (
        changes.selectExpr(
            "article",
            "lsn",
            """explode(array(
                named_struct('key', key_before, 'produced', false, 'image', CAST(NULL AS STRING),
                             'keep', op = 'D' OR (op = 'U' AND NOT (key_before <=> key_after))),
                named_struct('key', key_after, 'produced', true, 'image', after,
                             'keep', op IN ('I', 'U'))
            )) AS e""",
        )
        .where("e.keep")
        .selectExpr(
            "article",
            "e.key AS key",
            "lsn",
            "e.produced AS produced",
            f"{h1} AS h1",
            f"{h2} AS h2",
            *[f"{null} AS {c}" for c in ("s1", "s2", "f1", "f2")],
        )
    )
    sides = [("s1", "s2", snapshot)] + ([("f1", "f2", found)] if found is not None else [])
    for a, b, rows in sides:
        cols = {"s1": null, "s2": null, "f1": null, "f2": null, a: s1, b: s2}
        events = events.unionByName(
            rows.selectExpr(
                "article",
                "key",
                f"{null} AS lsn",
                "CAST(NULL AS BOOLEAN) AS produced",
                f"{null} AS h1",
                f"{null} AS h2",
                *[f"{v} AS {c}" for c, v in cols.items()],
            )
        )
    return events


def _compared(changes: DataFrame, snapshot: DataFrame, found: DataFrame | None) -> DataFrame:
    """(article, key, expected, found, nfound), digests: per key the latest event's digest by
    lsn (max_by skips the NULL lsn of snapshot and subscriber rows), else the snapshot row's.

    lsn names one command, and a command is one event per key (only deletes and key changes
    remove, from another key than they produce): the latest event has the largest lsn. The
    snapshot is not an event: a key no command touched keeps its row."""
    return (
        _digest_rows(changes, snapshot, found)
        .groupBy("article", "key")
        .agg(
            F.expr("max_by(produced, lsn)").alias("produced"),
            F.expr("max_by(h1, lsn)").alias("h1"),
            F.expr("max_by(h2, lsn)").alias("h2"),
            F.expr("max(s1)").alias("s1"),
            F.expr("max(s2)").alias("s2"),
            F.expr("max(f1)").alias("f1"),
            F.expr("max(f2)").alias("f2"),
            F.expr("count(f1)").alias("nfound"),
        )
        .selectExpr(
            "article",
            "key",
            """CASE WHEN produced THEN named_struct('h1', h1, 'h2', h2)
                    WHEN produced IS NULL AND s1 IS NOT NULL THEN named_struct('h1', s1, 'h2', s2)
               END AS expected""",
            "CASE WHEN nfound > 0 THEN named_struct('h1', f1, 'h2', f2) END AS found",
            "nfound",
        )
    )


def oracle_digest(changes: DataFrame, snapshot: DataFrame) -> DataFrame:
    """:func:`oracle` with each image as its :func:`digest`.

    Every aggregate here is fixed-width (booleans and longs, ordered by lsn), so Spark
    aggregates in a hash map; ``max_by`` of a struct holding the image text cannot, and
    sorts every event twice (1M commands: ~2.5 s against ~1.3 s warm, ~5.5 against ~2.6 on
    a cold JVM)."""
    return (
        _compared(changes, snapshot, None)
        .where("expected IS NOT NULL")
        .selectExpr("article", "key", "expected AS image")
    )


def digest_diff(changes: DataFrame, snapshot: DataFrame, found: DataFrame) -> DataFrame:
    """(article, key, expected, found, kind, nfound) for every key of either side, images as
    digests: :func:`oracle_digest` and the subscriber's rows (``found``: article, key, image)
    in one group-by, where a join of the two cost a second shuffle and two more Spark jobs.
    ``nfound``: the subscriber's rows of that key (more than one is a difference)."""
    return _compared(changes, snapshot, found).selectExpr(
        "*",
        """CASE WHEN found IS NULL AND expected IS NOT NULL THEN 'missing'
                WHEN expected IS NULL AND found IS NOT NULL THEN 'extra'
                WHEN found != expected OR nfound > 1 THEN 'different'
           END AS kind""",
    )
