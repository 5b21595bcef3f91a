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
from applier.results import Parallelism


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


def smaller_batches(commit_batch_size: int) -> list[int]:
    """The commit batches a run's figures are worked out for: 1, 2, 5, 10, 20, 50 ... below
    the run's, largest first."""
    out, step = [], 1
    while step < commit_batch_size:
        out += [b for b in (step, 2 * step, 5 * step) if b < commit_batch_size]
        step *= 10
    return sorted(out, reverse=True)


@dataclass(frozen=True)
class Figures:
    """What :func:`figures` counted: the dependent commands in one round with what they
    depend on, at the run's commit batch and at smaller ones."""

    dependent: int
    rounds: int  # rounds holding one
    resets_explained: int | None
    within_transaction: int
    kinds: tuple[dict[str, Any], ...]  # kind, commands, rounds, example; most commands first
    batches: tuple[dict[str, int], ...]  # commit_batch_size, rounds, rounds_with, commands


def figures(
    deps: DataFrame, commit_batch_size: int, transactions: int, reset_rounds: Sequence[int] | None = None
) -> Figures:
    """The dependencies (:func:`dependencies`) that fall inside one round, in one Spark job:
    per kind and in all, the dependent commands and the rounds holding one (of ``reset_rounds``
    too, when given), those within one transaction, and the same for each smaller commit batch
    (:func:`smaller_batches`: the streams stay, the rounds are cut again). A command that
    depends on several (a key update: on its old key and its new one) counts once, under the
    first of its kinds in :data:`KINDS` order (row not found before a duplicate key before a
    lock wait: what it meets first at the subscriber)."""
    xi, pxi = F.col("c.xact_index"), F.col("p.xact_index")
    same = F.col("c.round") == F.col("p.round")
    rank = F.array_position(F.array(*[F.lit(k.name) for k in KINDS]), F.col("kind"))
    top = F.struct(
        rank.alias("rank"),
        F.col("c.lsn").alias("lsn"),
        F.col("article"),
        F.col("key"),
        F.col("c").alias("command"),
        F.col("p").alias("depends_on"),
    )
    smaller = smaller_batches(commit_batch_size)
    per_command = deps.groupBy(
        F.col("c.lsn").alias("lsn"), F.col("c.round").alias("round"), xi.alias("xact_index")
    ).agg(
        F.min(F.when(same, top)).alias("top"),
        F.max(F.when(same & (xi == pxi), 1)).alias("within"),
        *[F.max(F.when(F.floor(xi / b) == F.floor(pxi / b), 1)).alias(f"at_{b}") for b in smaller],
    )
    names = F.array(*[F.lit(k.name) for k in KINDS])
    dependent = F.col("top").isNotNull()
    aggs = [
        F.count("top").alias("commands"),
        F.count_distinct(F.when(dependent, F.col("round"))).alias("rounds"),
        F.count("within").alias("within"),
        F.min("top").alias("example"),
        F.grouping("kind").alias("total"),
    ]
    if reset_rounds is not None:
        aggs.append(
            F.count_distinct(
                F.when(dependent & F.col("round").isin(list(reset_rounds)), F.col("round"))
            ).alias("resets")
        )
    for b in smaller:
        aggs += [
            F.count(f"at_{b}").alias(f"commands_{b}"),
            F.count_distinct(F.when(F.col(f"at_{b}").isNotNull(), F.floor(F.col("xact_index") / b))).alias(
                f"rounds_{b}"
            ),
        ]
    got = (
        per_command.withColumn("kind", F.element_at(names, F.col("top.rank").cast("int")))
        .rollup("kind")
        .agg(*aggs)
        .collect()
    )
    total = next((r for r in got if r["total"]), None)
    kinds = sorted(
        (
            {
                "kind": r["kind"],
                "commands": int(r["commands"]),
                "rounds": int(r["rounds"]),
                "example": _example(r["example"]),
            }
            for r in got
            if not r["total"] and r["kind"] is not None and r["commands"]
        ),
        key=lambda k: (-k["commands"], [x.name for x in KINDS].index(k["kind"])),
    )

    def n(name: str) -> int:
        return int(total[name] or 0) if total is not None else 0

    return Figures(
        dependent=n("commands"),
        rounds=n("rounds"),
        resets_explained=None if reset_rounds is None else n("resets"),
        within_transaction=n("within"),
        kinds=tuple(kinds),
        batches=tuple(
            {
                "commit_batch_size": b,
                "rounds": -(-transactions // b),
                "rounds_with": n(f"rounds_{b}"),
                "commands": n(f"commands_{b}"),
            }
            for b in smaller
        ),
    )


def _example(row: Any) -> dict[str, Any] | None:
    if row is None:
        return None

    def cmd(c: Any) -> dict[str, Any]:
        return {
            "lsn": c["lsn"],
            "xact_seqno": c["xact_seqno"],
            "article": c["article"],
            "op": c["op"],
            "key_before": c["key_before"],
            "key_after": c["key_after"],
            "stream": c["stream"],
            "round": c["round"],
        }

    return {
        "article": row["article"],
        "key": row["key"],
        "command": cmd(row["command"]),
        "depends_on": cmd(row["depends_on"]),
    }


def command_text(c: Any, namespace: str | None = None) -> str:
    """A command as the explanation shows it: lsn, transaction, round, stream, what it does (its
    article first when it is not the key's own: a child on its parent's key)."""
    if c["op"] == "U" and c["key_before"] != c["key_after"]:
        what = f"U key {c['key_before']} -> {c['key_after']}"
    elif c["op"] == "I":
        what = f"I {c['key_after']}"
    else:
        what = f"{c['op']} {c['key_before']}"
    if namespace is not None and c["article"] != namespace:
        what = f"{c['article']} {what}"
    return f"lsn {c['lsn']} xact {c['xact_seqno']} round {c['round']} stream {c['stream']}: {what}"


def explain(
    fig: Figures,
    *,
    rounds: int,
    resets: int | None,
    strategy: str,
    model: str,
    commit_batch_size: int,
) -> Parallelism:
    """The figures in words: why the rounds reset (``resets``; None: nothing was applied, what
    would reset), and what would let the traffic run in parallel, with the figures."""
    parts = []
    for k in fig.kinds:
        kind = BY_KIND[k["kind"]]
        parts.append(f"{k['commands']} {kind.short}" + (f" ({kind.conflict})" if kind.conflict else ""))
    if resets is None:
        reason = (
            f"{fig.dependent} commands depend on a command of another stream in the same round, "
            f"in {fig.rounds} of {rounds} rounds"
        )
    elif fig.dependent:
        reason = (
            f"{resets} of {rounds} rounds reset to one stream: {fig.dependent} commands depended on a "
            "command of another stream in the same round"
        )
        if fig.resets_explained is not None:
            reason += f" (in {fig.resets_explained} of the {resets} reset rounds)"
    else:
        reason = (
            f"{resets} of {rounds} rounds reset to one stream, and no command depended on a command of "
            "another stream in its round"
        )
    if parts:
        reason += ": " + ", ".join(parts)
    unexplained = resets - fig.resets_explained if resets and fig.resets_explained is not None else 0
    if unexplained > 0:
        reason += (
            f"; {unexplained} reset rounds hold none: their conflicts come from outside the stream's "
            "order (the reset log: triggers, custom procedures, other sessions' locks)"
        )
    advice = []
    if fig.dependent and fig.batches:
        now = f"now, at {commit_batch_size}: in {fig.rounds} of {rounds}"
        # the largest batch whose rounds mostly run in parallel, and the largest whose rounds
        # nearly all do (at most one in ten with a dependency), when that is another
        better = next((b for b in fig.batches if 2 * b["rounds_with"] <= b["rounds"]), None)
        clean = next((b for b in fig.batches if 10 * b["rounds_with"] <= b["rounds"]), None)
        one = fig.batches[-1]
        if better is not None:
            line = (
                f"--commit-batch-size {better['commit_batch_size']}: a dependency in "
                f"{better['rounds_with']} of {better['rounds']} rounds"
            )
            if clean is not None and clean is not better:
                line += f"; {clean['commit_batch_size']}: in {clean['rounds_with']} of {clean['rounds']}"
            advice.append(f"{line} ({now})")
        elif fig.within_transaction:
            advice.append(
                f"a smaller commit batch is not enough: {fig.within_transaction} of the {fig.dependent} "
                f"commands depend on a command of their own transaction that {strategy} puts on another "
                f"stream (a commit batch of 1: a dependency in {one['rounds_with']} of {one['rounds']} rounds)"
            )
        else:
            advice.append(
                f"a smaller commit batch is not enough: even 1 leaves a dependency in {one['rounds_with']} "
                f"of {one['rounds']} rounds"
            )
    if fig.dependent and (model, strategy) != ("independent", "writeset"):
        advice.append(
            "--model independent --partition writeset: each transaction waits for the last one that "
            f"touched its keys, so these {fig.dependent} commands wait instead of resetting a round"
        )
    return Parallelism(
        reason=reason,
        advice=tuple(advice),
        dependent=fig.dependent,
        rounds=fig.rounds,
        resets_explained=fig.resets_explained,
        within_transaction=fig.within_transaction,
        kinds=tuple(
            {**k, "what": BY_KIND[k["kind"]].what, "conflict": BY_KIND[k["kind"]].conflict} for k in fig.kinds
        ),
        batches=fig.batches,
    )
