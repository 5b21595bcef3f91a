"""Prepare the subscriber: tables, procedures, progress table, initial snapshot, constraints.

Runs before apply. Table and procedure DDL goes over one driver-side connection (it is
small); the snapshot is loaded by Spark tasks, each with its own connection, in multi-row
INSERTs with bound parameters, so the driver never holds the rows. The subscriber's unique
and foreign keys come last (a snapshot may arrive in any order).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame

from applier import failpoints
from applier.articles import Article
from applier.dialects.base import Dialect
from applier.dialects.schema import drop_order
from applier.errors import ApplierError, TargetError
from applier.targets.endpoint import Endpoint
from applier.targets.progress import ProgressTable


def _exec(cur: Any, sql: str, what: str) -> None:
    import pyodbc

    try:
        cur.execute(sql)
    except pyodbc.Error as e:
        raise TargetError(f"{what} failed: {e.args[1] if len(e.args) > 1 else e}") from None


def install(
    target: Endpoint,
    articles: Sequence[Article],
    subscription: str,
    *,
    recreate_tables: bool = True,
    custom_sql: Sequence[Path] = (),
    set_apply: bool = False,
) -> list[str]:
    """Create schemas, tables, default procedures and the progress table; run custom SQL files.
    ``set_apply``: also the set-based procedures of the eligible operations. A target marked
    ``reuse_tables`` (the same articles, procedures and custom SQL installed by an earlier run,
    see :func:`reusable`) has its tables emptied instead, and nothing installed again.

    Returns the names of the procedures installed, in order.
    """
    dialect = target.dialect
    progress = ProgressTable(dialect)
    conn = target.connect()
    installed: list[str] = []
    try:
        cur = conn.cursor()
        for stmt in progress.ddl():
            _exec(cur, stmt, "creating the progress table")
        progress.clear(cur, subscription)
        if target.reuse_tables:
            for stmt in dialect.clear_tables_sql(articles):
                _exec(cur, stmt, "emptying the subscriber's tables")
            conn.commit()
            return installed
        for schema in sorted({a.schema for a in articles}):
            _exec(cur, dialect.create_schema_sql(schema), f"creating schema {schema}")
        # Children before parents: SQL Server cannot drop a table a FOREIGN KEY references
        # (error 3726); the dialect's drop script also drops such keys of other tables first.
        for a in drop_order(articles) if recreate_tables else ():
            for stmt in dialect.drop_table_script(a):
                _exec(cur, stmt, f"dropping {a.name}")
        for a in articles:
            if recreate_tables:
                _exec(cur, dialect.create_table_sql(a), f"creating table {a.name}")
            for op in "IUD":
                sql = dialect.procedure_sql(a, op)
                if sql is None:
                    continue
                for stmt in dialect.split_script(sql):
                    _exec(cur, stmt, f"installing {dialect.proc_ref(a, op)}")
                installed.append(dialect.proc_ref(a, op))
            for op in "IUD" if set_apply else "":
                sql = dialect.set_procedure_sql(a, op)
                if sql is None:
                    continue
                ref = dialect.qualified(*dialect.set_proc_name(a, op))
                for stmt in dialect.split_script(sql):
                    _exec(cur, stmt, f"installing {ref}")
                installed.append(ref)
        failpoints.reach("install.tables")
        for path in custom_sql:
            try:
                text = Path(path).read_text(encoding="utf-8")
            except OSError as e:
                raise ApplierError(f"{path}: cannot read custom procedure file: {e.strerror}") from None
            for stmt in dialect.split_script(text):
                _exec(cur, stmt, f"running {path}")
        _check_custom_procedures(cur, dialect, articles, custom_sql)
        failpoints.reach("install.procedures")
        conn.commit()
    finally:
        conn.close()
    return installed


def install_key(articles: Sequence[Article], custom_sql: Sequence[Path], set_apply: bool) -> str | None:
    """What :func:`install` puts in a subscriber, as a digest: a database installed with the
    same key holds the same tables, procedures and custom SQL's objects (None: a custom SQL
    file cannot be read; the run says so)."""
    from applier.config import article_to_dict

    h = hashlib.sha256(
        json.dumps([article_to_dict(a) for a in articles], sort_keys=True, default=str).encode()
    )
    h.update(b"set" if set_apply else b"rows")
    for path in custom_sql:
        try:
            h.update(b"\0" + Path(path).read_bytes())
        except OSError:
            return None
    return h.hexdigest()


def reusable(target: Endpoint, articles: Sequence[Article]) -> bool:
    """May a later run of the same :func:`install_key` empty this subscriber's tables instead of
    installing them again? Only where the tables hold all its state: no table or sequence
    beyond the articles' and applier's own (an audit table of a custom trigger would keep its
    rows), and no constraint added after the snapshot load (a load into keyed tables may
    fail on its order)."""
    dialect = target.dialect
    if dialect.constraint_sql(articles):
        return False
    # applier's schema is not skipped whole: on PostgreSQL it is the user's "$user" schema,
    # where custom SQL's unqualified tables land
    own = {(a.schema.lower(), a.table.lower()) for a in articles}
    own |= {(dialect.PROGRESS_SCHEMA, t) for t in dialect.OWN_TABLES}
    skip = ("information_schema", "pg_catalog", "sys")
    marks = ", ".join("?" for _ in skip)
    conn = target.connect()
    try:
        cur = conn.cursor()
        tables = cur.execute(
            "SELECT table_schema, table_name FROM information_schema.tables "
            f"WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ({marks})",
            *skip,
        ).fetchall()
        sequences = cur.execute(
            f"SELECT COUNT(*) FROM information_schema.sequences WHERE sequence_schema NOT IN ({marks})", *skip
        ).fetchone()[0]
        conn.commit()
    except Exception:  # noqa: BLE001 - a catalog the engine lacks: install again, as always
        return False
    finally:
        conn.close()
    return not sequences and {(s.lower(), t.lower()) for s, t in tables} == own


def present_tables(target: Endpoint, articles: Sequence[Article]) -> list[str]:
    """The articles (their names) whose tables the subscriber has, compared as :func:`reusable`
    compares them (case-insensitively: T-SQL engines fold names)."""
    conn = target.connect()
    try:
        tables = (
            conn.cursor()
            .execute(
                "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'"
            )
            .fetchall()
        )
        conn.commit()
    finally:
        conn.close()
    have = {(s.lower(), t.lower()) for s, t in tables}
    return [a.name for a in articles if (a.schema.lower(), a.table.lower()) in have]


def _check_custom_procedures(
    cur: Any, dialect: Dialect, articles: Sequence[Article], custom_sql: Sequence[Path]
) -> None:
    """Every custom procedure an article names must exist once the custom SQL has run: say so
    here, before a run fails on its first call."""
    for a in articles:
        for op in "IUD":
            d = a.delivery(op)
            if not d.procedure:
                continue
            schema, name = dialect.proc_name(a, op)
            found = cur.execute(dialect.procedure_exists_sql(), schema, name).fetchone()[0]
            if not found:
                files = ", ".join(str(p) for p in custom_sql) or "none given"
                raise ApplierError(
                    f"{a.name}: custom {d.syntax.value} procedure {d.procedure} is not installed at the "
                    f"subscriber (custom SQL files: {files}); pass the file that creates it with --custom-sql"
                )


def _insert_many_sql(dialect: Dialect, article: Article, nrows: int) -> str:
    cols = ", ".join(dialect.quote(c) for c in article.column_names)
    one = "(" + ", ".join(dialect.param_marker(c.type) for c in article.replicated) + ")"
    return f"INSERT INTO {dialect.table(article)} ({cols}) VALUES " + ", ".join([one] * nrows)


BULK_LOAD_ROWS = 10000  # snapshot rows per statement where the dialect loads JSON


LOADER_ROWS = (
    20_000  # snapshot rows below which another loader (a task, a connection) costs more than it saves
)


def load_snapshot(
    snapshot: DataFrame,
    target: Endpoint,
    articles: Sequence[Article],
    partitions: int = 4,
    rows: int | None = None,
) -> int:
    """Insert the snapshot rows (article, key, image) in up to ``partitions`` parallel tasks
    (``rows``: about how many there are, where known); returns the row count."""
    by_name = {a.name: a for a in articles}

    def load(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        dialect = target.dialect
        conn = target.connect()
        cur = conn.cursor()
        pending: dict[str, list[Any]] = {}
        bulk = {name: dialect.bulk_insert_sql(a) for name, a in by_name.items()}
        total = 0

        def flush(name: str) -> None:
            rows = pending.pop(name, [])
            if not rows:
                return
            a = by_name[name]
            sql = bulk[name]
            if sql is not None:  # the images as they are, one JSON text
                cur.execute(sql, "[" + ",".join(rows) + "]")
            else:
                params = [v for r in rows for v in r]
                cur.execute(_insert_many_sql(dialect, a, len(rows)), params)
            failpoints.reach("load.batch")

        try:
            for b in batches:
                for name, image in zip(
                    b.column("article").to_pylist(), b.column("image").to_pylist(), strict=True
                ):
                    a = by_name[name]
                    if bulk[name] is not None:
                        pending.setdefault(name, []).append(image)
                        limit = BULK_LOAD_ROWS
                    else:
                        img = json.loads(image)
                        pending.setdefault(name, []).append(
                            tuple(
                                dialect.to_param(c.type, v) for c in a.replicated for v in (img.get(c.name),)
                            )
                        )
                        limit = min(dialect.MAX_PARAMS_PER_BATCH // len(a.replicated), 1000)
                    total += 1
                    if len(pending[name]) >= limit:
                        flush(name)
            for name in list(pending):
                flush(name)
            conn.commit()
        except Exception as e:
            dialect.rollback(conn)
            raise TargetError(f"loading the snapshot into {target.redacted} failed: {e}") from None
        finally:
            conn.close()
        yield pa.RecordBatch.from_pydict({"n": pa.array([total], pa.int64())})

    # A snapshot in more partitions than loaders is merged (coalesce: no shuffle of the images);
    # one in fewer is spread out (a shuffle) only when it is large enough for the loaders to
    # share (``rows``, where known; else it is assumed to be): a small one loads in the tasks it
    # has, each a connection and a task less. The count is the JVM's (a Python RDD of the
    # DataFrame costs a conversion: ~0.35 s on a new JVM).
    have = int(snapshot._jdf.rdd().getNumPartitions())  # noqa: SLF001 - no Python RDD made
    want = partitions if rows is None else max(1, min(partitions, -(-rows // LOADER_ROWS)))
    spread = (
        snapshot.coalesce(want) if have > want else snapshot.repartition(want) if have < want else snapshot
    )
    # one row per task: summed here, not by a shuffle (two more Spark jobs under AQE)
    return sum(int(r["n"]) for r in spread.mapInArrow(load, "n long").collect())


def add_constraints(target: Endpoint, articles: Sequence[Article]) -> int:
    """The subscriber's unique and foreign keys (after the snapshot load). Returns the count."""
    stmts = target.dialect.constraint_sql(articles)
    if not stmts:
        return 0
    conn = target.connect()
    try:
        cur = conn.cursor()
        for s in stmts:
            _exec(cur, s, "adding the subscriber's constraints")
        conn.commit()
    finally:
        conn.close()
    return len(stmts)
