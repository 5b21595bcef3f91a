"""What a run returns: verdicts, the check of each subscriber, the apply summary, the run.

Plain, typed, frozen values (the public API's ``RunResult``), produced by ``verify`` and
``apply`` and read by ``report``, the CLI and the pytest plugin. Nothing here talks to Spark
or a database.

A verdict has three values (Jepsen's ``checker.clj``): converged, diverged, unknown (the
check itself could not decide). Verdicts merge as Jepsen merges validity: diverged beats
unknown beats converged, so one unknown subscriber never hides another's divergence, and the
exit code follows the merged verdict (0 converged, 1 diverged, 2 unknown).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


class Verdict(str, enum.Enum):
    CONVERGED = "converged"
    DIVERGED = "diverged"
    UNKNOWN = "unknown"

    @staticmethod
    def merge(verdicts: Iterable[Verdict]) -> Verdict:
        """Diverged beats unknown beats converged; nothing to merge is unknown."""
        seen = set(verdicts)
        if Verdict.DIVERGED in seen:
            return Verdict.DIVERGED
        if Verdict.UNKNOWN in seen or not seen:
            return Verdict.UNKNOWN
        return Verdict.CONVERGED

    @property
    def exit_code(self) -> int:
        return _EXIT[self]

    def __str__(self) -> str:
        return self.value


_EXIT = {Verdict.CONVERGED: 0, Verdict.DIVERGED: 1, Verdict.UNKNOWN: 2}


@dataclass(frozen=True)
class Divergence:
    """One row that differs from the oracle, with the commands that touched its key (blame)."""

    article: str
    key: tuple[Any, ...]
    kind: str  # missing | extra | different
    expected: Mapping[str, Any] | None
    found: Mapping[str, Any] | None
    columns: tuple[str, ...]  # the columns that differ (kind "different")
    commands: tuple[Mapping[str, Any], ...]  # lsn, xact_seqno, op, keys, stream, round, outcome...
    inverted: Mapping[str, Any] | None  # the pair applied out of order, if one is known
    skipped: tuple[int, ...]  # lsns of the skipped commands among them

    def to_json(self) -> dict[str, Any]:
        return {
            "article": self.article,
            "key": list(self.key),
            "kind": self.kind,
            "expected": self.expected,
            "found": self.found,
            "columns": list(self.columns),
            "commands": [dict(c) for c in self.commands],
            "inverted": self.inverted,
            "skipped": list(self.skipped),
        }


@dataclass(frozen=True)
class Check:
    """The subscriber against the oracle: counts of differences and the ones shown."""

    verdict: Verdict
    counts: Mapping[str, int] = field(default_factory=dict)  # missing, extra, different
    divergent: tuple[Divergence, ...] = ()
    rows_expected: int = 0
    rows_found: int = 0
    reason: str | None = None
    skips: Mapping[str, Any] = field(default_factory=dict)  # what the skipped commands cost
    # article -> {expected, found, missing, extra, different}: the rows of every article
    # either side holds (an article with no row on either side is not listed)
    by_article: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    # Which verify ran (applier.verify.scope): mode keys | whole | mixed, the mode asked for, the
    # rows read back, and per article how it was read (by the stream's keys, with the rows outside
    # them checked by a digest, or whole and why); {} where nothing was read.
    verify: Mapping[str, Any] = field(default_factory=dict)

    @property
    def divergent_rows(self) -> int:
        return sum(self.counts.values())

    @staticmethod
    def unknown(reason: str) -> Check:
        return Check(Verdict.UNKNOWN, reason=reason)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "counts": dict(self.counts),
            "divergent_rows": self.divergent_rows,
            "rows_expected": self.rows_expected,
            "rows_found": self.rows_found,
            "reason": self.reason,
            "divergent": [d.to_json() for d in self.divergent],
            "skips": dict(self.skips),
            "by_article": {k: dict(v) for k, v in self.by_article.items()},
            "verify": dict(self.verify),
        }


CONFLICT_CLASSES = (
    "row_not_found",
    "duplicate_key",  # on the table's primary key
    "unique_index",  # on another unique index or constraint
    "lock_timeout",
    "deadlock",
    "foreign_key",
    "other",
)


@dataclass(frozen=True)
class Parallelism:
    """Why most rounds of a run reset to one stream, and what would let its traffic run in
    parallel, with the run's own figures (:mod:`applier.partition.dependencies`): the commands
    that depended on a command of another stream in the same round (the agent applies a round's
    streams without committing, so such a command cannot see what it depends on), by kind."""

    reason: str  # one line: "17 of 17 rounds reset to one stream: 53 commands depended on ..."
    advice: tuple[str, ...]  # one line each: a setting, and what it would do here
    dependent: int  # commands that depended on a command of another stream in their round
    rounds: int  # rounds holding one
    resets_explained: int | None  # reset rounds holding one (None: the reset rounds are not known)
    within_transaction: int  # dependent commands whose command depended on is of their transaction
    # kind, what (in words), conflict (what it meets at the subscriber), commands, rounds, and
    # one example (article, key, both commands: lsn, op, keys, stream, round), most commands first
    kinds: tuple[Mapping[str, Any], ...] = ()
    # for smaller commit batches: commit_batch_size, rounds, rounds with a dependency, commands
    batches: tuple[Mapping[str, int], ...] = ()

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(
            advice=list(self.advice),
            kinds=[dict(k) for k in self.kinds],
            batches=[dict(b) for b in self.batches],
        )
        return out


@dataclass(frozen=True)
class ApplySummary:
    """What the apply stage did to one subscriber, tallied from its events."""

    commands: int
    transactions: int
    rounds: int
    rounds_parallel: int
    resets: int
    reset_log: tuple[Mapping[str, Any], ...]  # round, streams_from, classes, streams, message
    conflicts: Mapping[str, int]  # by conflict class (every class of CONFLICT_CLASSES present)
    outcomes: Mapping[str, int]  # commands by outcome (applied, reapplied, skipped, ...)
    streams: int
    stream_stats: tuple[Mapping[str, Any], ...]
    apply_seconds: float
    fatal: bool
    # Why the run stopped when its fatal round met no failing command (transient errors
    # outlasted the retries); None otherwise.
    stopped: str | None = None
    # The error that failed the single connection, in one line (the command's lsn, class, code,
    # message); None when none did.
    failure: str | None = None
    segments: int = 1
    snapshot_rows: int = 0
    source: str = ""
    # What the HTML report draws (applier.apply.summary.timeline): rounds, every stream's
    # shares with their wall times, commands/s over the apply; {} when nothing was timed.
    timeline: Mapping[str, Any] = field(default_factory=dict)
    # Why most rounds reset, when they did (more resets than rounds run in parallel); None
    # otherwise: the analysis runs only then (it costs Spark jobs).
    parallelism: Parallelism | None = None
    # A paced run (load test): the target rate, the throughput reached and the apply lag
    # (applier.apply.summary.load_figures); {} otherwise.
    load: Mapping[str, Any] = field(default_factory=dict)

    @property
    def skipped(self) -> int:
        return self.outcomes.get("skipped", 0)

    @property
    def deferred(self) -> int:
        return self.outcomes.get("deferred", 0)

    @property
    def applied(self) -> int:
        return self.outcomes.get("applied", 0) + self.outcomes.get("reapplied", 0)

    @property
    def throughput(self) -> float | None:
        """Commands per second of the apply phase."""
        return round(self.commands / self.apply_seconds, 1) if self.apply_seconds > 0 else None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(
            reset_log=[dict(x) for x in self.reset_log],
            timeline=dict(self.timeline),
            load=dict(self.load),
            stream_stats=[dict(s) for s in self.stream_stats],
            skipped=self.skipped,
            deferred=self.deferred,
            applied=self.applied,
            throughput_cmds_per_s=self.throughput,
            parallelism=None if self.parallelism is None else self.parallelism.to_json(),
        )
        return out


@dataclass(frozen=True)
class SubscriptionResult:
    """One subscriber's run: what was applied, how it was checked, what distribute did."""

    name: str
    target: str  # the subscriber's description (connection strings redacted)
    check: Check
    summary: ApplySummary
    phases: Mapping[str, float] = field(default_factory=dict)  # prepare, plan, apply, verify (s)
    failed: str | None = None  # why the run stopped early (the single connection failed)
    routing: Mapping[str, int] = field(default_factory=dict)  # "U>D": updates sent as deletes ...
    statements: tuple[Mapping[str, Any], ...] = ()
    schema_changes: tuple[Mapping[str, Any], ...] = ()
    procedures: tuple[Mapping[str, Any], ...] = ()
    # The schedule as it ran (applier.pipeline.schedule) and every conflict (lsn, stream, class)
    # (a long schedule is a pipeline.schedule.ScheduleFile: on disk, read lazily)
    schedule: Sequence[Mapping[str, Any]] = ()
    conflict_events: tuple[tuple[int | None, int | None, str], ...] = ()

    @property
    def verdict(self) -> Verdict:
        """The check's verdict; a run that stopped early cannot be called converged, and one
        stopped by transient errors (a lock held from outside past every retry) is not called
        diverged either: it did not finish, so nothing was shown."""
        if self.failed is not None and self.summary.stopped is not None:
            return Verdict.UNKNOWN
        if self.failed is not None:
            return Verdict.merge([self.check.verdict, Verdict.UNKNOWN])
        return self.check.verdict

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code


