"""Verify in proportion to the change: read back only the rows whose key the stream touches, and
check the rest of each article by a digest the subscriber takes of it.

A stream of 200 commands over a 200,000-row snapshot touches at most 400 keys; reading every row
back (ODBC, decoding, hashing, a shuffle) was the verify phase's whole cost. The keys a stream
touches are known before it is applied: the keys of its key events (the oracle's: the after key
of an insert or update, the before key of a delete or a key change). So, after the snapshot
load and before the apply:

- the keys go into a table of each article's own in applier's schema (``applier.keys_<article>``,
  :meth:`~applier.dialects.base.Dialect.touched_article`), by Spark tasks, one bulk statement a
  10,000 keys, values bound as one JSON text;
- the subscriber digests the rest of each article, the rows whose key is not there: their count
  and the sum of a hash per row (PostgreSQL ``hash_record_extended``, T-SQL ``HASHBYTES`` over
  the row's text), recorded in ``applier.baselines`` in the transaction that records the load's
  phase, so that a ``--resume`` finds it (:func:`record`).

At verify the subscriber digests the rest again: equal, nothing outside the stream's keys
changed, appeared or went; else the verdict is diverged, with a reason naming the article, and
that article is read whole, so that the difference is named and blamed as before. The touched
rows are read back (a join with the keys table in the read tasks' queries) and compared with the
oracle cut to the keys that have events (:func:`cut_snapshot`: the snapshot's rows of an article
read by its keys do not take part, they are the rest).

Where it reads less is decided per article (mode ``auto``): not for a small snapshot (below
:data:`AUTO_MIN_ROWS` a full read costs less than the keys' upload), not for a stream with as
many commands as half the snapshot's rows (the keys' job would find most rows touched), and not
for an article whose touched keys are over :data:`TOUCHED_SHARE` of its rows (reading them all is
cheaper). ``touched`` reads every article it can by its keys; ``full`` reads every row. A stream
with schema changes, statements or applied procedures is read whole: they change rows no key
event names.

What it trusts: the snapshot load. An untouched row is compared with what the load left, not
with the snapshot's image; a value the subscriber's type cannot hold (rounded, cut) shows only
under ``--verify full``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from applier.articles import Article
from applier.errors import stop_of
from applier.results import Check, Verdict
from applier.sparkenv import without_aqe
from applier.targets.endpoint import Endpoint
from applier.targets.progress import Baseline, ProgressTable

log = logging.getLogger("applier.verify")

TOUCHED_SHARE = 0.25  # an article whose touched keys are over this share of its rows is read whole
AUTO_MIN_ROWS = 20_000  # snapshots smaller than this are read whole in mode auto
UPLOAD_KEYS = 10_000  # keys a bulk statement inserts


def plan(mode: str, reason: str | None, snapshot_rows: int, commands: int | None) -> str | None:
    """Why the whole subscriber is read (``reason``: why the stream cannot be read by its keys),
    or None: its keys are taken and each article decided by them. The same inputs give the same
    answer at the load and at verify (after a resume too)."""
    if mode == "full":
        return "asked for (--verify full)"
    if reason is not None:
        return reason
    if mode == "touched":
        return None
    if snapshot_rows < AUTO_MIN_ROWS:
        return (
            f"the snapshot's {snapshot_rows:,} rows are fewer than {AUTO_MIN_ROWS:,}: reading them costs less"
        )
    if commands is not None and 2 * commands > snapshot_rows:
        return f"the stream's {commands:,} commands may touch most of the snapshot's {snapshot_rows:,} rows"
    return None


def key_events(changes: DataFrame) -> DataFrame:
    """(article, key): every key the stream's commands touch, once: the keys of the oracle's key
    events (``oracle.key_events``), so that every key with an event is read back and every other
    key is in the rest."""
    return (
        changes.selectExpr(
            "article",
            """explode(array(
                IF(op = 'D' OR (op = 'U' AND NOT (key_before <=> key_after)), key_before, NULL),
                IF(op IN ('I', 'U'), key_after, NULL)
            )) AS key""",
        )
        .where("key IS NOT NULL")
        .distinct()
    )


def _create_keys_tables(endpoint: Endpoint, articles: Sequence[Article]) -> None:
    dialect = endpoint.dialect
    conn = endpoint.connect()
    try:
        cur = conn.cursor()
        for a in articles:
            for stmt in dialect.touched_ddl(a):
                cur.execute(stmt)
        conn.commit()
    finally:
        conn.close()


def upload_keys(
    spark: SparkSession,
    endpoint: Endpoint,
    articles: Sequence[Article],
    changes: DataFrame,
    commands: int | None = None,
) -> dict[str, int]:
    """Every key of :func:`key_events` of ``articles`` into its article's keys table (created
    anew), by Spark tasks, one connection each (``commands``: about how many the stream holds,
    which sizes their number); returns the keys per article (0 for none)."""
    _create_keys_tables(endpoint, articles)
    by_name = {a.name: a for a in articles}
    names = {a.name: [c.name for c in a.key_columns] for a in articles}

    def upload(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        dialect = endpoint.dialect
        sql = {n: dialect.touched_insert_sql(a) for n, a in by_name.items()}
        pending: dict[str, list[str]] = {}
        counts: dict[str, int] = {}
        conn = endpoint.connect()
        try:
            cur = conn.cursor()

            def flush(name: str) -> None:
                rows = pending.pop(name, [])
                if rows:
                    cur.execute(sql[name], "[" + ",".join(rows) + "]")

            for b in batches:
                for name, key in zip(
                    b.column("article").to_pylist(), b.column("key").to_pylist(), strict=True
                ):
                    if name not in by_name:
                        continue  # an article this subscriber does not hold
                    obj = dict(zip(names[name], json.loads(key), strict=True))
                    pending.setdefault(name, []).append(
                        json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
                    )
                    counts[name] = counts.get(name, 0) + 1
                    if len(pending[name]) >= UPLOAD_KEYS:
                        flush(name)
            for name in list(pending):
                flush(name)
            conn.commit()
        finally:
            conn.close()
        yield pa.RecordBatch.from_pydict(
            {"article": list(counts), "n": list(counts.values())},
            schema=pa.schema([("article", pa.string()), ("n", pa.int64())]),
        )

    keys = key_events(changes.where(F.col("article").isin(*by_name)))
    out = dict.fromkeys(by_name, 0)
    with without_aqe(spark, rows=None if commands is None else 2 * commands):
        for r in keys.mapInArrow(upload, "article string, n long").collect():
            out[r["article"]] += int(r["n"])
    _analyze(endpoint, articles)
    return out


def _analyze(endpoint: Endpoint, articles: Sequence[Article]) -> None:
    dialect = endpoint.dialect
    conn = endpoint.connect()
    try:
        cur = conn.cursor()
        for a in articles:
            sql = dialect.analyze_sql(dialect.touched_table(a))
            if sql is not None:
                cur.execute(sql)
        conn.commit()
    finally:
        conn.close()


def rest_digests(endpoint: Endpoint, articles: Sequence[Article]) -> dict[str, tuple[int, Decimal] | None]:
    """(rows, digest) of the rest of each article, taken by the subscriber; None where it could
    not take one (said in applier's log; that article is then read whole)."""
    import pyodbc

    dialect = endpoint.dialect
    out: dict[str, tuple[int, Decimal] | None] = {}
    conn = endpoint.connect()
    try:
        cur = conn.cursor()
        for a in articles:
            try:
                rows, digest = cur.execute(dialect.rest_digest_sql(a)).fetchone()
            except pyodbc.Error as e:
                log.info("%s: the subscriber could not digest the rest of the article: %s", a.name, e)
                dialect.rollback(conn)
                out[a.name] = None
                continue
            out[a.name] = (int(rows), Decimal(digest))
        conn.commit()
    finally:
        conn.close()
    return out


def take_baselines(
    spark: SparkSession,
    endpoint: Endpoint,
    articles: Sequence[Article],
    changes: DataFrame,
    mode: str,
    commands: int | None = None,
) -> list[Baseline]:
    """After the snapshot load (:func:`plan` said the keys are worth taking): upload the stream's
    keys, digest the rest of every article; an article whose touched keys are over
    :data:`TOUCHED_SHARE` of its rows (mode auto) keeps no digest (its keys table is dropped) and
    is read whole. What :func:`record` writes with the load's phase. Reading by the keys only
    saves time: where taking them fails, the subscriber is read whole (said in applier's log)."""
    try:
        counts = upload_keys(spark, endpoint, articles, changes, commands)
    except Exception as e:  # noqa: BLE001 - a verify that reads everything is still a verify
        if stop_of(e) is not None:
            raise  # a signal: the run stops
        log.warning("the stream's keys could not be taken (verify reads every row): %s", e)
        with contextlib.suppress(Exception):  # left behind: said above
            _drop_keys_tables(endpoint, articles)
        return []
    rest = rest_digests(endpoint, articles)
    out: list[Baseline] = []
    whole: list[Article] = []
    for a in articles:
        got = rest[a.name]
        k = counts[a.name]
        if got is None:
            whole.append(a)
            continue
        rows, digest = got
        if mode == "auto" and k > TOUCHED_SHARE * (rows + k):
            out.append(Baseline(a.name, k, rows, None))
            whole.append(a)
        else:
            out.append(Baseline(a.name, k, rows, digest))
    if whole:
        _drop_keys_tables(endpoint, whole)
    return out


def record(cur: Any, endpoint: Endpoint, subscription: str, baselines: Sequence[Baseline]) -> None:
    """The subscription's baselines, replacing any earlier run's, on the caller's cursor: commit
    them with the load's phase (a resume then finds them whenever it finds the load done)."""
    ProgressTable(endpoint.dialect).write_baselines(cur, subscription, baselines)


def _drop_keys_tables(endpoint: Endpoint, articles: Sequence[Article]) -> None:
    dialect = endpoint.dialect
    conn = endpoint.connect()
    try:
        cur = conn.cursor()
        for a in articles:
            for stmt in dialect.touched_drop_sql(a):
                cur.execute(stmt)
        conn.commit()
    finally:
        conn.close()


@dataclass(frozen=True)
class Scope:
    """What verify reads of one subscriber: the articles read by their keys (their baselines),
    the others whole and why; ``changed``: articles whose rest differs from its baseline
    (rows then, rows now), read whole to name the difference."""

    requested: str
    keyed: bool = False  # the stream's keys were taken (keys tables and baselines may be held)
    by_keys: Mapping[str, Baseline] = field(default_factory=dict)
    whole: Mapping[str, str] = field(default_factory=dict)  # article -> why it is read whole
    rest_now: Mapping[str, int] = field(default_factory=dict)  # rows outside the keys now
    changed: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def touched(self) -> frozenset[str]:
        """The articles read by their keys."""
        return frozenset(self.by_keys)

    def cut_snapshot(self, snapshot: DataFrame) -> DataFrame:
        """The snapshot without the rows of the articles read by their keys: there the oracle
        holds only keys with events, the rest being checked by its digest."""
        if not self.by_keys:
            return snapshot
        return snapshot.where(~F.col("article").isin(*sorted(self.by_keys)))


def scope_of(
    endpoint: Endpoint, subscription: str, articles: Sequence[Article], mode: str, whole_why: str | None
) -> Scope:
    """How verify reads the subscriber: ``whole_why`` (from :func:`plan`) reads it all; else each
    article with a digest of its rest in the subscriber is read by its keys if that digest is
    taken again equal (the others whole, each with its reason)."""
    import pyodbc

    if whole_why is not None:
        return Scope(mode, whole={a.name: whole_why for a in articles})
    conn = endpoint.connect()
    try:
        held = ProgressTable(endpoint.dialect).read_baselines(conn.cursor(), subscription)
        conn.commit()
    except pyodbc.Error as e:  # no baselines table: a run an older applier loaded, resumed
        log.info("%s: no baselines in the subscriber: %s", subscription, e)
        held = {}
    finally:
        conn.close()
    whole: dict[str, str] = {}
    candidates: list[Article] = []
    for a in articles:
        b = held.get(a.name)
        if b is None:
            whole[a.name] = "no digest of its rows outside the stream's keys in the subscriber"
        elif b.rest_digest is None:
            whole[a.name] = (
                f"the stream touches {b.touched_keys:,} of its keys, over a quarter of its "
                f"{b.touched_keys + b.rest_rows:,} rows and keys"
            )
        else:
            candidates.append(a)
    now = rest_digests(endpoint, candidates) if candidates else {}
    by_keys: dict[str, Baseline] = {}
    rest_now: dict[str, int] = {}
    changed: dict[str, tuple[int, int]] = {}
    for a in candidates:
        b = held[a.name]
        got = now[a.name]
        if got is None:
            whole[a.name] = "the subscriber could not digest its rows outside the stream's keys"
        elif got != (b.rest_rows, b.rest_digest):
            changed[a.name] = (b.rest_rows, got[0])
            whole[a.name] = "rows outside the stream's keys changed, appeared or went"
        else:
            by_keys[a.name] = b
            rest_now[a.name] = got[0]
    return Scope(mode, True, by_keys, whole, rest_now, changed)


def finish(check: Check, scope: Scope) -> Check:
    """The check of the rows read, with the rest of the articles read by their keys counted in
    (expected and found: the rows outside the keys, equal by their digest), which verify ran, and
    a diverged verdict naming every article whose rest changed."""
    by_article = {k: dict(v) for k, v in check.by_article.items()}
    kinds = ("missing", "extra", "different")
    read = {a: int(c.get("found", 0)) for a, c in by_article.items()}
    for a, rows in scope.rest_now.items():
        if not rows:
            continue  # an article with no row on either side is not listed (Check.by_article)
        counts = by_article.setdefault(a, {"expected": 0, "found": 0, **dict.fromkeys(kinds, 0)})
        counts["expected"] = counts.get("expected", 0) + rows
        counts["found"] = counts.get("found", 0) + rows
    articles: dict[str, dict[str, Any]] = {}
    for a, b in sorted(scope.by_keys.items()):
        articles[a] = {"read": "keys", "touched_keys": b.touched_keys, "rows_read": read.get(a, 0)}
        articles[a]["rest_rows"] = scope.rest_now[a]
    for a, why in sorted(scope.whole.items()):
        articles[a] = {"read": "whole", "why": why, "rows_read": read.get(a, 0)}
        if a in scope.changed:
            before, after = scope.changed[a]
            articles[a].update(rest="changed", rest_rows_before=before, rest_rows=after)
    mode = "keys" if not scope.whole else "whole" if not scope.by_keys else "mixed"
    verify = {
        "mode": mode,
        "requested": scope.requested,
        "rows_read": sum(read.values()),
        "articles": articles,
    }
    out = dataclasses.replace(
        check,
        by_article=dict(sorted(by_article.items())),
        rows_expected=check.rows_expected + sum(scope.rest_now.values()),
        rows_found=check.rows_found + sum(scope.rest_now.values()),
        verify=verify,
    )
    if scope.changed and check.verdict is not Verdict.UNKNOWN:
        reason = "; ".join(
            f"{a}: rows outside the stream's keys changed, appeared or went ({b:,} rows -> {n:,})"
            for a, (b, n) in sorted(scope.changed.items())
        )
        out = dataclasses.replace(out, verdict=Verdict.DIVERGED, reason=reason)
    return out


def release(endpoint: Endpoint, subscription: str, articles: Sequence[Article], scope: Scope) -> None:
    """Where the stream's keys were taken, drop the keys tables and forget the subscription's
    baselines: a verified subscriber holds nothing of them (and a database reused by a warm
    session holds only its tables and applier's own)."""
    if not scope.keyed:
        return
    try:
        conn = endpoint.connect()
        try:
            ProgressTable(endpoint.dialect).clear_baselines(conn.cursor(), subscription)
            conn.commit()
        finally:
            conn.close()
        _drop_keys_tables(endpoint, articles)
    except Exception as e:  # noqa: BLE001 - the check is made: what is left behind is said, not fatal
        log.warning("%s: could not drop verify's keys tables and baselines: %s", subscription, e)
