"""Barrier events applied on one connection, between segments of a subscription's stream.

Every stream has drained and committed before a barrier (the apply model's stage has ended):

- schema change (seed 001): drop the article's default procedures, ALTER TABLE, regenerate the
  procedures for the new shape;
- statement (seed 004, rs_sqldml): executed in its own transaction; committed (with a
  progress row) only when its row count at the subscriber equals rs_rowcount, else rolled
  back so that its rows are applied instead;
- applied procedure delivered as the procedure (seed 000): called by its name with its
  parameter values bound, in its own transaction with a progress row.
"""

from __future__ import annotations

from applier.articles import Article
from applier.errors import TargetError
from applier.records.events import AppliedProcedure, SqlStatement
from applier.targets.endpoint import Endpoint
from applier.targets.progress import ProgressTable

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


def apply_schema_change(target: Endpoint, statements: list[str]) -> None:
    """Run the statements of a schema change in one transaction."""
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
        conn.commit()
    finally:
        conn.close()


def apply_statement(
    target: Endpoint, article: Article, stmt: SqlStatement, progress: tuple[str, int, int, int]
) -> tuple[bool, int | None, str]:
    """Execute the statement in its own transaction; commit only when its row count at the
    subscriber equals rs_rowcount. Returns (committed, subscriber row count, why)."""
    import pyodbc

    d = target.dialect
    conn = target.connect(BARRIER_LOCK_TIMEOUT_MS)
    try:
        cur = conn.cursor()
        try:
            cur.execute(d.rs_sqldml_sql(article, stmt))
            n = int(cur.rowcount)
        except pyodbc.Error as e:
            d.rollback(conn)
            return False, None, f"the statement failed at the subscriber: {d.classify(e).message[:300]}"
        if n != stmt.rowcount:
            d.rollback(conn)
            return False, n, f"subscriber row count {n} differs from rs_rowcount {stmt.rowcount}: rolled back"
        cur.execute(ProgressTable(d).upsert_sql, *progress)
        conn.commit()
        return True, n, f"applied as a statement ({n} rows)"
    finally:
        conn.close()


def call_procedure(target: Endpoint, proc: AppliedProcedure, progress: tuple[str, int, int, int]) -> None:
    """Call the subscriber's procedure with the publisher's parameter values (bound)."""
    import pyodbc

    d = target.dialect
    conn = target.connect(BARRIER_LOCK_TIMEOUT_MS)
    try:
        cur = conn.cursor()
        try:
            cur.execute(d.call_procedure_sql(proc.procedure, len(proc.params)), *proc.params)
            cur.execute(ProgressTable(d).upsert_sql, *progress)
        except pyodbc.Error as e:
            d.rollback(conn)
            raise TargetError(
                f"applied procedure {proc.procedure} failed: {d.classify(e).message[:300]}"
            ) from None
        conn.commit()
    finally:
        conn.close()
