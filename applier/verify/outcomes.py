"""Per-command outcomes from the apply stage's events, for the blame.

A share committed whole in a parallel round is one ``batch`` event (stream, round, n); the
blame needs each command's outcome and times, so a batch is expanded back to its commands by
(stream, round). The events' schema is the apply stage's (``applier.apply.events``); this
module only reads the columns it names.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def command_outcomes(events: DataFrame, commands: DataFrame) -> DataFrame:
    """Per-command outcomes (lsn, outcome, class, code, t_exec, t_commit): the command events
    plus, for every command of ``commands`` (a DataFrame with lsn, stream and round), the
    outcome of the ``batch`` event of its (stream, round)."""
    cols = ["lsn", "outcome", "class", "code", "t_exec", "t_commit"]
    single = events.where("kind = 'command'").select(*cols)
    if "stream" not in commands.columns or "round" not in commands.columns:
        return single
    batches = events.where("kind = 'batch'").select("stream", "round", "outcome", "t_exec", "t_commit")
    expanded = (
        commands.select("lsn", "stream", "round")
        .join(batches, ["stream", "round"])
        .select(
            "lsn",
            "outcome",
            F.lit(None).cast("string").alias("class"),
            F.lit(None).cast("string").alias("code"),
            "t_exec",
            "t_commit",
        )
    )
    return single.unionByName(expanded)


_OUTCOME_COLUMNS = ("outcome", "class", "code", "t_exec", "t_commit")


def outcomes_of(
    events: DataFrame, commands: list[tuple[int, int | None, int | None]]
) -> dict[int, list[dict[str, Any]]]:
    """The outcomes of a few ``commands`` (lsn, stream, round), by lsn: their command events,
    and the ``batch`` event of each one's (stream, round), in one Spark job that only filters
    (no join: a join with so few rows is a broadcast, a Spark job of its own each)."""
    if not commands:
        return {}
    lsns = sorted({c[0] for c in commands})
    shares = sorted({f"{s}:{r}" for _, s, r in commands if s is not None and r is not None})
    cond = (F.col("kind") == "command") & F.col("lsn").isin(lsns)
    if shares:
        share = F.concat_ws(":", F.col("stream").cast("string"), F.col("round").cast("string"))
        cond = cond | ((F.col("kind") == "batch") & share.isin(shares))
    got = events.where(cond).select("kind", "lsn", "stream", "round", *_OUTCOME_COLUMNS).collect()
    by_share: dict[tuple[int, int], list[dict[str, Any]]] = {}
    out: dict[int, list[dict[str, Any]]] = {}
    for r in got:
        o = {c: r[c] for c in _OUTCOME_COLUMNS}
        if r["kind"] == "command":
            out.setdefault(r["lsn"], []).append(o)
        else:  # a share committed whole: its commands' outcome, no class or code of their own
            by_share.setdefault((r["stream"], r["round"]), []).append({**o, "class": None, "code": None})
    for lsn, s, rnd in commands:
        for o in by_share.get((s, rnd), []) if s is not None and rnd is not None else []:
            out.setdefault(lsn, []).append(o)
    return out
