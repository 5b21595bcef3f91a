"""Read the subscriber's rows back, normalised to the canonical image encoding.

Each article's key space is split into ranges of its first key column, each range read by
its own Spark task with its own connection (fetchmany in chunks, the bounds bound as
parameters), so the table never passes through the driver, the normalisation runs on every
core and no task holds more than about ``MAX_ROWS_PER_TASK`` rows (psqlODBC buffers a whole
result set in the client). The driver reads only each article's MIN, MAX and COUNT(*) of
that column to cut the ranges: enough of them to give every core its share of the rows and
no range longer than the bound, assuming keys spread evenly over [MIN, MAX]. An article
whose first key column is not an integer is cut into slices of a hash of its key instead
(each slice a scan of the table, so as few as the bound allows).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from applier import failpoints
from applier.articles import Article
from applier.records.schema import SNAPSHOT_SCHEMA
from applier.targets.endpoint import Endpoint
from applier.values import ValueError_, dumps_sorted_image, encode, encoder, key_text

_ARROW = pa.schema([("article", pa.string()), ("key", pa.string()), ("image", pa.string())])
MAX_ROWS_PER_TASK = 250_000  # rows one read task holds at most (evenly spread keys)
# rows below which a read is not cut for the cores: a task's connection and start cost more
# than reading them (1,000 rows of the demo read in 5 tasks took ~0.25 s, in 1 ~0.1 s)
MIN_ROWS_PER_TASK = 20_000


@dataclass(frozen=True)
class Part:
    """One read task: the rows of ``article`` whose first key column is in [lo, hi) (None: no
    bound on that side), or, with ``slices`` > 1, slice ``slice`` of a hash of the key."""

    article: str
    lo: int | None = None
    hi: int | None = None
    slice: int = 0
    slices: int = 1


@dataclass(frozen=True)
class Bounds:
    """MIN and MAX of an article's first key column on the subscriber, and its row count."""

    lo: object
    hi: object
    rows: int


