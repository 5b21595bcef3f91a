"""Where a stream's cut breaks the publisher's order: the keys each command touches, and the
commands that depend on a command of another stream in the same round.

Every row command touches keys: its row's key (the before image's and the after image's: a
key update touches both), each unique key's values, and the parent key of each foreign key
(in the parent article's namespace). On each key a command *adds* it (an insert, a key update
to it, a child that comes to refer to it), *drops* it (a delete, a key update away from it)
or *keeps* it (an update in place). A command depends on the command before it on the same
key (for a parent key: on the parent's own last command, and a parent's delete on the child
command before it). Under the agent a round's streams stay uncommitted until they all reach
the barrier, so a command that depends on one of another stream in the same round cannot see
it: what it meets at the subscriber is the pair's kind (:data:`KINDS`): row not found (20598)
after a key move or an insert, a duplicate key where a delete or key move freed the key, a
lock wait on a row another session of the agent changed, a foreign key violation.

One analysis, two callers: ``applier streams --explain`` (:mod:`applier.explain`) prints it
before anything is applied, and a run whose rounds mostly reset says from it why and what
would let its traffic run in parallel (:mod:`applier.pipeline.run`), from the planned stream
it holds cached. It costs that run one Spark job, so a run pays it only then.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from applier.articles import Article
from applier.partition.strategies import image_keys


@dataclass(frozen=True)
class Kind:
    name: str
    short: str  # "on a key move": after "N commands depended"
    conflict: str  # what the dependent command meets at the subscriber
    what: str  # the pair in words


KINDS: tuple[Kind, ...] = (
    Kind(
        "key_move",
        "on a key move",
        "row not found, 20598",
        "a key update of another stream moved a row to the key this command changes, deletes or moves on",
    ),
    Kind(
        "insert",
        "on an insert",
        "row not found, 20598",
        "an insert of another stream created the row this command changes or deletes",
    ),
    Kind(
        "key_reuse",
        "on a delete or key move that freed the key",
        "duplicate key",
        "a delete or key update of another stream freed the key this command inserts or moves a row to "
        "(delete and re-insert, key swap)",
    ),
    Kind(
        "unique_reuse",
        "on a change that freed a unique value",
        "duplicate key on a unique index",
        "another stream's command freed the unique value this command gives its row",
    ),
    Kind(
        "same_row",
        "on a change of the same row",
        "lock wait between the agent's own sessions",
        "another stream changed the row this command changes or deletes; its lock is held until the "
        "round commits",
    ),
    Kind(
        "parent_child",
        "on a parent or child row",
        "foreign key",
        "a child referring to a parent another stream inserts, or a parent deleted while another "
        "stream changes its child",
    ),
    Kind("other", "otherwise", "", "another stream's command on the same key"),
)
BY_KIND = {k.name: k for k in KINDS}

_COMMAND = (
    "lsn",
    "xact_seqno",
    "xact_index",
    "round",
    "stream",
    "op",
    "key_before",
    "key_after",
)
# a touch: the key's namespace (an article, "<article>#unique<i>"), the key, and the command
# with the article it belongs to, how it holds the key (space: key, unique, parent) and its role
_TOUCH_SCHEMA = (
    "lsn long, xact_seqno long, xact_index long, round int, stream int, op string, key_before string, "
    "key_after string, article string, ns string, key string, space string, role string"
)


def _touch(ns: Column, key: Column, space: Column, role: Column) -> list[Column]:
    return [
        ns.alias("article"),
        key.alias("key"),
        F.struct(
            *[F.col(c) for c in _COMMAND],
            F.col("article").alias("article"),
            space.alias("space"),
            role.alias("role"),
        ).alias("command"),
    ]


def touches(parted: DataFrame, articles: Sequence[Article]) -> DataFrame:
    """One row per (command, key it touches): ``article`` (the key's namespace), ``key`` (JSON
    array) and ``command`` (lsn, xact_seqno, xact_index, round, stream, op, key_before,
    key_after, article, space, role). ``parted``: the stream cut as a run cuts it
    (:func:`applier.partition.strategies.cut`). The row's own key comes from ``key_before`` /
    ``key_after``; unique and parent keys from the images, for the articles that have any (the
    planned stream keeps their before images: :func:`applier.partition.layout.lay_out`)."""
    kb, ka = F.col("key_before"), F.col("key_after")
    same = ka.isNotNull() & ka.eqNullSafe(kb)  # an update in place (never NULL: an insert has no key before)
    own = parted.select(
        *_COMMAND,
        "article",
        F.explode(
            F.filter(
                F.array(
                    F.struct(kb.alias("key"), F.when(same, "keeps").otherwise("drops").alias("role")),
                    F.struct(F.when(~same, ka).alias("key"), F.lit("adds").alias("role")),
                ),
                lambda t: t["key"].isNotNull(),
            )
        ).alias("t"),
    ).select(*_touch(F.col("article"), F.col("t.key"), F.lit("key"), F.col("t.role")))
    constrained = {a.name: a for a in articles if a.unique or a.references}
    if not constrained:
        return own

    def keys_of(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            rows = b.to_pylist()
            out: list[dict[str, Any]] = []
            for r in rows:
                base = {c: r[c] for c in (*_COMMAND, "article")}
                for ns, key, space, role in constraint_keys(
                    constrained[r["article"]], r["before"], r["after"]
                ):
                    out.append({**base, "ns": ns, "key": key, "space": space, "role": role})
            yield pa.RecordBatch.from_pylist(out, schema=_arrow_touch())

    extra = (
        parted.where(F.col("article").isin(list(constrained)))
        .select(*_COMMAND, "article", "before", "after")
        .mapInArrow(keys_of, _TOUCH_SCHEMA)
        .select(*_touch(F.col("ns"), F.col("key"), F.col("space"), F.col("role")))
    )
    return own.unionByName(extra)


def _arrow_touch() -> pa.Schema:
    longs = ("lsn", "xact_seqno", "xact_index")
    ints = ("round", "stream")
    fields = [
        (name, pa.int64() if name in longs else pa.int32() if name in ints else pa.string())
        for name in (*_COMMAND, "article", "ns", "key", "space", "role")
    ]
    return pa.schema(fields)


def constraint_keys(
    article: Article, before: str | None, after: str | None
) -> list[tuple[str, str, str, str]]:
    """A command's unique and parent keys, from its images: (namespace, key JSON, space: unique
    or parent, role: adds, drops or keeps), in namespace and key order. A key the before image
    does not hold (an insert's, or a key-only before image's) is added."""
    before_keys, after_keys = (
        {
            k: parent
            for k, parent in image_keys(article, json.loads(img)).items()
            if parent or k[0] != article.name
        }
        if img
        else {}
        for img in (before, after)
    )
    out = []
    for k in sorted({**before_keys, **after_keys}):
        role = "keeps" if k in before_keys and k in after_keys else "adds" if k in after_keys else "drops"
        parent = after_keys.get(k, before_keys.get(k, False))
        out.append((k[0], k[1], "parent" if parent else "unique", role))
    return out


def key_map(touched: DataFrame) -> DataFrame:
    """Every key with its commands in lsn order (``commands``), the streams they sit on
    (``streams``), and the rounds in which they sit on more than one (``crossing``: round,
    streams): where the publisher's order is not kept."""
    per_round = touched.groupBy("article", "key", F.col("command.round").alias("round")).agg(
        F.sort_array(F.collect_set("command.stream")).alias("streams")
    )
    crossing = (
        per_round.where(F.size("streams") > 1)
        .groupBy("article", "key")
        .agg(F.sort_array(F.collect_list(F.struct("round", "streams"))).alias("crossing"))
    )
    return (
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


def dependencies(touched: DataFrame) -> DataFrame:
    """The commands that depend on a command of another stream: one row per (command, key),
    with ``kind`` (:data:`KINDS`), the key (``article``, ``key``), the command (``c``) and the
    one it depends on (``p``). In any round: whether the two share one is for the caller to
    ask (:func:`figures`), for the run's commit batch or a smaller one."""
    c = F.col("command")
    w = Window.partitionBy("article", "key").orderBy(F.col("command.lsn"))
    earlier = w.rowsBetween(Window.unboundedPreceding, -1)
    owned = touched.select(
        "article",
        "key",
        "command",
        F.lag("command").over(w).alias("prev"),
        F.last(F.when(c["space"] != "parent", c), ignorenulls=True).over(earlier).alias("prev_own"),
    )
    c, prev, prev_own = F.col("command"), F.col("prev"), F.col("prev_own")
    # a parent's delete depends on the child command before it (another stream's child)
    parent_drop = (
        (c["space"] == "key")
        & (c["role"] == "drops")
        & (prev["space"] == "parent")
        & (prev["stream"] != c["stream"])
    )
    p = F.when(parent_drop, prev).otherwise(prev_own)
    own_row = (
        F.when(
            (c["role"] != "adds") & (p["role"] == "adds"),
            F.when(p["op"] == "U", "key_move").otherwise("insert"),
        )
        .when((c["role"] == "adds") & (p["role"] == "drops"), "key_reuse")
        .when((c["role"] != "adds") & (p["role"] == "keeps"), "same_row")
        .otherwise("other")
    )
    kind = (
        F.when(parent_drop, "parent_child")
        .when(c["space"] == "parent", F.when((c["role"] != "drops") & (p["role"] == "adds"), "parent_child"))
        .when(c["space"] == "unique", F.when((c["role"] == "adds") & (p["role"] == "drops"), "unique_reuse"))
        .otherwise(own_row)
    )
    return owned.select(
        "article", "key", c.alias("c"), p.alias("p"), kind.cast("string").alias("kind")
    ).where(F.col("p").isNotNull() & (F.col("p.stream") != F.col("c.stream")) & F.col("kind").isNotNull())
