"""Schema changes and SQL statements at the subscriber, as functions taking a Dialect.

ALTER TABLE for the three schema changes of seed 001, the statement dropping a procedure
before it is regenerated for a new column shape, and the text of an rs_sqldml statement
(seed 004). Identifiers go through the dialect's quote(); the rs_sqldml clauses are SQL
text written by the publisher and are executed as such (they are the statement to
replicate: applier does not build them from values).
"""

from __future__ import annotations

from applier.articles import Article, Column
from applier.dialects.base import Dialect
from applier.sources.events import SqlStatement


def _is(d: Dialect, name: str) -> bool:
    return d.name == name


def add_column_sql(d: Dialect, article: Article, col: Column) -> str:
    # https://www.postgresql.org/docs/current/sql-altertable.html ; T-SQL ALTER TABLE ... ADD
    # (https://learn.microsoft.com/sql/t-sql/statements/alter-table-transact-sql) has no COLUMN.
    if _is(d, "postgres"):
        return f"ALTER TABLE {d.table(article)} ADD COLUMN {d.quote(col.name)} {d.type_sql(col.type)} NULL"
    if _is(d, "tsql"):
        return f"ALTER TABLE {d.table(article)} ADD {d.quote(col.name)} {d.type_sql(col.type)} NULL"
    raise d.unsupported("adding a column")


def drop_column_sql(d: Dialect, article: Article, name: str) -> str:
    if _is(d, "postgres") or _is(d, "tsql"):
        return f"ALTER TABLE {d.table(article)} DROP COLUMN {d.quote(name)}"
    raise d.unsupported("dropping a column")


def alter_type_sql(d: Dialect, article: Article, col: Column) -> str:
    """Change a column's type; the stored values are converted by the subscriber's cast."""
    q, t = d.quote(col.name), d.type_sql(col.type)
    if _is(d, "postgres"):
        return f"ALTER TABLE {d.table(article)} ALTER COLUMN {q} TYPE {t} USING {q}::{t}"
    if _is(d, "tsql"):
        null = "NULL" if col.nullable and col.name not in article.key else "NOT NULL"
        return f"ALTER TABLE {d.table(article)} ALTER COLUMN {q} {t} {null}"
    raise d.unsupported("changing a column's type")


def alter_sql(d: Dialect, old: Article, new: Article) -> list[str]:
    """The statements that take the subscriber's table from shape ``old`` to ``new``."""
    before = {c.name: c for c in old.replicated}
    after = {c.name: c for c in new.replicated}
    out = [drop_column_sql(d, old, n) for n in before if n not in after]
    out += [alter_type_sql(d, new, c) for n, c in after.items() if n in before and before[n].type != c.type]
    out += [add_column_sql(d, new, c) for n, c in after.items() if n not in before]
    return out


def drop_procedure_sql(d: Dialect, article: Article, op: str) -> str:
    """Drop the default procedure of op (its parameter list changes with the columns).

    PostgreSQL resolves procedures by signature, so CREATE OR REPLACE with new parameters
    would add an overload instead of replacing; the name alone is enough while it is unique.
    """
    if _is(d, "postgres") or _is(d, "tsql"):
        return f"DROP PROCEDURE IF EXISTS {d.proc_ref(article, op)}"
    raise d.unsupported("dropping a procedure")


def statement_sql(d: Dialect, article: Article, stmt: SqlStatement) -> str:
    """rs_sqldml as one statement against the subscriber's table.

    The clauses are the publisher's SQL text (seed 004: rs_set, rs_where, rs_select,
    rs_from, rs_insert_column) and are executed as such; only the table name is quoted here.
    """
    table = d.table(article)
    where = f" WHERE {stmt.where}" if stmt.where else ""
    if stmt.operator == "U":
        return f"UPDATE {table} SET {stmt.set}{where}"
    if stmt.operator == "D":
        return f"DELETE FROM {table}{where}"
    src = f" FROM {stmt.from_}" if stmt.from_ else ""
    if stmt.operator == "I":
        cols = f" ({stmt.insert_column})" if stmt.insert_column else ""
        return f"INSERT INTO {table}{cols} SELECT {stmt.select}{src}{where}"
    if stmt.operator == "S":
        return f"SELECT {stmt.select} INTO {table}{src}{where}"
    raise d.unsupported(f"rs_sqldml operator {stmt.operator!r}")


def procedure_call_sql(d: Dialect, name: str, n_params: int) -> str:
    """Call an applied procedure by its replicated name (``schema.proc`` or ``proc``) with
    ``n_params`` bound parameters."""
    schema, _, proc = name.rpartition(".")
    ref = d.qualified(schema or None, proc)
    marks = ", ".join("?" for _ in range(n_params))
    if _is(d, "postgres"):
        return f"CALL {ref}({marks})"
    if _is(d, "tsql"):
        return f"EXEC {ref} {marks}".rstrip()
    raise d.unsupported("calling an applied procedure")
