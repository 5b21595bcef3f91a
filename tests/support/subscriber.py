"""Queries on a subscriber (an Endpoint: the embedded PostgreSQL, Babelfish or a container),
through ODBC as applier reaches it."""

from __future__ import annotations

from typing import Any


def rows(target, sql: str, *params: Any) -> list[tuple[Any, ...]]:  # type: ignore[no-untyped-def]
    """The rows of ``sql`` (``params`` bound), each as a tuple."""
    import pyodbc

    conn = pyodbc.connect(target.connection_string, autocommit=True)
    try:
        return [tuple(r) for r in conn.cursor().execute(sql, *params).fetchall()]
    finally:
        conn.close()


def table_ref(target, table: str, schema: str = "dbo") -> str:  # type: ignore[no-untyped-def]
    """schema.table quoted by the target's own dialect."""
    return target.dialect.qualified(schema, table)


def table_exists(target, schema: str, table: str) -> bool:  # type: ignore[no-untyped-def]
    return bool(
        rows(
            target,
            "SELECT 1 FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
            schema,
            table,
        )
    )
