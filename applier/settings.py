"""Settings and articles from a TOML or YAML file, validated once at the edge.

Every error names the file and the key path (``articles[1].columns[0].type``). Without a
file, :func:`demo_config` gives the articles and settings of the demo.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from applier.articles import Article, Column, Delivery, parse_type
from applier.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

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
class ErrorPolicy:
    """strict: any error that a single connection also hits stops the run.
    skip: those native codes / SQLSTATEs are skipped and recorded."""

    kind: str = "strict"
    codes: tuple[str, ...] = ()

    @staticmethod
    def parse(text: str) -> ErrorPolicy:
        t = text.strip()
        if t == "strict":
            return ErrorPolicy()
        if t == "continue-on-data-consistency-errors":
            return ErrorPolicy("skip", ("2601", "2627", "20598"))
        if t.startswith("skip:"):
            codes = tuple(c for c in t[5:].split(":") if c)
            if not codes:
                raise ConfigError("error policy skip: needs codes, e.g. skip:2601:2627:20598")
            return ErrorPolicy("skip", codes)
        raise ConfigError(
            f"unknown error policy {text!r} (strict, skip:<codes>, continue-on-data-consistency-errors)"
        )

    def __str__(self) -> str:
        return "strict" if self.kind == "strict" else "skip:" + ":".join(self.codes)

    def skips(self, cls: str, code: str) -> bool:
        """Whether an error (conflict class, SQLSTATE or native number) is skipped."""
        if self.kind != "skip":
            return False
        return code in self.codes or any(_NATIVE_CLASS.get(c) == cls for c in self.codes)


# SQL Server native error numbers -> conflict class, so that skip:2601:2627:20598 means the
# same on every dialect (PostgreSQL reports 23505 / RP598 for them).
_NATIVE_CLASS = {
    "20598": "row_not_found",
    "2601": "duplicate_key",
    "2627": "duplicate_key",
    "547": "foreign_key",
    "1222": "lock_timeout",
    "1205": "deadlock",
}


@dataclass(frozen=True)
class RunSettings:
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

    def __post_init__(self) -> None:
        if not 1 <= self.streams <= 64:
            raise ConfigError(f"streams must be 1..64, got {self.streams}")
        if self.commit_batch_size < 1:
            raise ConfigError(f"commit_batch_size must be >= 1, got {self.commit_batch_size}")
        if self.partition not in PARTITIONS:
            raise ConfigError(f"unknown partition strategy {self.partition!r} ({', '.join(PARTITIONS)})")
        if self.model not in MODELS:
            raise ConfigError(f"unknown apply model {self.model!r} ({', '.join(MODELS)})")
        if self.lock_timeout_ms < 1:
            raise ConfigError("lock_timeout_ms must be positive")


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

    def of(self, article: str) -> ArticleSubscription | None:
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


@dataclass(frozen=True)
class Config:
    articles: tuple[Article, ...]
    run: RunSettings = field(default_factory=RunSettings)
    workload: Workload = field(default_factory=Workload)
    source: str = "<defaults>"
    subscriptions: tuple[Subscription, ...] = ()

    def article(self, name: str) -> Article:
        for a in self.articles:
            if a.name == name:
                return a
        raise KeyError(name)

    def replace(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "source": self.source,
            "run": {**dataclasses.asdict(self.run), "error_policy": str(self.run.error_policy)},
            "workload": dataclasses.asdict(self.workload),
            "articles": [article_to_dict(a) for a in self.articles],
        }
        if self.subscriptions:
            out["subscriptions"] = [
                {**dataclasses.asdict(s), "target": "***" if s.target else None} for s in self.subscriptions
            ]
        return out


def article_to_dict(a: Article) -> dict[str, Any]:
    def delivery(d: Delivery) -> str:
        return d.syntax.value + (f" {d.procedure}" if d.procedure else "")

    return {
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


# -- parsing ---------------------------------------------------------------------------
class _Path:
    def __init__(self, file: str) -> None:
        self.file = file

    def err(self, where: str, why: str) -> ConfigError:
        return ConfigError(f"{self.file}: {where}: {why}")


def _take(
    d: Mapping[str, Any], key: str, kind: type | tuple[type, ...], p: _Path, where: str, default: Any = ...
) -> Any:
    if key not in d:
        if default is ...:
            raise p.err(where, f"missing required key {key!r}")
        return default
    v = d[key]
    ok = isinstance(v, kind) and not (kind in (int, float, (int, float)) and isinstance(v, bool))
    if not ok:
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise p.err(f"{where}.{key}", f"expected {names}, got {type(v).__name__} {v!r}")
    return v


def _no_extra(d: Mapping[str, Any], allowed: set[str], p: _Path, where: str) -> None:
    extra = set(d) - allowed
    if extra:
        raise p.err(where, f"unknown key(s) {sorted(extra)} (allowed: {sorted(allowed)})")


def parse_article(d: Any, p: _Path, where: str) -> Article:
    if not isinstance(d, Mapping):
        raise p.err(where, "expected a table of article settings")
    _no_extra(
        d,
        {
            "schema",
            "table",
            "name",
            "columns",
            "key",
            "insert",
            "update",
            "delete",
            "filter",
            "unique",
            "references",
        },
        p,
        where,
    )
    if "name" in d:
        name = _take(d, "name", str, p, where)
        if "." not in name:
            raise p.err(f"{where}.name", f"expected schema.table, got {name!r}")
        schema, table = name.split(".", 1)
    else:
        schema = _take(d, "schema", str, p, where, "dbo")
        table = _take(d, "table", str, p, where)
    cols_raw = _take(d, "columns", list, p, where)
    columns: list[Column] = []
    keys: list[str] = []
    for i, c in enumerate(cols_raw):
        cw = f"{where}.columns[{i}]"
        if not isinstance(c, Mapping):
            raise p.err(cw, "expected a table with name and type")
        _no_extra(c, {"name", "type", "nullable", "key", "identity", "computed"}, p, cw)
        cname = _take(c, "name", str, p, cw)
        try:
            ctype = parse_type(_take(c, "type", str, p, cw))
        except ConfigError as e:
            raise p.err(f"{cw}.type", str(e)) from None
        is_key = _take(c, "key", bool, p, cw, False)
        if is_key:
            keys.append(cname)
        columns.append(
            Column(
                cname,
                ctype,
                nullable=_take(c, "nullable", bool, p, cw, not is_key),
                identity=_take(c, "identity", bool, p, cw, False),
                computed=_take(c, "computed", bool, p, cw, False),
            )
        )
    if "key" in d:
        klist = _take(d, "key", list, p, where)
        if not all(isinstance(k, str) for k in klist):
            raise p.err(f"{where}.key", "expected a list of column names")
        keys = list(klist)
    kw: dict[str, Any] = {}
    for op in ("insert", "update", "delete"):
        if op in d:
            try:
                kw[op] = Delivery.parse(op, _take(d, op, str, p, where))
            except ConfigError as e:
                raise p.err(f"{where}.{op}", str(e)) from None
    names = {c.name for c in columns}
    unique: list[tuple[str, ...]] = []
    for i, u in enumerate(_take(d, "unique", list, p, where, [])):
        if not isinstance(u, list) or not u or any(c not in names for c in u):
            raise p.err(f"{where}.unique[{i}]", f"expected a list of column names, got {u!r}")
        unique.append(tuple(u))
    refs: list[tuple[tuple[str, ...], str, tuple[str, ...]]] = []
    for i, r in enumerate(_take(d, "references", list, p, where, [])):
        rw = f"{where}.references[{i}]"
        cols_ = r.get("columns") if isinstance(r, Mapping) else None
        parent = r.get("article") if isinstance(r, Mapping) else None
        pcols = r.get("parent_columns") if isinstance(r, Mapping) else None
        if not (
            isinstance(cols_, list)
            and isinstance(parent, str)
            and isinstance(pcols, list)
            and len(cols_) == len(pcols)
            and all(c in names for c in cols_)
        ):
            raise p.err(rw, "expected { columns = [...], article = 'schema.table', parent_columns = [...] }")
        refs.append((tuple(cols_), parent, tuple(pcols)))
    try:
        return Article(
            schema,
            table,
            tuple(columns),
            tuple(keys),
            filter=_take(d, "filter", str, p, where, None),
            unique=tuple(unique),
            references=tuple(refs),
            **kw,
        )
    except ConfigError as e:
        raise p.err(where, str(e)) from None


def _dataclass_from(cls: type, d: Any, p: _Path, where: str, convert: Mapping[str, Any] | None = None) -> Any:
    if not isinstance(d, Mapping):
        raise p.err(where, "expected a table")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    _no_extra(d, set(fields), p, where)
    kw: dict[str, Any] = {}
    for k, v in d.items():
        conv = (convert or {}).get(k)
        if conv is not None:
            try:
                kw[k] = conv(v)
            except ConfigError as e:
                raise p.err(f"{where}.{k}", str(e)) from None
            continue
        default = fields[k].default
        expect: type | tuple[type, ...] = type(default) if default is not dataclasses.MISSING else object
        if expect is float:
            expect = (int, float)
        _take(d, k, expect, p, where)
        kw[k] = v
    try:
        return cls(**kw)
    except ConfigError as e:
        raise p.err(where, str(e)) from None


def parse_config(data: Any, source: str = "<config>") -> Config:
    p = _Path(source)
    if not isinstance(data, Mapping):
        raise p.err("top level", "expected a table with [run], [workload] and [[articles]]")
    _no_extra(data, {"run", "workload", "articles", "subscriptions"}, p, "top level")
    articles: tuple[Article, ...]
    if "articles" in data:
        raw = data["articles"]
        if not isinstance(raw, list) or not raw:
            raise p.err("articles", "expected a non-empty list of articles")
        articles = tuple(parse_article(a, p, f"articles[{i}]") for i, a in enumerate(raw))
        names = [a.name for a in articles]
        dups = {n for n in names if names.count(n) > 1}
        if dups:
            raise p.err("articles", f"duplicate article(s) {sorted(dups)}")
    else:
        articles = demo_articles()
    run = _dataclass_from(
        RunSettings, data.get("run", {}), p, "run", {"error_policy": lambda v: ErrorPolicy.parse(str(v))}
    )
    workload = _dataclass_from(Workload, data.get("workload", {}), p, "workload")
    validate_workload(workload, p)
    subscriptions: tuple[Subscription, ...] = ()
    if "subscriptions" in data:
        raw_subs = data["subscriptions"]
        if not isinstance(raw_subs, list) or not raw_subs:
            raise p.err("subscriptions", "expected a non-empty list of subscriptions")
        subscriptions = tuple(
            parse_subscription(s, articles, p, f"subscriptions[{i}]") for i, s in enumerate(raw_subs)
        )
        names = [s.name for s in subscriptions]
        dups = {n for n in names if names.count(n) > 1}
        if dups:
            raise p.err("subscriptions", f"duplicate subscription(s) {sorted(dups)}")
    return Config(articles, run, workload, source, subscriptions)


def parse_subscription(d: Any, articles: tuple[Article, ...], p: _Path, where: str) -> Subscription:
    """[[subscriptions]]: name, database or target, streams, sqldml_threshold, and optionally
    [[subscriptions.articles]] with name, where, columns (an article not listed is not taken)."""
    if not isinstance(d, Mapping):
        raise p.err(where, "expected a table of subscription settings")
    _no_extra(d, {"name", "database", "target", "streams", "sqldml_threshold", "articles"}, p, where)
    name = _take(d, "name", str, p, where)
    if not name.strip():
        raise p.err(f"{where}.name", "must not be empty")
    streams = _take(d, "streams", int, p, where, None)
    if streams is not None and not 1 <= streams <= 64:
        raise p.err(f"{where}.streams", f"must be 1..64, got {streams}")
    threshold = _take(d, "sqldml_threshold", int, p, where, 50)
    if threshold < 1:
        raise p.err(f"{where}.sqldml_threshold", f"must be positive, got {threshold}")
    by_name = {a.name: a for a in articles}
    subs: tuple[ArticleSubscription, ...] | None = None
    if "articles" in d:
        raw = _take(d, "articles", list, p, where)
        got = []
        for i, a in enumerate(raw):
            aw = f"{where}.articles[{i}]"
            if not isinstance(a, Mapping):
                raise p.err(aw, "expected a table with name, where, columns")
            _no_extra(a, {"name", "where", "columns"}, p, aw)
            aname = _take(a, "name", str, p, aw)
            art = by_name.get(aname)
            if art is None:
                raise p.err(f"{aw}.name", f"unknown article {aname!r} (known: {', '.join(sorted(by_name))})")
            cond = _take(a, "where", str, p, aw, None)
            if cond is not None and not cond.strip():
                raise p.err(f"{aw}.where", "must not be empty")
            cols: tuple[str, ...] | None = None
            if "columns" in a:
                clist = _take(a, "columns", list, p, aw)
                if not all(isinstance(c, str) for c in clist):
                    raise p.err(f"{aw}.columns", "expected a list of column names")
                bad = [c for c in clist if c not in art.column_names]
                if bad:
                    raise p.err(f"{aw}.columns", f"{bad[0]!r} is not a column of {aname}")
                missing = [k for k in art.key if k not in clist]
                if missing:
                    raise p.err(f"{aw}.columns", f"the key column {missing[0]!r} must be in the column list")
                cols = tuple(c for c in art.column_names if c in clist)  # article order
            got.append(ArticleSubscription(aname, cond, cols))
        seen = [s.article for s in got]
        dup = {n for n in seen if seen.count(n) > 1}
        if dup:
            raise p.err(f"{where}.articles", f"article(s) listed twice: {sorted(dup)}")
        subs = tuple(got)
    return Subscription(
        name,
        subs,
        database=_take(d, "database", str, p, where, None),
        target=_take(d, "target", str, p, where, None),
        streams=streams,
        sqldml_threshold=threshold,
    )


def validate_workload(w: Workload, p: _Path | None = None) -> None:
    p = p or _Path("<settings>")
    if w.kind not in WORKLOADS:
        raise p.err("workload.kind", f"unknown workload {w.kind!r} ({', '.join(WORKLOADS)})")
    for name in ("initial_rows", "transactions", "commands_per_transaction", "chain_length"):
        if getattr(w, name) < (0 if name == "initial_rows" else 1):
            raise p.err(f"workload.{name}", f"must be positive, got {getattr(w, name)}")
    if not 0.0 <= w.key_update_share <= 1.0:
        raise p.err("workload.key_update_share", f"must be within 0..1, got {w.key_update_share}")


def load_config(path: str | Path) -> Config:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        elif path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            data = tomllib.loads(text)
    except Exception as e:  # noqa: BLE001 - parser errors of three libraries, all reported alike
        raise ConfigError(f"{path}: not valid {path.suffix.lstrip('.') or 'TOML'}: {e}") from None
    return parse_config(data, str(path))


def parse_article_dicts(items: list[dict[str, Any]], source: str) -> tuple[Article, ...]:
    p = _Path(source)
    return tuple(parse_article(a, p, f"articles[{i}]") for i, a in enumerate(items))


def demo_articles() -> tuple[Article, ...]:
    """Two articles: one with a single int key, one with a composite key."""
    data = {
        "articles": [
            {
                "name": "dbo.accounts",
                "columns": [
                    {"name": "id", "type": "int", "key": True},
                    {"name": "owner", "type": "nvarchar(40)"},
                    {"name": "balance", "type": "decimal(12,2)"},
                    {"name": "active", "type": "bit"},
                    {"name": "updated", "type": "datetime2"},
                    {"name": "ref", "type": "uniqueidentifier"},
                ],
            },
            {
                "name": "dbo.order_lines",
                "columns": [
                    {"name": "order_id", "type": "bigint", "key": True},
                    {"name": "line", "type": "smallint", "key": True},
                    {"name": "qty", "type": "int"},
                    {"name": "price", "type": "money"},
                    {"name": "note", "type": "nvarchar(max)"},
                ],
            },
        ]
    }
    p = _Path("<demo>")
    return tuple(parse_article(a, p, f"articles[{i}]") for i, a in enumerate(data["articles"]))


def demo_config() -> Config:
    return Config(demo_articles())
