"""A subscriber where an earlier run left a procedure of the same name with other parameters (its
version after a schema change: PostgreSQL keeps procedures by signature) is installed again
with one procedure of that name, so the stream's own schema change can drop it by name."""

from __future__ import annotations

import pyodbc
import pytest

from applier.apply.install import install
from applier.config import demo_config

pytestmark = pytest.mark.integration


def _signatures(endpoint, schema: str | None, name: str) -> list[str]:  # type: ignore[no-untyped-def]
    conn = pyodbc.connect(endpoint.connection_string, autocommit=True)
    try:
        got = conn.execute(
            "SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = COALESCE(CAST(? AS text), current_schema()) AND p.proname = ?",
            schema,
            name,
        ).fetchall()
    finally:
        conn.close()
    return sorted(r[0] for r in got)


def test_an_earlier_run_s_procedure_with_other_parameters_is_dropped(pg) -> None:  # type: ignore[no-untyped-def]
    endpoint = pg.subscriber("overloads")
    articles = demo_config().articles
    a = articles[0]
    d = endpoint.dialect
    schema, name = d.proc_name(a, "I")  # no schema: the session's, as a run creates it
    install(endpoint, articles, "overloads")  # an earlier run
    conn = pyodbc.connect(endpoint.connection_string, autocommit=True)
    try:
        # as that run left it after a schema change: the insert procedure with one parameter more
        conn.execute(
            f"CREATE PROCEDURE {d.proc_ref(a, 'I')}(a int, b text, c numeric, d bit, e timestamp, f uuid, "
            "added_later int) LANGUAGE plpgsql AS $$ BEGIN END $$"
        )
    finally:
        conn.close()
    assert len(_signatures(endpoint, schema, name)) == 2
    install(endpoint, articles, "overloads")
    got = _signatures(endpoint, schema, name)
    assert len(got) == 1 and got[0].count(",") == len(a.columns) - 1, got  # the article's parameters
    # and the schema change's own statement, by name alone, now works
    conn = pyodbc.connect(endpoint.connection_string, autocommit=True)
    try:
        conn.execute(d.drop_procedure_sql(a, "I"))
    finally:
        conn.close()
    assert _signatures(endpoint, schema, name) == []
