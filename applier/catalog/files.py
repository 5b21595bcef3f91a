"""The articles file: a configuration file holding only ``[[articles]]`` (TOML).

``applier run --config articles.toml`` reads it as it is (the run and workload sections take
their defaults); its ``[[articles]]`` can also be pasted into a larger configuration. What
could not be carried is written at the top as comments, so the file says what it is missing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from applier.articles import Article
from applier.catalog.model import Catalog
from applier.config import Config, article_to_dict, check_config, parse_config
from applier.errors import ConfigError


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"no TOML form for {v!r}")


def _key(k: str) -> str:
    return k if k.replace("_", "").isalnum() and k.isascii() else json.dumps(k)


def _article_toml(a: Article) -> list[str]:
    d = article_to_dict(a)
    lines = ["[[articles]]"]
    for k in ("schema", "table"):
        lines.append(f"{k} = {_value(d[k])}")
    lines.append(f"key = {_value(d['key'])}")
    lines.append("columns = [")
    for c in d["columns"]:
        entry = {"name": c["name"], "type": c["type"], "nullable": c["nullable"]}
        entry.update({k: True for k in ("identity", "computed") if c[k]})
        lines.append(f"    {_value(entry)},")
    lines.append("]")
    if "unique" in d:
        lines.append(f"unique = {_value(d['unique'])}")
    if "references" in d:
        lines.append("references = [")
        lines += [f"    {_value(r)}," for r in d["references"]]
        lines.append("]")
    return lines


def articles_toml(catalog: Catalog, source: str = "") -> str:
    """The catalog as an articles file (checked: ``applier run --config`` accepts it)."""
    if not catalog.articles:
        raise ConfigError(f"{source or 'the schema'}: no article to write (every table was skipped)")
    head = [f"# Articles of {source}, written by `applier articles`: {len(catalog.articles)} table(s)."]
    head.append("# A configuration file with only [[articles]]: `applier run --config <this file>`.")
    for title, msgs in (("Not carried", catalog.problems), ("Carried with a change", catalog.notes)):
        if msgs:
            head.append(f"#\n# {title}:")
            head += [f"#   {' '.join(m.split())}" for m in msgs]
    body: list[str] = []
    for a in catalog.articles:
        body += ["", *_article_toml(a)]
    text = "\n".join(head + body) + "\n"
    check(text, source)
    return text


def check(text: str, source: str = "<articles>") -> None:
    """The file parses as a configuration, with the same checks as ``applier run``."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    parse_config(tomllib.loads(text), source)


def write_articles(catalog: Catalog, path: str | Path, source: str = "") -> Path:
    p = Path(path)
    p.write_text(articles_toml(catalog, source), encoding="utf-8")
    return p


def with_ddl_articles(
    config: Config, path: str | Path, dialect: str, tables: Sequence[str] | None = None
) -> tuple[Config, Catalog]:
    """``config`` with the articles of a DDL script instead of its own (``applier run --ddl``),
    checked as a file would be; and the catalog, whose problems the caller shows."""
    from applier.catalog.ddl import read_ddl_file

    catalog = read_ddl_file(str(path), dialect, tables)
    if not catalog.articles:
        raise ConfigError("\n".join([f"{path}: no article (every table was skipped)", *catalog.problems]))
    return check_config(config.replace(articles=catalog.articles)), catalog
