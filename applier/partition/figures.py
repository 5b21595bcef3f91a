"""What the dependencies of a cut stream come to (:mod:`applier.partition.dependencies`): the
dependent commands in one round, per kind, with an example of each and at smaller commit
batches (:func:`figures`, one Spark job), and the parallelism a run's traffic would allow
(:func:`explain`): what ``applier streams --explain`` prints and a run with many resets says."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from applier.partition.dependencies import BY_KIND, KINDS
from applier.results import Parallelism


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
