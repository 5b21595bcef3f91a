"""Shared fixtures: one local Spark and one embedded PostgreSQL per test session.

Neither starts at import time; integration tests ask for them by name.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    from applier.sparkenv.session import spark_session

    # the suite's runs are small: C1 alone (sparkenv.session.QUICK_JIT; APPLIER_JIT=full overrides)
    s = spark_session(8, app="applier-tests", quick_jit=True)
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
    """The embedded PostgreSQL's database as applier reaches it (an Endpoint: ODBC, with
    applier's options)."""
    return pg.endpoint()


@pytest.fixture(scope="session")
def babelfish() -> Iterator[object]:
    """One embedded Babelfish (T-SQL over TDS) for the session: the tsql suite's engine. Skips,
    naming $APPLIER_BABELFISH, where no build is found."""
    from applier.targets.babelfish import EmbeddedBabelfish, available

    ok, why = available()
    if not ok:
        pytest.skip(why)
    server = EmbeddedBabelfish().start()
    yield server
    server.stop()


TARGETS = [
    pytest.param("embedded", id="embedded"),
    pytest.param("babelfish", id="babelfish", marks=pytest.mark.tsql),
    pytest.param("postgres-container", id="postgres-container", marks=pytest.mark.docker),
    pytest.param("mssql", id="mssql", marks=pytest.mark.docker),
]


@pytest.fixture(scope="session", params=TARGETS)
def any_target(request, pg):  # type: ignore[no-untyped-def]
    """Every kind of subscriber: the embedded PostgreSQL and Babelfish here, containers where
    Docker runs."""
    if request.param == "embedded":
        return pg.endpoint()
    if request.param == "babelfish":
        return request.getfixturevalue("babelfish").endpoint()
    from applier.targets import Target
    from applier.targets.containers import docker_available

    ok, why = docker_available()
    if not ok:
        pytest.skip(why)
    server = Target.parse(request.param).start()
    request.addfinalizer(server.stop)
    return server.endpoint()
