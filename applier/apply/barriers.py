"""Barrier events applied on one connection, between segments of a subscription's stream.

Every stream has drained and committed before a barrier (the apply model's stage has ended).
Each barrier commits its watermark (:class:`~applier.targets.progress.BarrierMark`: a progress
row under ``<subscription>/barriers``) in the transaction of its effect, so that a resumed run
skips exactly the barriers that committed:

- schema change (seed 001): drop the article's default procedures, ALTER TABLE, regenerate the
  procedures for the new shape, and the watermark, in one transaction;
- statement (seed 004, rs_sqldml): executed in its own transaction; committed with its
  watermark only when its row count at the subscriber equals rs_rowcount, else rolled back so
  that its rows are applied instead, and that decision recorded (its effect was none: a
  resume would decide it again on the same rows, but the next segment may have begun);
- applied procedure delivered as the procedure (seed 000): called by its name with its
  parameter values bound, in its own transaction with its watermark.

A schema change is transactional DDL on every dialect applier has, so its watermark needs no
catalog check (a DDL statement that could not run in a transaction would be made idempotent
instead, the catalog read before and after; none of these is such a statement):

- PostgreSQL: ALTER TABLE, CREATE/DROP PROCEDURE run in a transaction and roll back with it
  (only a few commands refuse a transaction block: CREATE DATABASE, CREATE INDEX CONCURRENTLY,
  VACUUM...; https://wiki.postgresql.org/wiki/Transactional_DDL_in_PostgreSQL:_A_Competitive_Analysis).
- SQL Server: "You can use all Transact-SQL statements in an explicit transaction, except"
  ALTER/CREATE/DROP DATABASE, the full-text catalog and index statements, BACKUP, RESTORE,
  RECONFIGURE (and UPDATE STATISTICS commits on its own); ALTER TABLE ADD / DROP COLUMN / ALTER
  COLUMN and DROP / CREATE PROCEDURE are not among them
  (https://learn.microsoft.com/previous-versions/sql/sql-server-2008-r2/ms191544(v=sql.105)).
  The connection runs with autocommit off (implicit transactions): each statement is its own
  batch, as CREATE PROCEDURE needs, in the one transaction.
- Babelfish: PostgreSQL underneath; measured (4.3.0): each of the four kinds of statement,
  run with autocommit off and rolled back, leaves sys.procedures and information_schema.columns
  as they were (``tests/tsql/test_faults.py`` kills a run between the ALTER and its commit).
"""

from __future__ import annotations

from typing import Any

from applier import failpoints
from applier.articles import Article
from applier.errors import TargetError
from applier.records.events import AppliedProcedure, SqlStatement
from applier.targets.endpoint import Endpoint
from applier.targets.progress import APPLIED_HERE, AS_ROWS, BarrierMark, ProgressTable

BARRIER_LOCK_TIMEOUT_MS = 30000


def _message(e: Exception) -> str:
    return str(e.args[1] if len(e.args) > 1 else e)


def schema_change_sql(target: Endpoint, old: Article, new: Article) -> list[str]:
    """Drop the default procedures, alter the table, create the procedures for ``new``; nothing
    when the change is outside this subscriber's column list."""
    d = target.dialect
    if [(c.name, c.type) for c in old.replicated] == [(c.name, c.type) for c in new.replicated]:
        return []
    out = [d.drop_procedure_sql(old, op) for op in "IUD" if d.procedure_sql(old, op) is not None]
    out += d.alter_sql(old, new)
    for op in "IUD":
        text = d.procedure_sql(new, op)
        if text is not None:
            out += d.split_script(text)
    return out


def _commit(conn: Any) -> None:
    """Commit a barrier's transaction, passing the fail points either side of it."""
    failpoints.reach("barrier.apply")  # its effect and watermark sent, not committed
    conn.commit()
    failpoints.reach("barrier.applied")  # committed; the next segment not begun


def apply_schema_change(target: Endpoint, statements: list[str], mark: BarrierMark) -> None:
    """Run the statements of a schema change and its watermark in one transaction (transactional
    DDL on every dialect: the module's docstring)."""
    import pyodbc

    conn = target.connect(BARRIER_LOCK_TIMEOUT_MS)
    try:
        cur = conn.cursor()
        for s in statements:
            try:
                cur.execute(s)
            except pyodbc.Error as e:
                target.dialect.rollback(conn)
                raise TargetError(f"schema change failed: {_message(e)}") from None
        cur.execute(ProgressTable(target.dialect).upsert_sql, *mark.params(APPLIED_HERE))
        _commit(conn)
    finally:
        conn.close()


def apply_statement(
    target: Endpoint, article: Article, stmt: SqlStatement, mark: BarrierMark
) -> tuple[bool, int | None, str]:
    """Execute the statement in its own transaction; commit it with its watermark only when its
    row count at the subscriber equals rs_rowcount, else roll it back and record that its rows
    are applied instead. Returns (committed, subscriber row count, why)."""
    import pyodbc

    d = target.dialect
    upsert = ProgressTable(d).upsert_sql
    conn = target.connect(BARRIER_LOCK_TIMEOUT_MS)
    try:
        cur = conn.cursor()
        n: int | None = None
        try:
            cur.execute(d.rs_sqldml_sql(article, stmt))
            n = int(cur.rowcount)
        except pyodbc.Error as e:
            why = f"the statement failed at the subscriber: {d.classify(e).message[:300]}"
        else:
            if n == stmt.rowcount:
                cur.execute(upsert, *mark.params(APPLIED_HERE))
                _commit(conn)
                return True, n, f"applied as a statement ({n} rows)"
            why = f"subscriber row count {n} differs from rs_rowcount {stmt.rowcount}: rolled back"
        d.rollback(conn)
        cur = conn.cursor()
        cur.execute(upsert, *mark.params(AS_ROWS))
        _commit(conn)
        return False, n, why
    finally:
        conn.close()


def call_procedure(target: Endpoint, proc: AppliedProcedure, mark: BarrierMark) -> None:
    """Call the subscriber's procedure with the publisher's parameter values (bound), and write
    its watermark, in one transaction."""
    import pyodbc

    d = target.dialect
    conn = target.connect(BARRIER_LOCK_TIMEOUT_MS)
    try:
        cur = conn.cursor()
        try:
            cur.execute(d.call_procedure_sql(proc.procedure, len(proc.params)), *proc.params)
            cur.execute(ProgressTable(d).upsert_sql, *mark.params(APPLIED_HERE))
        except pyodbc.Error as e:
            d.rollback(conn)
            raise TargetError(
                f"applied procedure {proc.procedure} failed: {d.classify(e).message[:300]}"
            ) from None
        _commit(conn)
    finally:
        conn.close()
