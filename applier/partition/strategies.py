"""Partition: assign every command a stream. One function per strategy, one signature.

A strategy takes the canonical change DataFrame with its dense ``xact_index`` (see
:func:`with_rounds`), N and the articles, and returns it with an integer ``stream`` column in
0..N-1 (and, for ``writeset``, a ``deps`` column). Strategies are registered by name in
STRATEGIES.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from applier.articles import Article

Strategy = Callable[[DataFrame, int, Sequence[Article]], DataFrame]
DEPS_TYPE = "array<struct<stream:int,lsn:long>>"


def single(df: DataFrame, n: int, articles: Sequence[Article]) -> DataFrame:
    """Everything on stream 0: the serial baseline."""
    return df.withColumn("stream", F.lit(0))


def key_hash(df: DataFrame, n: int, articles: Sequence[Article]) -> DataFrame:
    """The Distribution Agent: hash of the key the target sees (the before image's key for
    updates and deletes, the after image's for inserts). A key change moves the row to
    another bucket: the documented 1->2, 2->3 hazard."""
    key: Column = F.coalesce(F.col("key_before"), F.col("key_after"))
    return df.withColumn("stream", F.pmod(F.xxhash64(F.col("article"), key), F.lit(n)).cast("int"))


def round_robin(df: DataFrame, n: int, articles: Sequence[Article]) -> DataFrame:
    """Whole transactions dealt to streams in commit order: a naive parallel applier that
    exposes every reordering, the silent ones included."""
    return df.withColumn("stream", F.pmod(F.col("xact_index"), F.lit(n)).cast("int"))


UNIQUE = "#unique"  # a unique key's namespace: "<article>#unique<i>"


def image_keys(article: Article, image: dict[str, Any]) -> dict[tuple[str, str], bool]:
    """The keys one image holds, as (namespace, key JSON), each with whether it is a foreign
    key's parent key (True) rather than the row's own (its primary key, each unique key's
    values). A parent key's namespace is the parent article's (its primary key). A unique or
    foreign key with a NULL value constrains nothing; an image without a group's columns (a
    key-only before image) holds none of it."""
    keys: dict[tuple[str, str], bool] = {}
    groups = [(article.name, article.key, False)]
    groups += [(f"{article.name}{UNIQUE}{i}", u, False) for i, u in enumerate(article.unique)]
    groups += [(parent, cols, True) for cols, parent, _pcols in article.references]
    for ns, cols, parent_key in groups:
        if all(c in image for c in cols):
            vals = [image[c] for c in cols]
            if any(v is None for v in vals) and ns != article.name:
                continue
            keys.setdefault((ns, json.dumps(vals, separators=(",", ":"), ensure_ascii=False)), parent_key)
    return keys


def write_keys(article: Article, before: str | None, after: str | None) -> list[str]:
    """Every key a command reads or writes, as 'namespace key-json' strings: the primary key
    of both images, each unique key's values, and the parent key of each foreign key."""
    keys: set[str] = set()
    for img_text in (before, after):
        if img_text:
            keys.update(f"{ns} {k}" for ns, k in image_keys(article, json.loads(img_text)))
    return sorted(keys)


