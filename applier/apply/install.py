"""Prepare the subscriber: tables, procedures, progress table, constraints.

Runs before apply. Table and procedure DDL goes over one driver-side connection (it is
small). The initial snapshot is loaded between the two (:mod:`applier.apply.snapshot`): the
subscriber's unique and foreign keys come after it (a snapshot may arrive in any order).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

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
        progress.clear_ranges(cur, subscription)  # the tables are emptied or created again
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
                _drop_overloads(cur, dialect, *dialect.proc_name(a, op))
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


def _drop_overloads(cur: Any, dialect: Dialect, schema: str | None, name: str) -> None:
    """Drop every procedure named ``name`` before it is created again (PostgreSQL: an earlier
    run's, created with other parameters after a schema change, would stay beside the new one
    as an overload, and the next schema change's ``DROP PROCEDURE`` would fail as ambiguous)."""
    sql = dialect.overloads_sql()
    if sql is None:
        return
    cur.execute(sql, schema, name)
    for (signature,) in cur.fetchall():  # the catalog's own quoted text: name(types)
        _exec(cur, f"DROP PROCEDURE {signature}", f"dropping {signature}")


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


def add_constraints(
    target: Endpoint, articles: Sequence[Article], record: Callable[[Any], None] | None = None
) -> int:
    """The subscriber's unique and foreign keys (after the snapshot load). Returns the count.
    ``record``: what else commits with them, given the cursor (the run's phase: a resume after
    the keys were added finds that phase, and does not add them again)."""
    stmts = target.dialect.constraint_sql(articles)
    if not stmts and record is None:
        return 0
    conn = target.connect()
    try:
        cur = conn.cursor()
        for s in stmts:
            _exec(cur, s, "adding the subscriber's constraints")
        if record is not None:
            record(cur)
        conn.commit()
    finally:
        conn.close()
    return len(stmts)
