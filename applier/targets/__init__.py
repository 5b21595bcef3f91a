"""Targets: start or reach a subscriber.

- ``embedded`` (default): a throwaway PostgreSQL cluster from the local binaries;
- ``mssql`` / ``postgres-container``: SQL Server 2022 or PostgreSQL through testcontainers
  where a Docker engine is reachable;
- anything else: an ODBC connection string to an existing database.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from applier.targets.odbc import Target, preflight, redact


@contextlib.contextmanager
def open_target(spec: str | None, keep: bool = False, announce: bool = True) -> Iterator[Target]:
    spec = (spec or "embedded").strip()
    if spec == "embedded":
        from applier.targets.embedded import EmbeddedPostgres

        pg = EmbeddedPostgres(keep=keep)
        pg.start()
        try:
            target = preflight(pg.odbc_connection_string(), f"embedded PostgreSQL on 127.0.0.1:{pg.port}")
            yield target
        finally:
            if keep and announce:
                print(f"embedded PostgreSQL left running (--keep): {pg.odbc_connection_string()}")
                print(f"  data directory: {pg.datadir}")
            pg.stop()
        return
    if spec in ("mssql", "postgres-container"):
        from applier.targets.containers import container_target

        with container_target(spec) as c:
            yield preflight(c.odbc_connection_string(), f"{spec} container")
        return
    yield preflight(spec, redact(spec))
