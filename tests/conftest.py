"""Shared fixtures: one local Spark and one embedded PostgreSQL per test session.

Neither starts at import time; integration tests ask for them by name.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    from applier.sparkenv import spark_session

    s = spark_session(8, app="applier-tests")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def pg() -> Iterator[object]:
    from applier.targets.embedded import EmbeddedPostgres

    server = EmbeddedPostgres().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def target(pg):  # type: ignore[no-untyped-def]
    """The embedded PostgreSQL as applier reaches it (ODBC, with applier's options)."""
    from applier.targets.odbc import preflight

    return preflight(pg.odbc_connection_string(), "embedded PostgreSQL (tests)")