class Unreadable(Exception):
    """A row of the subscriber that could not be read back or decoded: the message is one line
    naming the article (and the column and key when a value is refused). Raised in a read task;
    the driver finds the message in Spark's error text (:func:`failure_reason`)."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _key_shown(article: Article, row: Sequence[Any]) -> str:
    """The key of a row as read (before its image is made), as key_text writes it; a key value
    that does not decode is shown as the driver gave it."""
    index = {c.name: i for i, c in enumerate(article.replicated)}
    values: list[Any] = []
    for c in article.key_columns:
        raw = row[index[c.name]]
        try:
            values.append(encode(c, raw))
        except ValueError_:
            values.append(repr(raw))
    return json.dumps(values, ensure_ascii=False)


def unreadable(article: Article, row: Sequence[Any] | None, e: Exception) -> Unreadable:
    """The one-line error of a row (None: the read itself) that could not be read back."""
    where = f"could not check article {article.name!r}"
    if isinstance(e, ValueError_) and e.column is not None and row is not None:
        c = e.column
        where += f": column {c.name!r} ({c.type}) at key {_key_shown(article, row)}"
        return Unreadable(_one_line(f"{where}: {e.detail}"))
    return Unreadable(_one_line(f"{where}: {type(e).__name__}: {e}"))


# The last line of a Python traceback: "module.Class: message" (Spark's error text holds the
# worker's traceback; PythonException keeps no exception object to look at).
_UNREADABLE = re.compile(rf"^\s*(?:[\w.]+\.)?{Unreadable.__name__}: (.+)$", re.M)
_RAISED = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Error_)): (.+)$", re.M)


def failure_reason(e: BaseException, limit: int = 500) -> str:
    """What a verification that failed says, on one line: an :class:`Unreadable` row's message
    when a read task raised one, else the exception's kind and its first line (a Python
    worker's last traceback line, not Spark's preamble)."""
    text = str(e)
    m = _UNREADABLE.search(text)
    if m:
        return _one_line(m.group(1))[:limit]
    kind = type(e).__name__
    if "Traceback (most recent call last)" in text:
        raised = _RAISED.findall(text)
        if raised:
            kind, text = raised[-1][0].rsplit(".", 1)[-1], raised[-1][1]
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return _one_line(f"verification failed: {kind}: {first}")[:limit]


def split_range(lo: int, hi: int, parts: int) -> list[tuple[int | None, int | None]]:
    """[lo, hi] (inclusive) cut into ``parts`` ranges [a, b) of (nearly) equal span, at most
    one per value; the first is open below and the last open above, so every value, inside
    the bounds or not, falls in exactly one range."""
    span = hi - lo + 1
    parts = max(1, min(parts, span))
    cuts: list[int | None] = [lo + span * i // parts for i in range(1, parts)]
    edges = [None, *cuts, None]
    return list(zip(edges, edges[1:], strict=False))


def plan_parts(
    articles: Sequence[Article],
    bounds: Mapping[str, Bounds],
    tasks: int,
    max_rows: int = MAX_ROWS_PER_TASK,
    min_rows: int = MIN_ROWS_PER_TASK,
) -> list[Part]:
    """The read parts: each article gets its share of ``tasks`` by its rows, but no part of
    fewer than ``min_rows`` rows, and at least rows / ``max_rows`` parts (an empty article:
    one part)."""
    total = sum(b.rows for b in bounds.values())
    out: list[Part] = []
    for a in articles:
        b = bounds[a.name]
        share = min(-(-tasks * b.rows // total), b.rows // max(1, min_rows)) if total else 1
        n = max(1, share, -(-b.rows // max(1, max_rows)))
        if b.rows == 0 or n == 1:
            out.append(Part(a.name))
        elif a.key_columns[0].type.kind == "int" and isinstance(b.lo, int) and isinstance(b.hi, int):
            out.extend(Part(a.name, lo, hi) for lo, hi in split_range(b.lo, b.hi, n))
        else:
            out.extend(Part(a.name, slice=i, slices=n) for i in range(n))
    return out


def key_bounds(
    target: Endpoint, articles: Sequence[Article], touched: Collection[str] = ()
) -> dict[str, Bounds]:
    """:class:`Bounds` of every article, read on the driver (three numbers each); of an article
    in ``touched``, the bounds of the keys the stream touches (its keys table)."""
    dialect = target.dialect
    conn = target.connect()
    try:
        cur = conn.cursor()
        out = {}
        for a in articles:
            lo, hi, rows = cur.execute(dialect.key_bounds_sql(a, a.name in touched)).fetchone()
            out[a.name] = Bounds(lo, hi, int(rows or 0))
        conn.commit()
        return out
    finally:
        conn.close()


def read_target(
    spark: SparkSession,
    target: Endpoint,
    articles: Sequence[Article],
    tasks: int | None = None,
    max_rows: int = MAX_ROWS_PER_TASK,
    min_rows: int = MIN_ROWS_PER_TASK,
    touched: Collection[str] = (),
) -> DataFrame:
    """(article, key, image) of every row the subscriber holds, images canonical, read by
    the parts of :func:`plan_parts` (``tasks``: Spark's default parallelism unless given),
    parts of small articles together in one task (a task per ``min_rows`` rows at most). Of an
    article in ``touched``, only the rows whose key the stream touches (a join with its keys
    table, ``applier.verify.scope``), cut by the bounds of those keys."""
    by_name = {a.name: a for a in articles}
    keyed = frozenset(touched)
    if tasks is None:
        tasks = spark.sparkContext.defaultParallelism
    bounds = key_bounds(target, articles, keyed) if articles else {}
    parts = plan_parts(articles, bounds, tasks, max_rows, min_rows) if articles else []
    total = sum(b.rows for b in bounds.values())
    if any(p.lo is not None or p.hi is not None or p.slices > 1 for p in parts):
        slices = len(parts)  # an article cut for the cores: each part its own task
    else:
        slices = max(1, min(len(parts), -(-total // max(1, min_rows))))

    todo = [(p.article, p.lo, p.hi, p.slice, p.slices) for p in parts]

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        dialect = target.dialect
        failpoints.reach("verify.read")
        conn = target.connect()
        try:
            for b in batches:
                for name, lo, hi, part, slices in (todo[i] for i in b.column(0).to_pylist()):
                    a = by_name[name]
                    # the dict is built in sorted-name order: its image needs no sort per row
                    cols = sorted(
                        ((i, c.name, encoder(c)) for i, c in enumerate(a.replicated)), key=lambda x: x[1]
                    )
                    cur = conn.cursor()
                    by_keys = name in keyed
                    try:
                        if slices > 1:
                            cur.execute(dialect.select_rows_sql(a, slices, by_keys), part)
                        else:
                            params = [v for v in (lo, hi) if v is not None]
                            sql = dialect.select_range_sql(a, lo is not None, hi is not None, by_keys)
                            cur.execute(sql, *params)
                    except Exception as e:  # noqa: BLE001 - said on one line, naming the article
                        raise unreadable(a, None, e) from e
                    while True:
                        try:
                            rows = cur.fetchmany(10000)
                        except Exception as e:  # noqa: BLE001 - a value the driver cannot return
                            raise unreadable(a, None, e) from e
                        if not rows:
                            break
                        keys, images = [], []
                        for r in rows:
                            try:
                                img = {n: enc(r[i]) for i, n, enc in cols}
                            except ValueError_ as e:
                                raise unreadable(a, r, e) from None
                            keys.append(key_text(a, img))
                            images.append(dumps_sorted_image(img))
                        yield pa.RecordBatch.from_arrays(
                            [pa.array([name] * len(keys)), pa.array(keys), pa.array(images)], schema=_ARROW
                        )
            conn.commit()
        finally:
            conn.close()

    # Part i in partition i (or small articles' parts together): the parts travel with the
    # function, and no Python RDD is made of them (whose workers are another daemon than the
    # SQL tasks').
    return spark.range(0, len(todo), 1, slices).mapInArrow(read, SNAPSHOT_SCHEMA)