@dataclass(frozen=True)
class RunResult:
    """A whole run: every subscriber's result, the merged verdict, the files written."""

    subscriptions: tuple[SubscriptionResult, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)  # the configuration, secrets redacted
    files: Mapping[str, str] = field(default_factory=dict)  # "json": path, ...
    implicit: bool = True  # one full-copy subscription from [run] (no [[subscriptions]] given)
    started: float | None = None  # epoch seconds when the run started (api.run)
    seconds: float | None = None  # its wall time, set-up and verification included
    # The cost model (applier.pipeline.cost): per phase its seconds, Spark jobs, stages, tasks
    # and the seconds Python workers spent starting.
    cost: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # A load test's thresholds as checked (applier.config.thresholds.Threshold.check): a broken
    # one fails a converged run (exit 1)
    thresholds: tuple[Mapping[str, Any], ...] = ()

    @property
    def verdict(self) -> Verdict:
        return Verdict.merge(s.verdict for s in self.subscriptions)

    @property
    def broken(self) -> tuple[Mapping[str, Any], ...]:
        """The thresholds the run broke."""
        return tuple(t for t in self.thresholds if not t["held"])

    @property
    def exit_code(self) -> int:
        code = self.verdict.exit_code
        return 1 if code == 0 and self.broken else code

    @property
    def metrics(self) -> dict[str, float | None]:
        """The figures a threshold or a comparison reads (applier.config.thresholds.METRICS):
        over several subscribers the worst of each."""
        per = [_metrics(s) for s in self.subscriptions]
        out: dict[str, float | None] = {}
        for name in {k for m in per for k in m}:
            got = [m[name] for m in per if m.get(name) is not None]
            low = name in ("throughput", "commands_per_s")
            out[name] = (min(got) if low else max(got)) if got else None  # type: ignore[type-var]
        return out

    def subscription(self, name: str) -> SubscriptionResult:
        for s in self.subscriptions:
            if s.name == name:
                return s
        raise KeyError(f"no subscription {name!r} ({', '.join(s.name for s in self.subscriptions)})")

    @property
    def conflicts(self) -> dict[str, int]:
        """Conflicts by class, over every subscriber."""
        out: dict[str, int] = {}
        for s in self.subscriptions:
            for k, v in s.summary.conflicts.items():
                out[k] = out.get(k, 0) + v
        return out

    @property
    def counts(self) -> dict[str, int]:
        """Divergent rows by kind (missing, extra, different), over every subscriber."""
        out: dict[str, int] = {}
        for s in self.subscriptions:
            for k, v in s.check.counts.items():
                out[k] = out.get(k, 0) + v
        return out

    @property
    def divergent(self) -> tuple[tuple[str, Divergence], ...]:
        """(subscription, divergence) for every divergent row shown, with its blame."""
        return tuple((s.name, d) for s in self.subscriptions for d in s.check.divergent)

    @property
    def phases(self) -> dict[str, float]:
        """Seconds per phase, summed over the subscribers."""
        out: dict[str, float] = {}
        for s in self.subscriptions:
            for k, v in s.phases.items():
                out[k] = out.get(k, 0.0) + v
        return out


def _metrics(s: SubscriptionResult) -> dict[str, float | None]:
    sm = s.summary
    out: dict[str, float | None] = {
        "resets": sm.resets,
        "conflicts": sum(sm.conflicts.values()),
        "divergent": s.check.divergent_rows,
        "apply_seconds": sm.apply_seconds,
        "commands_per_s": sm.throughput,
        "throughput": round(sm.transactions / sm.apply_seconds, 2) if sm.apply_seconds > 0 else None,
    }
    if sm.load.get("throughput") is not None:  # a paced run: over its paced window
        out["throughput"] = sm.load["throughput"]
        out["commands_per_s"] = sm.load["commands_per_s"]
    pcts = sm.load.get("lag", {}).get("percentiles", {}) if sm.load else {}
    for k in ("p50", "p90", "p99", "p999", "max", "mean"):
        out[f"lag_{k}"] = pcts.get(k)
    return out
