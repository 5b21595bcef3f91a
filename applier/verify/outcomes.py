"""Per-command outcomes from the apply stage's events, for the blame.

A share committed whole in a parallel round is one ``batch`` event (stream, round, n); the
blame needs each command's outcome and times, so a batch is expanded back to its commands by
(stream, round). The events' schema is the apply stage's (``applier.apply.events``); this
module only reads the columns it names.
"""

from __future__ import annotations

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
