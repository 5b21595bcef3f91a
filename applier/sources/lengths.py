"""Text lengths as a subscriber counts them, checked before a run applies anything.

A change file is checked once, as it is read, with an nvarchar(n)'s n counting characters (what
PostgreSQL's varchar(n) counts). SQL Server counts UTF-16 code units: a character beyond U+FFFF
(an emoji) takes 2 of the n, so ten emoji fit nvarchar(10) on PostgreSQL and are refused
half-way through a run on SQL Server. When a run has such a subscriber
(:attr:`applier.dialects.base.Dialect.UTF16_LENGTHS`), its stream and snapshot are checked that
way too, before anything is installed: one Spark job over the rows holding a character beyond
U+FFFF (only they can count more units than characters), for the articles with such columns.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator
from typing import Any

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from applier.articles import Article, Column
from applier.records.events import Schemas
from applier.sources.reading import KEPT, raise_errors
from applier.values import ValueError_, check_utf16_length

# A character beyond U+FFFF (Java's regex, on the JSON text of an image)
_BEYOND_BMP = "[\\x{10000}-\\x{10FFFF}]"


def _limited(article: Article, bases: Collection[str]) -> tuple[Column, ...]:
    return tuple(
        c
        for c in article.replicated
        if c.type.base in bases and c.type.length is not None and c.type.length > 0
    )


def _faults(image: Any, columns: tuple[Column, ...], where: str) -> Iterator[str]:
    if not isinstance(image, str):
        return
    values = json.loads(image)
    for col in columns:
        try:
            check_utf16_length(col, values.get(col.name))
        except ValueError_ as e:
            yield f"{where}: {e}"


def check_utf16_lengths(
    changes: DataFrame,
    snapshot: DataFrame,
    origin: str,
    schemas: Schemas,
    bases: Collection[str],
) -> None:
    """InputError naming the lsn (the snapshot's article and key) and the column of the first
    values longer than their column's n in UTF-16 code units, for the column types in ``bases``
    (nothing to check: no job)."""
    if not bases:
        return
    limits = {
        (name, v): cols
        for name, versions in schemas.versions.items()
        for v, a in enumerate(versions, 1)
        if (cols := _limited(a, bases))
    }
    if not limits:
        return
    names = sorted({name for name, _ in limits})

    def change_faults(rows: Iterable[Row]) -> Iterator[str]:
        for r in rows:
            cols = limits.get((r.article, r.schema_version), ())
            for image in ("before", "after"):
                yield from _faults(getattr(r, image), cols, f"{origin}: lsn {r.lsn}: {image}")

    def snapshot_faults(rows: Iterable[Row]) -> Iterator[str]:
        for r in rows:
            yield from _faults(r.image, limits.get((r.article, 1), ()), f"snapshot: {r.article} key {r.key}")

    beyond = F.col("after").rlike(_BEYOND_BMP) | F.col("before").rlike(_BEYOND_BMP)
    wide = changes.where(F.col("article").isin(names) & F.coalesce(beyond, F.lit(False)))
    found = wide.select("lsn", "article", "schema_version", "before", "after").rdd.mapPartitions(
        change_faults
    )
    raise_errors(found.take(KEPT), "change file")
    wide_rows = snapshot.where(F.col("article").isin(names) & F.col("image").rlike(_BEYOND_BMP))
    raise_errors(wide_rows.rdd.mapPartitions(snapshot_faults).take(KEPT), "snapshot file")
