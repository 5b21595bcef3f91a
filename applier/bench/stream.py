"""The benchmark's change stream outside Spark: the generator's own lanes, merged in lsn order.

The ceiling and the native publisher need the very stream applier applies. The generator is
a pure function of (seed, lane), so this module runs the same ``generate_lane`` in the bench
process and merges the lanes lazily by lsn: nothing but the current transaction is held.
"""

from __future__ import annotations

import heapq
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from applier.articles import Article
from applier.settings import Config, RunSettings, Workload, parse_config
from applier.sources.generator import LANES, generate_lane

# The benchmark table: an int key and three non-key columns of common types. Updates change
# one or two of them (SCALL, as SQL Server generates by default).
BENCH_ARTICLE = {
    "name": "dbo.bench_rows",
    "columns": [
        {"name": "id", "type": "int", "key": True},
        {"name": "qty", "type": "int"},
        {"name": "amount", "type": "decimal(12,2)"},
        {"name": "note", "type": "nvarchar(40)"},
    ],
}


@dataclass(frozen=True)
class BenchStream:
    """The shape of the benchmark's stream (README: 1M updates, 100 per transaction, 200k rows)."""

    commands: int = 1_000_000
    rows: int = 200_000
    transaction_size: int = 100
    commit_batch_size: int = 100
    seed: int = 42

    @property
    def transactions(self) -> int:
        return max(1, self.commands // self.transaction_size)

    def workload(self) -> Workload:
        return Workload(
            kind="updates",
            initial_rows=self.rows,
            transactions=self.transactions,
            commands_per_transaction=self.transaction_size,
            key_update_share=0.0,
            seed=self.seed,
        )

    def config(self, streams: int = 4, subscription: str = "bench", set_apply: bool = False) -> Config:
        cfg = parse_config({"articles": [BENCH_ARTICLE]}, "<bench>")
        return cfg.replace(
            workload=self.workload(),
            run=RunSettings(
                subscription=subscription,
                streams=streams,
                commit_batch_size=self.commit_batch_size,
                set_apply=set_apply,
            ),
        )


Change = tuple[Any, ...]  # (lsn, xact, cmd, article, op, version, before, after, changed, kb, ka)


def _lane_changes(articles: tuple[Article, ...], w: Workload, lane: int) -> Iterator[Change]:
    for kind, r in generate_lane(articles, w, lane):
        if kind == "change":
            yield r


def changes(config: Config) -> Iterator[Change]:
    """Every command of the generated stream in lsn (commit) order."""
    lanes = [_lane_changes(config.articles, config.workload, lane) for lane in range(LANES)]
    return heapq.merge(*lanes, key=lambda c: c[0])


def snapshot(config: Config) -> Iterator[tuple[str, str]]:
    """(article, image JSON) of every initial row, lane by lane."""
    for lane in range(LANES):
        for kind, r in generate_lane(config.articles, config.workload, lane):
            if kind != "snapshot":
                break  # the lane's snapshot comes first; stop before generating its changes
            yield r[0], r[2]


def transactions(config: Config) -> Iterator[list[Change]]:
    """The stream cut into its transactions, in commit order."""
    current: list[Change] = []
    for c in changes(config):
        if current and c[1] != current[0][1]:
            yield current
            current = []
        current.append(c)
    if current:
        yield current


def key_bucket(article: str, key_text: str, n: int) -> int:
    """A stable hash of the key into n buckets (the ceiling's split; shares as balanced as
    applier's key-hash, which uses Spark's xxhash64 on the same two values)."""
    return zlib.crc32(f"{article}\x00{key_text}".encode()) % n
