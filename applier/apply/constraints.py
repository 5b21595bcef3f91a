"""Constraints a subscriber adds besides the primary key: unique keys and foreign keys.

They are what turns some reorderings into duplicate-key (2601/23505) and foreign-key
(547/23503) conflicts. Same syntax in T-SQL and PostgreSQL; names through quote().
"""

from __future__ import annotations

from collections.abc import Sequence

from applier.apply.connection import connect
from applier.articles import Article
from applier.dialects.base import Dialect
from applier.targets.odbc import Target


def constraint_sql(dialect: Dialect, articles: Sequence[Article]) -> list[str]:
    by_name = {a.name: a for a in articles}
    out = []
    for a in articles:
        for i, cols in enumerate(a.unique):
            name = dialect.quote(f"uq_{a.table}_{i}")
            out.append(
                f"ALTER TABLE {dialect.table(a)} ADD CONSTRAINT {name} "
                f"UNIQUE ({', '.join(dialect.quote(c) for c in cols)})"
            )
        for i, (cols, parent, pcols) in enumerate(a.references):
            p = by_name.get(parent)
            if p is None:
                continue  # the parent is not published: nothing to reference at this subscriber
            name = dialect.quote(f"fk_{a.table}_{i}")
            out.append(
                f"ALTER TABLE {dialect.table(a)} ADD CONSTRAINT {name} "
                f"FOREIGN KEY ({', '.join(dialect.quote(c) for c in cols)}) "
                f"REFERENCES {dialect.table(p)} ({', '.join(dialect.quote(c) for c in pcols)})"
            )
    return out


def add_constraints(target: Target, articles: Sequence[Article]) -> int:
    """Run after the snapshot load (a snapshot may arrive in any order). Returns the count."""
    stmts = constraint_sql(target.dialect, articles)
    if not stmts:
        return 0
    conn = connect(target.connection_string, target.dialect, lock_timeout_ms=30000)
    try:
        cur = conn.cursor()
        for s in stmts:
            cur.execute(s)
        conn.commit()
    finally:
        conn.close()
    return len(stmts)