def writeset(df: DataFrame, n: int, articles: Sequence[Article]) -> DataFrame:
    """MySQL WRITESET / GoldenGate dependency style: each transaction depends on the latest
    earlier transaction that touched any of its keys (primary, unique and foreign-key parent
    keys of its before and after images), found with a window function over keys. Transactions
    are dealt to streams in commit order; a stream applies one only once its dependencies are
    committed, as its progress table shows. ``deps`` lists (stream, last lsn) to wait for."""
    by_name = {a.name: a for a in articles}

    def keys_of(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            xs, ks = [], []
            for x, art, bef, aft in zip(
                b.column("xact_index").to_pylist(),
                b.column("article").to_pylist(),
                b.column("before").to_pylist(),
                b.column("after").to_pylist(),
                strict=True,
            ):
                for k in write_keys(by_name[art], bef, aft):
                    xs.append(x)
                    ks.append(k)
            yield pa.RecordBatch.from_arrays(
                [pa.array(xs, pa.int64()), pa.array(ks, pa.string())], names=["xact_index", "wkey"]
            )

    touched = (
        df.select("xact_index", "article", "before", "after")
        .mapInArrow(keys_of, "xact_index long, wkey string")
        .distinct()
    )
    prev = touched.withColumn(
        "dep", F.lag("xact_index").over(Window.partitionBy("wkey").orderBy("xact_index"))
    )
    last_lsn = (
        df.groupBy("xact_index").agg(F.max("lsn").alias("dep_lsn")).withColumnRenamed("xact_index", "dep")
    )
    deps = (
        prev.where(F.col("dep").isNotNull())
        .select("xact_index", "dep")
        .distinct()
        .join(last_lsn, "dep")
        .withColumn("dep_stream", F.pmod(F.col("dep"), F.lit(n)).cast("int"))
        .groupBy("xact_index", "dep_stream")
        .agg(F.max("dep_lsn").alias("dep_lsn"))
        .groupBy("xact_index")
        .agg(
            F.collect_list(
                F.struct(F.col("dep_stream").alias("stream"), F.col("dep_lsn").alias("lsn"))
            ).alias("deps")
        )
    )
    out = round_robin(df, n, articles).join(deps, "xact_index", "left")
    return out.withColumn("deps", F.coalesce(F.col("deps"), F.array().cast(DEPS_TYPE)))


STRATEGIES: dict[str, Strategy] = {
    "single": single,
    "key-hash": key_hash,
    "round-robin": round_robin,
    "writeset": writeset,
}


def partition(df: DataFrame, strategy: str, n: int, articles: Sequence[Article] = ()) -> DataFrame:
    return STRATEGIES[strategy](df, n, articles)


@dataclass(frozen=True)
class Timed:
    """Rounds cut on a replayed capture's clock (``--pace source``): ``times``: each
    transaction's commit at the publisher, epoch seconds, by ``xact_seqno - 1``; ``speed``: how
    much faster than the capture; ``interval``: the seconds of commits a round takes at most."""

    times: tuple[float, ...]
    speed: float = 1.0
    interval: float = 0.1

    def dues(self, xacts: Sequence[int]) -> list[float]:
        """Each transaction's due time, seconds after the capture's first commit, scaled."""
        t0 = self.times[0] if self.times else 0.0
        return [(self.times[int(x) - 1] - t0) / self.speed for x in xacts]


def time_rounds(dues: Sequence[float], interval: float, cap: int) -> list[int]:
    """The first transaction (index into ``dues``) of each round: a round holds the
    transactions due within ``interval`` seconds of its first, ``cap`` at most (CommitBatchSize).
    A round starts once its last transaction is due, so a transaction waits less than
    ``interval`` beyond its own due time for its round to start."""
    firsts: list[int] = []
    for i, d in enumerate(dues):
        if not firsts or i - firsts[-1] >= cap or d - dues[firsts[-1]] >= interval:
            firsts.append(i)
    return firsts


def cut(
    rows: DataFrame,
    commit_batch_size: int,
    strategy: str,
    n: int,
    articles: Sequence[Article] = (),
    known: tuple[int, int] | None = None,
    counts: dict[str, int] | None = None,
    xacts: Sequence[int] | None = None,
    timed: Timed | None = None,
    schedule: dict[str, Any] | None = None,
) -> tuple[DataFrame, int]:
    """The stream as a run applies it: rounds of ``commit_batch_size`` transactions
    (:func:`with_rounds`), each command on its stream by ``strategy`` over ``n``; and the count
    of rounds. The run plans its segments with it; ``applier streams --explain`` and the
    explanation of a run's resets cut the stream again with it, the same way."""
    indexed, rounds = with_rounds(rows, commit_batch_size, known, counts, xacts, timed, schedule)
    return partition(indexed, strategy, n, articles), rounds


def with_rounds(
    df: DataFrame,
    commit_batch_size: int,
    known: tuple[int, int] | None = None,
    counts: dict[str, int] | None = None,
    xacts: Sequence[int] | None = None,
    timed: Timed | None = None,
    schedule: dict[str, Any] | None = None,
) -> tuple[DataFrame, int]:
    """Add ``xact_index`` (dense, 0-based, in commit order) and ``round``; return the count of rounds.

    ``timed``: rounds cut on a replayed capture's clock (:func:`time_rounds`, CommitBatchSize
    their cap) instead of every ``commit_batch_size`` transactions; ``schedule`` then gets
    each transaction's ``dues`` (by xact_index) and the rounds' ``firsts``.

    When the transaction numbers are already consecutive (generated streams, most change
    files), the index is ``xact_seqno - min``: one aggregate, no sort and no join. Otherwise
    the distinct transactions are sorted and zipped with their index on the executors.
    Either way nothing but a few numbers reaches the driver. ``known`` (first transaction,
    count), for a stream whose transactions are known consecutive, reads nothing. ``counts``
    gets the stream's ``commands`` and ``transactions`` where they were read (not ``known``).
    ``xacts``: every transaction of the stream in commit order, known on the driver (a small
    file's): each one's index is joined from that list (a broadcast: one small job), where
    counting, sorting and zipping them took three.
    """
    if timed is not None:
        return _timed_rounds(df, commit_batch_size, known, counts, xacts, timed, schedule)
    if xacts is not None:
        spark = df.sparkSession
        index = spark.createDataFrame(
            list(zip(xacts, range(len(xacts)), strict=True)), "x long, xact_index long"
        )
        out = df.join(F.broadcast(index), F.col("xact_seqno") == F.col("x")).drop("x")
        out = out.withColumn("round", (F.col("xact_index") / F.lit(commit_batch_size)).cast("int"))
        return out, (len(xacts) + commit_batch_size - 1) // commit_batch_size
    if known is not None:
        lo, n_xacts, consecutive = known[0], known[1], True
    else:
        stats = df.agg(
            F.min("xact_seqno").alias("lo"),
            F.max("xact_seqno").alias("hi"),
            F.countDistinct("xact_seqno").alias("n"),
            F.count("*").alias("c"),
        ).collect()[0]
        n_xacts = int(stats["n"] or 0)
        if counts is not None:
            counts.update(commands=int(stats["c"] or 0), transactions=n_xacts)
        lo = int(stats["lo"]) if n_xacts else 0
        consecutive = bool(n_xacts) and int(stats["hi"]) - lo + 1 == n_xacts
    if not n_xacts:  # nothing to apply (a subscription whose filter takes no command)
        empty = df.withColumn("xact_index", F.lit(None).cast("long"))
        return empty.withColumn("round", F.lit(None).cast("int")), 0
    if consecutive:
        out = df.withColumn("xact_index", F.col("xact_seqno") - F.lit(lo))
    else:
        distinct = df.select("xact_seqno").distinct().orderBy("xact_seqno")
        indexed = distinct.rdd.map(lambda r: r[0]).zipWithIndex().toDF(["xact_seqno", "xact_index"])
        out = df.join(indexed, "xact_seqno")
    out = out.withColumn("round", (F.col("xact_index") / F.lit(commit_batch_size)).cast("int"))
    return out, (n_xacts + commit_batch_size - 1) // commit_batch_size


def _timed_rounds(
    df: DataFrame,
    cap: int,
    known: tuple[int, int] | None,
    counts: dict[str, int] | None,
    xacts: Sequence[int] | None,
    timed: Timed,
    schedule: dict[str, Any] | None,
) -> tuple[DataFrame, int]:
    """with_rounds on a capture's clock: the transactions in commit order on the driver (known,
    or one small job), their due times and rounds, joined back by a broadcast."""
    if xacts is None:
        if known is not None:
            xacts = range(known[0], known[0] + known[1])
        else:
            xacts = [int(r[0]) for r in df.select("xact_seqno").distinct().orderBy("xact_seqno").collect()]
            if counts is not None:
                counts.update(commands=int(df.count()), transactions=len(xacts))
    dues = timed.dues(xacts)
    firsts = time_rounds(dues, timed.interval, cap)
    if schedule is not None:
        schedule.update(dues=dues, firsts=firsts)
    rounds = [0] * len(dues)
    for r, first in enumerate(firsts):
        end = firsts[r + 1] if r + 1 < len(firsts) else len(dues)
        rounds[first:end] = [r] * (end - first)
    if not dues:
        empty = df.withColumn("xact_index", F.lit(None).cast("long"))
        return empty.withColumn("round", F.lit(None).cast("int")), 0
    index = df.sparkSession.createDataFrame(
        list(zip(xacts, range(len(dues)), rounds, strict=True)), "x long, xact_index long, round int"
    )
    out = df.join(F.broadcast(index), F.col("xact_seqno") == F.col("x")).drop("x")
    return out, len(firsts)
