"""The domain model of a run's configuration: plain frozen dataclasses, no validation.

Owns the names of the workloads, partition strategies and apply models, and the classes
:class:`Workload`, :class:`RunSettings`, :class:`SparkSettings`, :class:`ArticleSubscription`,
:class:`Subscription` and :class:`Config`. They are validated once, where they come in (``files.py``); Spark
pickles them to executors, so they stay plain dataclasses.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from applier.articles import Article, Delivery
from applier.config.policy import ErrorPolicy

HAZARD_WORKLOADS = (
    "key-chain",
    "key-swap",
    "delete-reinsert",
    "vacated-insert",
    "reorder",
    "unique-shuffle",
    "parent-child",
    "hot-key",
)
WORKLOADS = ("uniform", "key-chains", "updates", *HAZARD_WORKLOADS)
PARTITIONS = ("key-hash", "single", "round-robin", "writeset")
MODELS = ("agent", "independent")
SCHEDULES = ("free", "controlled")
SCHEDULE_STRATEGIES = ("pct", "random", "recorded")
# How verify reads the subscriber back (applier.verify.scope): "auto" reads only the keys the
# stream touched, plus a digest of the rest of each article, where that costs less than
# reading it all; "touched" does so for every article it can; "full" reads every row.
VERIFY_MODES = ("auto", "touched", "full")


@dataclass(frozen=True)
class Workload:
    """Knobs of the seeded generator."""

    kind: str = "key-chains"
    initial_rows: int = 2000
    transactions: int = 2000
    commands_per_transaction: int = 5
    key_update_share: float = 0.01
    chain_length: int = 3
    seed: int = 42

    @property
    def commands(self) -> int:
        """Commands the stream holds (the generator fills every transaction)."""
        return self.transactions * self.commands_per_transaction


@dataclass(frozen=True)
class RunSettings:
    """How the change stream is applied: streams, rounds, partitioning, apply model, errors."""

    subscription: str = "applier"
    streams: int = 4
    commit_batch_size: int = 100
    partition: str = "key-hash"
    model: str = "agent"
    lock_timeout_ms: int = 2000
    error_policy: ErrorPolicy = field(default_factory=ErrorPolicy)
    retry_attempts: int = 5
    # Set-based apply: runs of one operation on one article in one statement per parallel
    # round (generated procedures only; re-applies after a reset stay row by row).
    set_apply: bool = False
    # How the streams interleave: "free" (as the connections race) or "controlled" (they take
    # turns call by call under a seeded scheduler: one seed, one interleaving; applier.apply.gate).
    schedule: str = "free"
    schedule_seed: int = 0
    schedule_strategy: str = "pct"  # pct | random | recorded (follow schedule_file)
    pct_depth: int = 3  # PCT's bug depth d: d - 1 priority change points
    schedule_file: str | None = None  # a recorded schedule.jsonl (strategy recorded)
    # Where the generated procedures live (None: the subscriber's default schema, as SQL Server
    # creates them) and their text: "2016" (SQL Server 2016+'s) or "legacy" (the documented
    # older layout). Every article takes them (Config); a subscription may name its own schema.
    proc_schema: str | None = None
    proc_template: str = "2016"
    # VERIFY_MODES: every row read back ("full"), or only the stream's keys and a digest of the rest
    verify: str = "auto"
    # Rows of a key range of the snapshot load: each range commits with its watermark, and a
    # resumed load loads only the ranges not recorded (applier.apply.snapshot). Not part of the
    # run's identity: a resume with another size loads the snapshot again.
    snapshot_range_rows: int = 25_000
    # Every commit also records which commands it carried (their lsns, in the subscriber's
    # applier.applied_commands, in the same transaction): a witness that counts each command
    # once whatever merged them (set-based apply). Off by default: it writes a row per commit.
    audit_commands: bool = False


PACES = ("source",)  # --pace: a replayed capture at its own commit times


@dataclass(frozen=True)
class LoadSettings:
    """A load test's pace and pass marks (applier.apply.pace, applier.config.thresholds).

    ``rate``: transactions per second the stream is applied at; ``pace``: "source" replays a
    capture at its commit times, scaled by ``speed``; ``duration``: seconds of a generated
    workload at ``rate`` (it then holds rate x duration transactions); ``batch_interval``: the
    seconds of due transactions a round takes at most (CommitBatchSize still caps it);
    ``thresholds``: what the run must hold, else it exits 1."""

    rate: float | None = None
    pace: str | None = None
    speed: float = 1.0
    duration: float | None = None
    batch_interval: float = 0.1
    thresholds: tuple[str, ...] = ()

    @property
    def paced(self) -> bool:
        return self.rate is not None or self.pace is not None


SLOT_WAIT_SECONDS = 30.0  # how long a cluster's executors may take to register (spark.slot_wait)
_SECRET_CONF = re.compile(r"password|secret|token|credential|\.key$|access\.?key", re.IGNORECASE)


@dataclass(frozen=True)
class SparkSettings:
    """Where the Spark session runs ([spark]): the master URL (None: ``$MASTER`` /
    ``$SPARK_MASTER``, else ``local[max(streams, cores)]``), Spark properties set on it
    (``conf``, in the order given), and how long to wait for a cluster's executors to offer
    the N task slots a barrier stage of N streams needs. Under spark-submit the launcher's
    settings rule and these are not applied."""

    master: str | None = None
    conf: tuple[tuple[str, str], ...] = ()
    slot_wait: float = SLOT_WAIT_SECONDS

    def merged(
        self, master: str | None = None, conf: Mapping[str, str] | None = None, slot_wait: float | None = None
    ) -> SparkSettings:
        """These settings with ``master`` / ``slot_wait`` (when given) instead, ``conf`` over
        this conf (a key given again takes the new value)."""
        props = dict(self.conf)
        props.update(conf or {})
        return SparkSettings(
            master if master is not None else self.master,
            tuple(props.items()),
            slot_wait if slot_wait is not None else self.slot_wait,
        )

    def to_dict(self, *, redact: bool = True) -> dict[str, Any]:
        """The [spark] table; ``redact``: values of properties named like secrets read ``***``."""
        out: dict[str, Any] = {}
        if self.master is not None:
            out["master"] = self.master
        if self.conf:
            out["conf"] = {k: "***" if redact and _SECRET_CONF.search(k) else v for k, v in self.conf}
        out["slot_wait"] = self.slot_wait
        return out


@dataclass(frozen=True)
class ArticleSubscription:
    """One article as a subscription takes it: a row filter and a column list."""

    article: str
    where: str | None = None  # a Spark SQL condition over the article columns (`quoted` names)
    columns: tuple[str, ...] | None = None  # None: every column, including columns added later


@dataclass(frozen=True)
class Subscription:
    """A subscriber database with its row filters and column lists ([[subscriptions]])."""

    name: str
    articles: tuple[ArticleSubscription, ...] | None = None  # None: every article, whole
    database: str | None = None  # database in the embedded cluster (default: the name)
    target: str | None = None  # an ODBC connection string instead
    streams: int | None = None  # default: [run] streams
    sqldml_threshold: int = 50  # rs_sqldml: statements of at least this many rows go as statements
    proc_schema: str | None = None  # its procedures' schema (default: run.proc_schema)

    def of(self, article: str) -> ArticleSubscription | None:
        """How this subscription takes ``article`` (None: it does not take it)."""
        if self.articles is None:
            return ArticleSubscription(article)
        for a in self.articles:
            if a.article == article:
                return a
        return None

    def full_copy(self, all_articles: tuple[str, ...]) -> bool:
        """Every article, every row, every column: a warm-standby-like copy (C2 allowed)."""
        subs = [self.of(n) for n in all_articles]
        return all(s is not None and s.where is None and s.columns is None for s in subs)


def _article_subscription_dict(a: ArticleSubscription) -> dict[str, Any]:
    out: dict[str, Any] = {"name": a.article}
    if a.where is not None:
        out["where"] = a.where
    if a.columns is not None:
        out["columns"] = list(a.columns)
    return out


@dataclass(frozen=True)
class Config:
    """Everything a run needs: the articles, how to apply, what to generate, the subscribers."""

    articles: tuple[Article, ...]
    run: RunSettings = field(default_factory=RunSettings)
    workload: Workload = field(default_factory=Workload)
    source: str = "<defaults>"
    subscriptions: tuple[Subscription, ...] = ()
    spark: SparkSettings = field(default_factory=SparkSettings)
    load: LoadSettings = field(default_factory=LoadSettings)

    def __post_init__(self) -> None:
        # The run's procedure schema and template reach every article, a hazard workload's too.
        schema, template = self.run.proc_schema, self.run.proc_template
        if any(a.proc_schema != schema or a.proc_template != template for a in self.articles):
            placed = tuple(
                dataclasses.replace(a, proc_schema=schema, proc_template=template) for a in self.articles
            )
            object.__setattr__(self, "articles", placed)

    def article(self, name: str) -> Article:
        for a in self.articles:
            if a.name == name:
                return a
        raise KeyError(name)

    def replace(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """``source`` and the file format's sections (run, workload, articles, subscriptions,
        spark when set); subscription targets, which may hold passwords, read ``***``, and so do
        Spark properties named like secrets."""
        out: dict[str, Any] = {
            "source": self.source,
            "run": {**dataclasses.asdict(self.run), "error_policy": str(self.run.error_policy)},
            "workload": dataclasses.asdict(self.workload),
            "articles": [article_to_dict(a) for a in self.articles],
        }
        if self.subscriptions:
            out["subscriptions"] = [subscription_to_dict(s) for s in self.subscriptions]
        if self.spark != SparkSettings():
            out["spark"] = self.spark.to_dict()
        if self.load != LoadSettings():
            out["load"] = {k: v for k, v in dataclasses.asdict(self.load).items() if k != "thresholds"}
            out["load"]["thresholds"] = list(self.load.thresholds)
        return out


def subscription_to_dict(s: Subscription, *, redact: bool = True) -> dict[str, Any]:
    """The subscription in the file format, keys left unset omitted; ``redact``: target ``***``."""
    out: dict[str, Any] = {"name": s.name}
    if s.database is not None:
        out["database"] = s.database
    if s.target is not None:
        out["target"] = "***" if redact else s.target
    if s.streams is not None:
        out["streams"] = s.streams
    out["sqldml_threshold"] = s.sqldml_threshold
    if s.proc_schema is not None:
        out["proc_schema"] = s.proc_schema
    if s.articles is not None:
        out["articles"] = [_article_subscription_dict(a) for a in s.articles]
    return out


def article_to_dict(a: Article) -> dict[str, Any]:
    """The article in the file format; ``unique`` and ``references`` only when set."""

    def delivery(d: Delivery) -> str:
        return d.syntax.value + (f" {d.procedure}" if d.procedure else "")

    out: dict[str, Any] = {
        "schema": a.schema,
        "table": a.table,
        "columns": [
            {
                "name": c.name,
                "type": str(c.type),
                "nullable": c.nullable,
                "identity": c.identity,
                "key": c.name in a.key,
                "computed": c.computed,
            }
            for c in a.columns
        ],
        "key": list(a.key),
        "insert": delivery(a.insert),
        "update": delivery(a.update),
        "delete": delivery(a.delete),
    }
    if a.unique:
        out["unique"] = [list(u) for u in a.unique]
    if a.references:
        out["references"] = [
            {"columns": list(cols), "article": parent, "parent_columns": list(pcols)}
            for cols, parent, pcols in a.references
        ]
    return out
