"""Reading a configuration: files and dicts in, the domain model out, every check done once.

Owns parsing (TOML, YAML, JSON), the conversion of the file format (``fileformat.py``) to the
domain model (``model.py``), the checks that span keys (unique names, subscription articles,
combinations of settings: "every accepted key is used or refused"), and the same checks for
configurations changed on the command line (:func:`with_overrides`) or built in code
(:func:`check_config`). Errors name the source and the key path, all of them at once.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import stat
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from applier.articles import Article, Column, Delivery, parse_type
from applier.config.demo import demo_articles
from applier.config.fileformat import (
    ArticleEntry,
    ConfigFile,
    LoadSection,
    RunSection,
    SparkSection,
    SubscriptionEntry,
    WorkloadSection,
)
from applier.config.model import (
    HAZARD_WORKLOADS,
    WORKLOADS,
    ArticleSubscription,
    Config,
    RunSettings,
    Subscription,
    Workload,
    subscription_to_dict,
)
from applier.config.policy import ErrorPolicy
from applier.config.problems import Loc, Problems, quiet
from applier.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_GENERATING = ", ".join(w for w in WORKLOADS if w not in HAZARD_WORKLOADS)


def _article(f: ArticleEntry, loc: Loc, problems: Problems) -> Article | None:
    """The article of an entry that validated (None: its problems are added)."""
    schema, table = f.name.split(".", 1) if f.name else (f.schema_ or "dbo", f.table or "")
    before = len(problems.items)
    names = {c.name for c in f.columns}
    for i, u in enumerate(f.unique):
        if not u or any(c not in names for c in u):
            problems.add((*loc, "unique", i), f"expected a list of column names, got {u!r}")
    for i, r in enumerate(f.references):
        bad = [c for c in r.columns if c not in names]
        if bad:
            problems.add(
                (*loc, "references", i, "columns"), f"{bad[0]!r} is not a column of {schema}.{table}"
            )
        elif len(r.columns) != len(r.parent_columns):
            problems.add((*loc, "references", i), "columns and parent_columns differ in length")
    if len(problems.items) > before:
        return None
    ops = (("insert", f.insert), ("update", f.update), ("delete", f.delete))
    kw: dict[str, Any] = {op: Delivery.parse(op, v) for op, v in ops if v is not None}
    columns = tuple(
        Column(
            c.name,
            parse_type(c.type),
            not c.key if c.nullable is None else c.nullable,
            c.identity,
            c.computed,
        )
        for c in f.columns
    )
    keys = tuple(f.key) if f.key is not None else tuple(c.name for c in f.columns if c.key)
    refs = tuple((tuple(r.columns), r.article, tuple(r.parent_columns)) for r in f.references)
    try:
        unique = tuple(tuple(u) for u in f.unique)
        return Article(schema, table, columns, keys, unique=unique, references=refs, **kw)
    except ConfigError as e:  # the article's own checks: columns, key
        problems.add(loc, str(e))
        return None


def _articles(raw: list[Any], problems: Problems) -> tuple[Article, ...] | None:
    """The articles of a list (its pydantic errors already added); None if one is wrong."""
    entries = [quiet(ArticleEntry, a) for a in raw]
    built = [_article(f, ("articles", i), problems) if f else None for i, f in enumerate(entries)]
    ok = [a for a in built if a is not None]
    names = [a.name for a in ok]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        problems.add(("articles",), f"duplicate article(s) {dups}")
    _clashing_procedures(ok, problems)
    by_name = {a.name: a for a in ok}
    for i, a in enumerate(built):
        for j, (_cols, parent, pcols) in enumerate(a.references if a else ()):
            p = by_name.get(parent)  # a parent that is not published: nothing to reference
            if p is not None and not any(set(pcols) == set(k) for k in (p.key, *p.unique)):
                where = ("articles", i, "references", j, "parent_columns")
                problems.add(where, f"{list(pcols)} is neither the key nor a unique key of {parent}")
    return tuple(ok) if len(ok) == len(built) and not dups else None


_PROC_PREFIX = {"insert": "sp_MSins_", "update": "sp_MSupd_", "delete": "sp_MSdel_"}


def _clashing_procedures(articles: list[Article], problems: Problems) -> None:
    """Generated procedures live in one schema (as SQL Server's do), named sp_MSxxx_ + schema +
    table: a.bc and ab.c would share one. Names compare ignoring case (SQL Server's default)."""
    owner: dict[str, str] = {}
    for a in articles:
        for op, prefix in _PROC_PREFIX.items():
            d = getattr(a, op)
            if d.procedure or d.syntax.value in ("SQL", "NONE"):
                continue
            name = f"{prefix}{a.schema}{a.table}"
            other = owner.setdefault(name.lower(), a.name)
            if other != a.name:
                problems.add(
                    ("articles",),
                    f"{other} and {a.name} would both be applied by {name} (the generated procedures "
                    f"share one schema): give one of them a custom procedure name ({op} = "
                    f'"{d.syntax.value} {name}_2") and install it, or rename a table',
                )


def _subscription(
    f: SubscriptionEntry, arts: tuple[Article, ...], loc: Loc, problems: Problems
) -> Subscription:
    by_name = {a.name: a for a in arts}
    taken: list[ArticleSubscription] = []
    for i, s in enumerate(f.articles or ()):
        art, here = by_name.get(s.name), (*loc, "articles", i)
        if art is None:
            problems.add((*here, "name"), f"unknown article {s.name!r} (known: {', '.join(sorted(by_name))})")
            continue
        cols: tuple[str, ...] | None = None
        if s.columns is not None:
            bad = [c for c in s.columns if c not in art.column_names]
            missing = [k for k in art.key if k not in s.columns]
            if bad:
                problems.add((*here, "columns"), f"{bad[0]!r} is not a column of {s.name}")
            elif missing:
                problems.add((*here, "columns"), f"the key column {missing[0]!r} must be in the column list")
            cols = tuple(c for c in art.column_names if c in s.columns)  # article order
        taken.append(ArticleSubscription(s.name, s.where, cols))
    seen = [s.article for s in taken]
    if len(set(seen)) < len(seen):
        twice = sorted({n for n in seen if seen.count(n) > 1})
        problems.add((*loc, "articles"), f"article(s) listed twice: {twice}")
    return Subscription(
        f.name,
        None if f.articles is None else tuple(taken),
        database=f.database,
        target=f.target,
        streams=f.streams,
        sqldml_threshold=f.sqldml_threshold,
        proc_schema=f.proc_schema,
    )


def _combinations(
    run: RunSection | None, workload: WorkloadSection | None, given: bool, problems: Problems
) -> None:
    """Settings each valid alone that do not go together."""
    if run is not None and run.partition == "writeset" and run.model != "independent":
        problems.add(
            ("run",),
            f"partition 'writeset' needs model 'independent', not {run.model!r} (the agent commits per "
            "round, so a writeset dependency inside a round could never be seen committed)",
        )
    if run is not None and run.schedule == "controlled" and run.partition == "writeset":
        problems.add(
            ("run",),
            "schedule 'controlled' cannot take partition 'writeset' (a stream waiting for another's "
            "commit outside its turn would stall the scheduler); use key-hash, round-robin or single",
        )
    if run is not None and (run.schedule_strategy == "recorded") != (run.schedule_file is not None):
        problems.add(
            ("run",),
            "schedule_strategy 'recorded' and schedule_file go together (the strategy follows the file)",
        )
    if run is not None and run.schedule_file is not None and run.schedule != "controlled":
        problems.add(("run",), "schedule_file needs schedule 'controlled' (a free run follows no schedule)")
    if workload is None:
        return
    hazard = workload.kind in HAZARD_WORKLOADS
    if not given and not hazard:
        problems.add(
            ("articles",),
            f"missing (workload {workload.kind!r} changes the published tables); "
            "list the published tables, or use a hazard workload, which brings its own articles",
        )
    if given and hazard:
        problems.add(
            ("articles",),
            f"workload {workload.kind!r} brings its own articles, so these would be ignored; "
            f"remove them, or use a workload that changes them ({_GENERATING})",
        )


def parse_config(data: Any, source: str = "<config>") -> Config:
    """The configuration a file's data describes (a mapping, as TOML, YAML or JSON read it)."""
    problems = Problems(source)
    problems.validate(ConfigFile, data)
    if not isinstance(data, Mapping):
        problems.check()  # it did not validate
    run, workload = quiet(RunSection, data.get("run", {})), quiet(WorkloadSection, data.get("workload", {}))
    raw = data.get("articles")
    _combinations(run, workload, raw is not None, problems)
    articles: tuple[Article, ...] | None = None
    if raw is None:
        articles = demo_articles()  # placeholders (a hazard workload brings its own) or refused above
    elif isinstance(raw, list) and raw:
        articles = _articles(raw, problems)
    subscriptions: list[Subscription] = []
    raw_subs = data.get("subscriptions")
    if articles is not None and isinstance(raw_subs, list):  # else unknown names would be guesses
        for i, s in enumerate(raw_subs):
            f = quiet(SubscriptionEntry, s)
            if f is not None:
                subscriptions.append(_subscription(f, articles, ("subscriptions", i), problems))
        names = [s.name for s in subscriptions]
        if len(set(names)) < len(names):
            dups = sorted({n for n in names if names.count(n) > 1})
            problems.add(("subscriptions",), f"duplicate subscription(s) {dups}")
    problems.check()
    assert run is not None and workload is not None and articles is not None  # else a problem says why
    settings = RunSettings(**{**run.model_dump(), "error_policy": ErrorPolicy.parse(run.error_policy)})
    generator = Workload(**{**workload.model_dump(), "key_update_share": float(workload.key_update_share)})
    spark = quiet(SparkSection, data.get("spark", {}))
    load = quiet(LoadSection, data.get("load", {}))
    assert spark is not None and load is not None  # else a problem says why
    return Config(
        articles,
        settings,
        generator,
        source,
        tuple(subscriptions),
        spark.settings(),
        load.settings(data.get("thresholds")),
    )


def load_config(path: str | Path) -> Config:
    """A TOML file (YAML for .yaml/.yml, JSON for .json), checked."""
    path = Path(path)
    suffix = path.suffix.lower()
    fmt = "YAML" if suffix in (".yaml", ".yml") else "JSON" if suffix == ".json" else "TOML"
    text = _text(path)
    env = Expansion(path, text)
    data = env.expand(_parsed(path, text, fmt))
    try:
        return parse_config(data, str(path))
    except ConfigError as e:
        raise ConfigError(env.scrub(str(e))) from None


# ${VAR} or ${VAR:-default} in a string value; $${...} is a literal ${...}
_REF = re.compile(r"\$\$\{|\$\{(?:([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|[^}]*\}?)")
_SECRET_NAME = re.compile(r"PASSWORD|PASSWD|PWD|SECRET|TOKEN|CREDENTIAL|KEY", re.IGNORECASE)


class Expansion:
    """``${VAR}`` and ``${VAR:-default}`` (default when VAR is unset or empty) in the string
    values of a configuration file, from the environment: CI keeps a connection string's
    password in a secret, never in a committed file. Only values are expanded (keys,
    comments and other types are left as they are), and a value is never parsed again, so a
    password holding quotes or ``;`` cannot change the file's structure. ``$${`` is a
    literal ``${``. An unset variable without a default is a ConfigError naming the file, the
    line and the variable. The values of variables named like secrets (PASSWORD, PWD,
    SECRET, TOKEN, KEY...) are replaced by ``***`` in the file's error messages."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text
        self.secrets: set[str] = set()

    def expand(self, data: Any) -> Any:
        if isinstance(data, str):
            return _REF.sub(self._value, data) if "${" in data else data
        if isinstance(data, list):
            return [self.expand(v) for v in data]
        if isinstance(data, dict):
            return {k: self.expand(v) for k, v in data.items()}
        return data

    def _value(self, m: re.Match[str]) -> str:
        if m.group(0) == "$${":
            return "${"
        name, default = m.group(1), m.group(2)
        if name is None:
            raise ConfigError(
                f"{self._where(m.group(0))}: bad reference {m.group(0)!r}: expected ${{NAME}} or "
                "${NAME:-default} (NAME: letters, digits and _; $${ for a literal ${)"
            )
        value = os.environ.get(name)
        if not value and default is not None:
            value = default
        if value is None:
            raise ConfigError(
                f"{self._where(m.group(0))}: environment variable {name} is not set "
                f"(referenced as {m.group(0)}; give a default with ${{{name}:-default}})"
            )
        if _SECRET_NAME.search(name) and len(value) >= 3:
            self.secrets.add(value)
        return value

    def _where(self, ref: str) -> str:
        """The file and the line the reference is on (the first such line)."""
        at = self.text.find(ref)
        return f"{self.path}:{self.text.count(chr(10), 0, at) + 1}" if at >= 0 else str(self.path)

    def scrub(self, message: str) -> str:
        """The message with every secret value expanded into the file replaced by ***."""
        forms = {f for v in self.secrets for f in (v, repr(v)[1:-1], json.dumps(v)[1:-1])}
        for form in sorted(forms, key=len, reverse=True):  # as written, and as repr() shows it
            message = message.replace(form, "***")
        return message


def _text(path: Path) -> str:
    """The file's text: a regular file (a FIFO would block), readable, UTF-8."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            what = "a folder" if path.is_dir() else "not a regular file"
            raise ConfigError(f"{path}: {what}, expected a configuration file (TOML, YAML or JSON)")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: cannot read: no such configuration file") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise ConfigError(
            f"{path}:{line}: not UTF-8 text (byte 0x{raw[e.start : e.start + 1].hex()} at column {col})"
        ) from None


def _parsed(path: Path, text: str, fmt: str) -> Any:
    """The data of a TOML, YAML or JSON text; ConfigError naming file, line and column."""
    try:
        if fmt == "YAML":
            from applier.config import yamlfile  # PyYAML only when a YAML file is read

            return yamlfile.load(text)
        if fmt == "JSON":
            return json.loads(text)
        return tomllib.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    except Exception as e:  # noqa: BLE001 - parser errors of two more libraries, reported alike
        mark = getattr(e, "problem_mark", None)  # YAML: where, and what (one line)
        if mark is not None:
            what = " ".join(str(getattr(e, "problem", None) or e).split())
            raise ConfigError(f"{path}:{mark.line + 1}:{mark.column + 1}: not valid {fmt}: {what}") from None
        raise ConfigError(f"{path}: not valid {fmt}: {' '.join(str(e).split())}") from None


def parse_article_dicts(items: Sequence[Mapping[str, Any]], source: str) -> tuple[Article, ...]:
    """Articles as a file's ``articles`` list gives them, with the same checks."""
    problems = Problems(source)
    raw = list(items)
    problems.validate(list[ArticleEntry], raw, ("articles",))
    articles = _articles(raw, problems)
    problems.check()
    assert articles is not None  # else a problem says why
    return articles


def validate_workload(workload: Workload, source: str = "<settings>") -> None:
    """Check a workload built in code as a file's [workload] would be."""
    problems = Problems(source)
    problems.validate(WorkloadSection, dataclasses.asdict(workload), ("workload",))
    problems.check()


def _as_file(config: Config, run: Mapping[str, Any], workload: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` (with these changes) as a file would give it: subscription targets as they
    are, and no articles where they are the placeholders of a hazard workload."""
    d = config.to_dict()
    del d["source"]
    policy = run.get("error_policy")
    d["run"].update(run, **({"error_policy": str(policy)} if isinstance(policy, ErrorPolicy) else {}))
    d["workload"].update(workload)
    if config.subscriptions:
        d["subscriptions"] = [subscription_to_dict(s, redact=False) for s in config.subscriptions]
    if "spark" in d:
        d["spark"] = config.spark.to_dict(redact=False)
    # A file with a hazard workload gives no articles; the demo's own config does.
    placeholders = config.workload.kind in HAZARD_WORKLOADS and config.source != Config.source
    if config.articles == demo_articles() and (d["workload"].get("kind") in HAZARD_WORKLOADS or placeholders):
        del d["articles"]
    return d


def with_overrides(
    config: Config,
    *,
    run: Mapping[str, Any] | None = None,
    workload: Mapping[str, Any] | None = None,
    source: str = "command line",
) -> Config:
    """``config`` with these [run] / [workload] keys changed (``run["error_policy"]`` a string),
    checked as a file would be; errors name ``source``, the result keeps ``config.source``."""
    return parse_config(_as_file(config, run or {}, workload or {}), source).replace(source=config.source)


def check_config(config: Config) -> Config:
    """A configuration built in code, checked as a file would be; returns the checked copy."""
    return parse_config(_as_file(config, {}, {}), config.source)
