"""The published tables' rows at a slot's consistent point, written as ``applier run
--snapshot`` reads them: JSON Lines of ``{"article": "schema.table", "image": {...}}``.

The rows are read in a REPEATABLE READ transaction that adopted the snapshot the slot exported
(applier.capture.slot: exact, no lock taken). Each column is read as its output function's
text (``CAST(c AS text)``, in the decoding session's settings: DateStyle ISO, bytea as hex)
and turned into its canonical value by the wal2json reader's own value function, so a row of
the snapshot is encoded exactly as the same row inserted after the slot would be read from the
capture; a value the reader refuses (a NaN or ±Infinity, which the text shows as it is, a
timestamp past 9999...) is refused here, naming the table, the row's key and the column, and no
snapshot file is left. The articles come from the publisher's catalog (applier.catalog.target), as
``applier articles --from-target`` makes them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from applier.articles import Article
from applier.catalog.model import Catalog
from applier.catalog.target import read_connection
from applier.dialects.base import Dialect
from applier.errors import ConfigError
from applier.sources.formats.pgtext import read_value

_FETCH = 5000  # rows fetched at a time (psqlODBC holds a whole result set; pyodbc hands out these)


@dataclass(frozen=True)
class Written:
    """What a snapshot file holds."""

    path: Path
    rows: int
    articles: tuple[str, ...]


def published(conn: Any, source: str, tables: Sequence[str] | None) -> Catalog:
    """The articles of ``tables`` (every table when None) in the publisher's catalog, read on
    ``conn`` (inside the snapshot's transaction); ConfigError naming --tables for a table not
    found or not carried."""
    catalog = read_connection(conn, "postgres", source, tables)
    missing = [p for p in catalog.problems if ": no table " in p]
    if missing:
        raise ConfigError(f"--tables: {missing[0]}")
    if not catalog.articles:
        raise ConfigError("--tables: no table of the publisher can be carried (see `applier articles`)")
    return catalog


def select_text_sql(article: Article, dialect: Dialect) -> str:
    """Every row of the article, each replicated column as its output function's text."""
    cols = ", ".join(f"CAST({dialect.quote(c.name)} AS text)" for c in article.replicated)
    return f"SELECT {cols} FROM {dialect.table(article)}"


def write_snapshot(conn: Any, articles: Sequence[Article], path: Path, dialect: Dialect) -> Written:
    """Every row of ``articles`` read on ``conn`` (its snapshot), written to ``path`` through a
    temporary file renamed into place once fsynced: a reader never sees half a snapshot."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    rows = 0
    try:
        with tmp.open("w", encoding="utf-8") as f:
            for a in articles:
                cols = a.replicated
                keys = [i for i, c in enumerate(cols) if c.name in a.key]
                cur = conn.cursor()
                cur.execute(select_text_sql(a, dialect))
                while batch := cur.fetchmany(_FETCH):
                    for r in batch:
                        rows += 1
                        key = ", ".join(f"{cols[i].name}={r[i]}" for i in keys)
                        where = f"--snapshot: {a.name} key ({key})"
                        image = {c.name: read_value(c, None, v, where) for c, v in zip(cols, r, strict=True)}
                        f.write(json.dumps({"article": a.name, "image": image}, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)  # a refused value leaves no half snapshot behind
        raise
    tmp.replace(path)
    return Written(path, rows, tuple(a.name for a in articles))
