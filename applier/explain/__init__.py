"""``applier streams --explain``: which stream each key of a run went to, and where a hazard can fire.

The stream is read (or generated) and cut exactly as ``applier run`` cuts it (rounds of
``commit_batch_size`` transactions, the partition strategy over N streams), but nothing is
applied. Every row command touches one or two keys (the before image's and the after image's:
a key update touches both); for each key, its commands in lsn order with their round and
stream. A key whose commands in one round sit on more than one stream is where the order of
the publisher is not kept: a later command may reach the row before an earlier one (the
update of key 2 before the key update 1 -> 2 that creates it: 20598). Keys whose commands stay
on one stream per round cannot be reordered. With ``writeset`` partitioning, commands on
different streams wait for their dependencies, so crossings there are ordered.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from applier.config import Config
from applier.partition.strategies import partition, with_rounds
from applier.pipeline.run import load_stream, reads_input
from applier.records.schema import ROW_OPS
from applier.sources.formats import Options
from applier.sources.hazards import effective_config


@dataclass(frozen=True)
class StreamMap:
    """Every key with its commands (lsn, xact_seqno, round, stream, op, key before and after)
    and the rounds in which they sit on more than one stream (``crossing``)."""

    keys: DataFrame
    streams: int
    strategy: str
    rounds: int
    commands: int

    def crossing(self) -> DataFrame:
        return self.keys.where(F.size("crossing") > 0)


def stream_map(
    spark: SparkSession,
    config: Config,
    changes: str | Path | None = None,
    capture: Options | None = None,
    streams: int | None = None,
) -> StreamMap:
    if not reads_input(changes, capture):
        config = effective_config(config)
    cs = load_stream(spark, config, changes, None, capture)
    rs = config.run
    n = streams or rs.streams
    rows = cs.changes.where(F.col("op").isin(*ROW_OPS))
    known = (cs.stats.first_xact, cs.stats.transactions) if cs.stats is not None else None
    indexed, n_rounds = with_rounds(rows, rs.commit_batch_size, known)
    parted = partition(indexed, rs.partition, n, config.articles)
    keys = F.array_distinct(F.filter(F.array("key_before", "key_after"), lambda k: k.isNotNull()))
    touched = parted.select(
        "article",
        F.explode(keys).alias("key"),
        F.struct(
            "lsn",
            "xact_seqno",
            F.col("round").alias("round"),
            F.col("stream").alias("stream"),
            "op",
            "key_before",
            "key_after",
        ).alias("command"),
    )
    per_round = touched.groupBy("article", "key", F.col("command.round").alias("round")).agg(
        F.sort_array(F.collect_set("command.stream")).alias("streams")
    )
    crossing = (
        per_round.where(F.size("streams") > 1)
        .groupBy("article", "key")
        .agg(F.sort_array(F.collect_list(F.struct("round", "streams"))).alias("crossing"))
    )
    by_key = (
        touched.groupBy("article", "key")
        .agg(
            F.sort_array(F.collect_list("command")).alias("commands"),
            F.sort_array(F.collect_set("command.stream")).alias("streams"),
        )
        .join(crossing, ["article", "key"], "left")
        .withColumn(
            "crossing", F.coalesce("crossing", F.array().cast("array<struct<round:int,streams:array<int>>>"))
        )
    )
    return StreamMap(by_key, n, rs.partition, n_rounds, rows.count())


def describe_key(row: Any) -> list[str]:
    """A key's commands as lines: lsn, transaction, round, stream, what it does."""
    out = []
    for c in row["commands"]:
        if c["op"] == "U" and c["key_before"] != c["key_after"]:
            what = f"U key {c['key_before']} -> {c['key_after']}"
        elif c["op"] == "I":
            what = f"I {c['key_after']}"
        else:
            what = f"{c['op']} {c['key_before']}"
        out.append(f"lsn {c['lsn']} xact {c['xact_seqno']} round {c['round']} stream {c['stream']}: {what}")
    return out
