"""What every stream task needs (:class:`StreamJob`), pickled to the executors as plain data."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from applier.apply.gate import ScheduleSpec
from applier.apply.pace import Pace
from applier.articles import Article
from applier.config import ErrorPolicy
from applier.plan.calls import Call
from applier.targets.connection import REAPPLY, RetryPolicy
from applier.targets.endpoint import Endpoint
from applier.targets.progress import ProgressTable


@dataclass(frozen=True)
class StreamJob:
    """One segment of one subscription, as its N stream tasks apply it (no module state)."""

    endpoint: Endpoint
    articles: tuple[Article, ...]
    subscription: str  # the name its progress rows carry
    streams: int
    rounds: int
    lock_timeout_ms: int
    error_policy: ErrorPolicy
    retry: RetryPolicy = REAPPLY  # transient errors of the single-connection re-apply
    set_apply: bool = False  # run.set_apply: set-based calls in parallel rounds
    audit: bool = False  # run.audit_commands: each commit records its commands' lsns
    # A share committed whole is one "batch" event (verify.outcomes expands it by stream and
    # round); False where (stream, round) does not identify the share (several segments).
    batch_events: bool = True
    # A controlled schedule (applier.apply.gate): the streams take turns; None: they run free.
    schedule: ScheduleSpec | None = None
    # A folder of feed files (applier.apply.streams.write_feed): task i reads stream i's rows
    # from it; None: the rows come through Spark.
    feed: str | None = None
    # The commands of the laid-out stream, where the plan counted them (a controlled schedule's
    # scheduler needs the count: None, it counts them itself, a Spark job)
    commands: int | None = None
    # A load test's pace (applier.apply.pace): rounds start when their transactions are due
    # and each transaction's apply lag is recorded; None: as fast as the streams go.
    pace: Pace | None = None
    # The streams report each round to the driver as they go (live metrics, -P progress lines)
    live: bool = False

    def audit_calls(self, stream: int, rnd: int, lsns: Sequence[int]) -> list[Call]:
        """``[run] audit_commands``: the statement recording that one commit carried ``lsns``
        (none when the setting is off or the commit carries no command)."""
        if not self.audit or not lsns:
            return []
        sql = self.endpoint.dialect.applied_insert_sql()  # not a ProgressTable: it renders two more templates
        return [Call(sql, ProgressTable.audit_params(self.subscription, stream, rnd, lsns))]
