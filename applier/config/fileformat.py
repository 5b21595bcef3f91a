"""The configuration file format: pydantic models, their JSON Schema, their errors in words.

Owns the shape of a file (top level ``run``, ``workload``, ``articles``, ``subscriptions``,
``spark``):
unknown keys are refused and types are strict (``"4"`` is not an int, ``true`` is not an int),
and each key's own value is checked here (ranges, names, column types, call syntaxes, error
policies). What spans keys is checked by ``files.py``, which turns these into the domain model.
:class:`Problems` gathers errors as ``"{source}: {path}: {message}"``, one per line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from applier.articles import PROC_TEMPLATES, Delivery, parse_type
from applier.config.model import (
    HAZARD_WORKLOADS,
    MODELS,
    PACES,
    PARTITIONS,
    SCHEDULE_STRATEGIES,
    SCHEDULES,
    SLOT_WAIT_SECONDS,
    VERIFY_MODES,
    WORKLOADS,
    LoadSettings,
    RunSettings,
    SparkSettings,
    Workload,
)
from applier.config.policy import POLICY_FORMS, ErrorPolicy
from applier.config.problems import At, Problems, checked
from applier.config.thresholds import parse as parse_threshold
from applier.records.schema import MAX_COMMAND_ID

_RUN, _WORKLOAD = RunSettings(), Workload()  # the defaults are the domain model's
# key -> (names it takes, what they name): one validator for every key that names a choice
_CHOICES: dict[str, tuple[Sequence[str], str]] = {
    "partition": (PARTITIONS, "partition strategy"),
    "model": (MODELS, "apply model"),
    "schedule": (SCHEDULES, "schedule"),
    "schedule_strategy": (SCHEDULE_STRATEGIES, "schedule strategy"),
    "kind": (WORKLOADS, "workload"),
    "proc_template": (PROC_TEMPLATES, "procedure template"),
    "verify": (VERIFY_MODES, "verify mode"),
}


def _enum(names: Sequence[str]) -> dict[str, Any]:
    return {"enum": list(names)}


_INT32, _INT64 = (-(2**31), 2**31 - 1), (-(2**63), 2**63 - 1)
_WIDE = ("seed", "schedule_seed")  # a Spark long; every other integer key is a 32-bit int where it goes


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    @field_validator("*")
    @classmethod
    def _fits(cls, v: Any, info: ValidationInfo) -> Any:
        """An integer beyond the type it travels as (after the key's own bounds)."""
        if type(v) is int:
            lo, hi = _INT64 if info.field_name in _WIDE else _INT32
            if not lo <= v <= hi:
                bits = 64 if info.field_name in _WIDE else 32
                bound = f"at most {hi}" if v > hi else f"at least {lo}"
                raise ValueError(f"{info.field_name} must be {bound} (a {bits}-bit integer), got {v}")
        return v

    @field_validator(
        "partition",
        "model",
        "kind",
        "schedule",
        "schedule_strategy",
        "proc_template",
        "verify",
        check_fields=False,
    )
    @classmethod
    def _choice(cls, v: str, info: ValidationInfo) -> str:
        names, noun = _CHOICES[str(info.field_name)]
        if v not in names:
            raise ValueError(f"unknown {noun} {v!r} ({', '.join(names)})")
        return v


class RunSection(_Table):
    """[run]: how the change stream is applied."""

    subscription: str = Field(
        default=_RUN.subscription, description="subscription name (progress table, report)"
    )
    streams: int = Field(
        default=_RUN.streams, ge=1, le=64, description="subscription streams N: parallel connections"
    )
    commit_batch_size: int = Field(default=_RUN.commit_batch_size, ge=1, description="transactions per round")
    partition: str = Field(
        default=_RUN.partition,
        description="how transactions go to streams",
        json_schema_extra=_enum(PARTITIONS),
    )
    model: str = Field(
        default=_RUN.model,
        description="agent (rounds, reset to one stream) or independent",
        json_schema_extra=_enum(MODELS),
    )
    lock_timeout_ms: int = Field(
        default=_RUN.lock_timeout_ms, ge=1, description="lock timeout of a connection, ms"
    )
    error_policy: str = Field(
        default=str(_RUN.error_policy), description=f"{POLICY_FORMS} (codes a dialect knows)"
    )
    retry_attempts: int = Field(
        default=_RUN.retry_attempts, ge=1, description="tries of a deadlocked re-apply"
    )
    set_apply: bool = Field(default=_RUN.set_apply, description="one statement per run of one operation")
    schedule: str = Field(
        default=_RUN.schedule,
        description="free (connections race) or controlled (streams take turns under a seeded scheduler)",
        json_schema_extra=_enum(SCHEDULES),
    )
    schedule_seed: int = Field(default=_RUN.schedule_seed, description="seed of a controlled schedule")
    schedule_strategy: str = Field(
        default=_RUN.schedule_strategy,
        description="who goes next in a controlled schedule: pct, random, or recorded (schedule_file)",
        json_schema_extra=_enum(SCHEDULE_STRATEGIES),
    )
    pct_depth: int = Field(default=_RUN.pct_depth, ge=1, le=1000, description="PCT bug depth d")
    schedule_file: str | None = Field(
        default=_RUN.schedule_file, description="a recorded schedule.jsonl to follow (strategy recorded)"
    )
    proc_schema: str | None = Field(
        default=_RUN.proc_schema,
        min_length=1,
        description="schema of the generated procedures (default: the subscriber's default schema, dbo on SQL Server)",
    )
    proc_template: str = Field(
        default=_RUN.proc_template,
        description="procedure text: 2016 (as SQL Server 2016+ generates it) or legacy (the documented older form)",
        json_schema_extra=_enum(PROC_TEMPLATES),
    )
    verify: str = Field(
        default=_RUN.verify,
        description="auto (the stream's keys and a digest of the rest where that reads less), touched, or full (every row)",
        json_schema_extra=_enum(VERIFY_MODES),
    )
    snapshot_range_rows: int = Field(
        default=_RUN.snapshot_range_rows,
        ge=1,
        le=2**31 - 1,
        description="rows of a key range of the snapshot load, committed with its watermark (a resumed load skips the ranges committed)",
    )
    audit_commands: bool = Field(
        default=_RUN.audit_commands,
        description="every commit also records the lsns of the commands it carried (applier.applied_commands, same transaction): counts each command once, set-based apply included",
    )

    @field_validator("error_policy")
    @classmethod
    def _policy(cls, v: str) -> str:
        checked(ErrorPolicy.parse, v)
        return v


class WorkloadSection(_Table):
    """[workload]: the seeded generator of the change stream."""

    kind: str = Field(
        default=_WORKLOAD.kind,
        description="hazard workloads bring their own articles",
        json_schema_extra=_enum(WORKLOADS),
    )
    initial_rows: int = Field(default=_WORKLOAD.initial_rows, ge=0, description="snapshot rows per article")
    transactions: int = Field(default=_WORKLOAD.transactions, ge=1, description="transactions in the stream")
    # A generated command's lsn is xact_seqno << LSN_SHIFT | command_id (records.schema.make_lsn):
    # a command_id of 2**20 would be the next transaction's first lsn (transactions, a 32-bit
    # integer like every int here, keep the lsn a bigint). Bounded here rather than widened:
    # recorded streams, reports and tests name lsns of this layout, and a transaction of a
    # million commands is no apply test's.
    commands_per_transaction: int = Field(
        default=_WORKLOAD.commands_per_transaction,
        ge=1,
        le=MAX_COMMAND_ID,
        description="their size (at most 2**20 - 1: a generated lsn is xact_seqno << 20 | command_id)",
    )
    key_update_share: float = Field(
        default=_WORKLOAD.key_update_share, ge=0, le=1, description="share of key updates"
    )
    chain_length: int = Field(
        default=_WORKLOAD.chain_length, ge=1, description="links of a key chain (k1 -> k2 ...)"
    )
    seed: int = Field(default=_WORKLOAD.seed, description="the same seed gives the same stream")


class ColumnEntry(_Table):
    """A column of an article."""

    name: str = Field(description="column name")
    type: str = Field(description="SQL Server type name: int, nvarchar(40), decimal(12,2)...")
    nullable: bool | None = Field(default=None, description="default: true, false for key columns")
    key: bool = Field(default=False, description="part of the primary key")
    identity: bool = Field(default=False, description="an identity column")
    computed: bool = Field(default=False, description="computed at the subscriber: not replicated")

    @field_validator("type")
    @classmethod
    def _type(cls, v: str) -> str:
        checked(parse_type, v)
        return v


class ReferenceEntry(_Table):
    """A foreign key the subscriber adds."""

    columns: list[str] = Field(min_length=1, description="columns of this article")
    article: str = Field(description="parent article, schema.table")
    parent_columns: list[str] = Field(min_length=1, description="the parent's key or unique columns")


class ArticleEntry(_Table):
    """[[articles]]: a published table."""

    name: str | None = Field(default=None, description="schema.table (or give schema and table)")
    schema_: str | None = Field(default=None, alias="schema", description="schema (default dbo), with table")
    table: str | None = Field(default=None, description="table name, with schema")
    columns: list[ColumnEntry] = Field(description="the table's columns")
    key: list[str] | None = Field(
        default=None, description="key columns in order (default: those with key = true)"
    )
    insert: str | None = Field(default=None, description="CALL (default), SQL or NONE; CALL <procedure>")
    update: str | None = Field(default=None, description="SCALL (default), CALL, MCALL, XCALL, SQL or NONE")
    delete: str | None = Field(default=None, description="CALL (default), XCALL, SQL or NONE")
    unique: list[list[str]] = Field(default_factory=list, description="unique keys the subscriber adds")
    references: list[ReferenceEntry] = Field(default_factory=list, description="its foreign keys")

    @field_validator("insert", "update", "delete")
    @classmethod
    def _delivery(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is not None:
            checked(Delivery.parse, info.field_name, v)
        return v

    @model_validator(mode="after")
    def _names(self) -> ArticleEntry:
        if self.name is not None:
            if self.schema_ is not None or self.table is not None:
                raise At("name", "give name (schema.table) or schema and table, not both")
            if "." not in self.name:
                raise At("name", f"expected schema.table, got {self.name!r}")
        elif self.table is None:
            raise ValueError("missing required key 'table' (or name = 'schema.table')")
        return self


class SubscriptionArticleEntry(_Table):
    """[[subscriptions.articles]]: an article as this subscription takes it."""

    name: str = Field(description="article, schema.table")
    where: str | None = Field(default=None, description="row filter, a Spark SQL condition over its columns")
    columns: list[str] | None = Field(default=None, description="column list, key included (default: all)")

    @field_validator("where")
    @classmethod
    def _where(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("must not be empty")
        return v


class SubscriptionEntry(_Table):
    """[[subscriptions]]: a subscriber database."""

    name: str = Field(description="subscription name")
    database: str | None = Field(
        default=None, description="database in the embedded cluster (default: the name)"
    )
    target: str | None = Field(default=None, description="an ODBC connection string instead")
    streams: int | None = Field(
        default=None, ge=1, le=64, description="subscription streams (default: run.streams)"
    )
    sqldml_threshold: int = Field(
        default=50, ge=1, description="rs_sqldml: statements of at least this many rows"
    )
    proc_schema: str | None = Field(
        default=None, min_length=1, description="schema of its procedures (default: run.proc_schema)"
    )
    articles: list[SubscriptionArticleEntry] | None = Field(
        default=None, description="articles taken (default: all)"
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be empty")
        return v


MASTER_FORMS = "local, local[K], local[*], spark://host:port, yarn, k8s://https://host:port"
_MASTER = re.compile(
    r"local(\[(\*|[1-9][0-9]*)(,\s*[0-9]+)?\])?|local-cluster\[[1-9][0-9]*,\s*[1-9][0-9]*,\s*[0-9]+\]"
    r"|spark://\S+|yarn|k8s://\S+"
)


def _flat(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{spark = {executor = {memory = "2g"}}}`` (TOML's dotted keys unquoted) as
    ``{"spark.executor.memory": "2g"}``."""
    out: dict[str, Any] = {}
    for k, v in table.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flat(v, f"{key}."))
        else:
            out[key] = v
    return out


class SparkSection(_Table):
    """[spark]: where the Spark session runs (ignored under spark-submit: its settings rule)."""

    master: str | None = Field(
        default=None,
        description=f"master URL ({MASTER_FORMS}); default $MASTER / $SPARK_MASTER, else local[max(streams, cores)]",
    )
    conf: dict[str, str | int | float | bool] = Field(
        default_factory=dict,
        description='Spark properties, e.g. { "spark.executor.memory" = "2g", "spark.cores.max" = 4 }',
    )
    slot_wait: float = Field(
        default=SLOT_WAIT_SECONDS,
        ge=0,
        le=600,
        description="seconds a cluster's executors may take to offer the N task slots N streams need",
    )

    @field_validator("master")
    @classmethod
    def _master(cls, v: str | None) -> str | None:
        if v is not None and not _MASTER.fullmatch(v.strip()):
            raise ValueError(f"not a Spark master URL: {v!r} (expected {MASTER_FORMS})")
        return v.strip() if v is not None else None

    @field_validator("conf", mode="before")
    @classmethod
    def _nested(cls, v: Any) -> Any:
        return _flat(v) if isinstance(v, Mapping) else v

    @field_validator("conf")
    @classmethod
    def _properties(cls, v: dict[str, Any]) -> dict[str, Any]:
        for key in v:
            if key == "spark.master":
                raise At(key, "give the master as `master` (or --master), not as a property")
            if not key.startswith("spark.") or key == "spark.":
                raise At(key, "not a Spark property (they start with `spark.`)")
        return v

    def settings(self) -> SparkSettings:
        """The domain model's settings (property values as Spark reads them: strings)."""

        def text(v: Any) -> str:
            return str(v).lower() if isinstance(v, bool) else str(v)

        return SparkSettings(self.master, tuple((k, text(v)) for k, v in self.conf.items()), self.slot_wait)


class LoadSection(_Table):
    """[load]: a load test's pace and thresholds."""

    rate: float | None = Field(default=None, gt=0, description="transactions per second to apply at")
    pace: str | None = Field(
        default=None,
        description="source: replay a capture at its own commit times",
        json_schema_extra=_enum(PACES),
    )
    speed: float = Field(default=1.0, gt=0, description="pace source: how much faster than the capture")
    duration: float | None = Field(
        default=None,
        gt=0,
        description="seconds of a generated workload at the rate (rate x duration transactions)",
    )
    batch_interval: float = Field(
        default=0.1, gt=0, le=3600, description="seconds of due transactions a paced round takes at most"
    )
    thresholds: list[str] = Field(
        default_factory=list,
        description="what the run must hold, e.g. lag_p99<2s, resets<=3, throughput>=0.95*rate",
    )

    @field_validator("pace")
    @classmethod
    def _pace(cls, v: str | None) -> str | None:
        if v is not None and v not in PACES:
            raise ValueError(f"unknown pace {v!r} ({', '.join(PACES)})")
        return v

    @field_validator("thresholds")
    @classmethod
    def _thresholds(cls, v: list[str]) -> list[str]:
        for t in v:
            checked(parse_threshold, t)
        return v

    @model_validator(mode="after")
    def _one_pace(self) -> LoadSection:
        if self.rate is not None and self.pace is not None:
            raise ValueError("rate and pace exclude each other: a rate, or the source's own commit times")
        if self.duration is not None and self.rate is None:
            raise ValueError("duration needs a rate (the workload holds rate x duration transactions)")
        return self

    def settings(self, table: Mapping[str, str] | None) -> LoadSettings:
        more = [f"{metric}{cond}" for metric, cond in (table or {}).items()]
        return LoadSettings(
            self.rate,
            self.pace,
            self.speed,
            self.duration,
            self.batch_interval,
            tuple([*self.thresholds, *more]),
        )


def spark_settings(table: Mapping[str, Any], source: str) -> SparkSettings:
    """A [spark] table given outside a file (the command line, the API), checked as a file's
    would be; errors read ``{source}: spark.{key}: ...``."""
    problems = Problems(source)
    problems.validate(SparkSection, dict(table), ("spark",))
    problems.check()
    return SparkSection.model_validate(dict(table)).settings()


class ConfigFile(_Table):
    """An applier configuration file (TOML, YAML or JSON)."""

    model_config = ConfigDict(title="applier configuration")

    run: RunSection = Field(default_factory=lambda: RunSection(), description="how the stream is applied")
    workload: WorkloadSection = Field(default_factory=lambda: WorkloadSection(), description="the generator")
    articles: list[ArticleEntry] | None = Field(
        default=None,
        min_length=1,
        description=f"published tables (none with a hazard workload: {HAZARD_WORKLOADS[0]}...)",
    )
    subscriptions: list[SubscriptionEntry] | None = Field(
        default=None, min_length=1, description="subscriber databases"
    )
    spark: SparkSection = Field(
        default_factory=lambda: SparkSection(), description="where Spark runs: master, properties"
    )
    load: LoadSection = Field(default_factory=lambda: LoadSection(), description="a load test's pace")
    thresholds: dict[str, str] | None = Field(
        default=None, description='what the run must hold: metric = condition, e.g. lag_p99 = "<2s"'
    )

    @field_validator("thresholds")
    @classmethod
    def _conditions(cls, v: dict[str, str] | None) -> dict[str, str] | None:
        for metric, cond in (v or {}).items():
            checked(parse_threshold, f"{metric}{cond}", f"thresholds.{metric}")
        return v


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the file format, for editors."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **ConfigFile.model_json_schema()}
