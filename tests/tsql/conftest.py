"""The T-SQL engines the tsql suite runs on: the embedded Babelfish here (``-m tsql``), SQL Server
2022 in a container where a Docker engine runs (``-m docker``). One server of each per session.

A test module asks for ``tsql_target`` (the started server) or ``sqlserver`` (its database as
an Endpoint); the dialect is the endpoint's, so Babelfish's capability flags apply there and
SQL Server's text everywhere else.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

ENGINES = [
    pytest.param("babelfish", id="babelfish", marks=pytest.mark.tsql),
    pytest.param("mssql", id="mssql", marks=pytest.mark.docker),
]


@pytest.fixture(scope="session")
def mssql_container() -> Iterator[Any]:
    from applier.targets.containers import SqlServerContainer, docker_available, sqlserver_odbc_driver

    ok, reason = docker_available()
    if not ok:
        pytest.skip(reason)
    if sqlserver_odbc_driver() is None:
        pytest.skip("no SQL Server ODBC driver installed (ODBC Driver 18/17 for SQL Server or FreeTDS)")
    with SqlServerContainer() as target:
        yield target


@pytest.fixture(scope="session", params=ENGINES)
def tsql_target(request: pytest.FixtureRequest) -> Any:
    """A started T-SQL server: the session's Babelfish, or the SQL Server container."""
    return request.getfixturevalue("babelfish" if request.param == "babelfish" else "mssql_container")


@pytest.fixture(scope="session")
def sqlserver(tsql_target: Any) -> Any:
    """The T-SQL server's own database, reached as applier reaches it (an Endpoint)."""
    return tsql_target.endpoint()
