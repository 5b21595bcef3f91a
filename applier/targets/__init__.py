"""Targets: start or reach a subscriber.

- :class:`Target` (``base``): what a user names; one class per backend, registered here by
  name: ``embedded`` (default: a throwaway PostgreSQL cluster from the local binaries),
  ``postgres-container`` and ``mssql`` (``containers``: PostgreSQL or SQL Server 2022 through
  testcontainers, where a Docker engine is reachable), ``babelfish`` (a throwaway Babelfish:
  T-SQL over TDS, from a local build), ``odbc`` (any database by connection
  string);
- :class:`Endpoint` (``endpoint``): one reachable database of a target, what stream tasks get;
- ``connection``: connecting with the dialect's session set-up, retry policies as data;
- ``connstr``: connection strings parsed and redacted; ``progress``: the progress table.
"""

from __future__ import annotations

from applier.targets.babelfish import EmbeddedBabelfish
from applier.targets.base import BACKENDS, Target
from applier.targets.containers import PostgresContainer, SqlServerContainer
from applier.targets.embedded import EmbeddedPostgres
from applier.targets.endpoint import Endpoint, preflight
from applier.targets.odbc import OdbcTarget

BACKENDS.update(
    {
        "embedded": EmbeddedPostgres,
        "babelfish": EmbeddedBabelfish,
        "odbc": OdbcTarget,
        "postgres-container": PostgresContainer,
        "mssql": SqlServerContainer,
    }
)

__all__ = ["Endpoint", "Target", "preflight"]
