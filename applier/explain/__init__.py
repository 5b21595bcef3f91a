"""``applier streams --explain``: which stream each key of a run went to, and where a hazard can fire.

The stream is read (or generated) and cut exactly as ``applier run`` cuts it (rounds of
``commit_batch_size`` transactions, the partition strategy over N streams), but nothing is
applied. Every row command touches keys (its row's key before and after: a key update touches
both; each unique key's values; each foreign key's parent key); for each key, its commands in
lsn order with their round and stream. A key whose commands in one round sit on more than one
stream is where the order of the publisher is not kept: a later command may reach the row
before an earlier one (the update of key 2 before the key update 1 -> 2 that creates it:
20598). Keys whose commands stay on one stream per round cannot be reordered. With ``writeset``
partitioning, commands on different streams wait for their dependencies, so crossings there
are ordered. The analysis is :mod:`applier.partition.dependencies`, the one a run whose rounds
mostly reset explains itself with.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from applier.config import Config
from applier.partition.dependencies import dependencies, key_map, touches
from applier.partition.figures import command_text, explain, figures
from applier.partition.strategies import cut
from applier.pipeline.run import load_stream, reads_input
from applier.records.schema import ROW_OPS
from applier.results import Parallelism
from applier.sources.formats import Options
from applier.sources.hazards import effective_config


@dataclass(frozen=True)
class StreamMap:
    """Every key with its commands (lsn, xact_seqno, xact_index, round, stream, op, key before
    and after, article, how it holds the key and its role) and the rounds in which they sit on
    more than one stream (``crossing``); ``touched``: one row per (command, key)."""

    keys: DataFrame
    touched: DataFrame
    streams: int
    strategy: str
    model: str
    commit_batch_size: int
    rounds: int
    commands: int
    transactions: int

    def crossing(self) -> DataFrame:
        return self.keys.where(F.size("crossing") > 0)

    def parallelism(self) -> Parallelism:
        """The commands that depend on a command of another stream in their round, by kind, and
        what would let them run in parallel (as a run whose rounds reset says it)."""
        fig = figures(dependencies(self.touched), self.commit_batch_size, self.transactions)
        return explain(
            fig,
            rounds=self.rounds,
            resets=None,
            strategy=self.strategy,
            model=self.model,
            commit_batch_size=self.commit_batch_size,
        )


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
    counted: dict[str, int] = {}
    parted, n_rounds = cut(rows, rs.commit_batch_size, rs.partition, n, config.articles, known, counted)
    touched = touches(parted, config.articles)
    # generated: known; read: counted by with_rounds, or (a stream known consecutive) here
    commands = cs.stats.commands if cs.stats is not None else counted.get("commands")
    return StreamMap(
        key_map(touched),
        touched,
        n,
        rs.partition,
        rs.model,
        rs.commit_batch_size,
        n_rounds,
        rows.count() if commands is None else commands,
        known[1] if known is not None else counted.get("transactions", 0),
    )


def describe_key(row: Any) -> list[str]:
    """A key's commands as lines: lsn, transaction, round, stream, what it does."""
    return [command_text(c, row["article"]) for c in row["commands"]]
