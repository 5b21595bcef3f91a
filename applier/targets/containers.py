"""SQL Server 2022 or PostgreSQL in a throwaway container, where a Docker engine is reachable.

testcontainers (the ``docker`` extra) is imported only when a container is asked for. A
machine without Docker gets :class:`~applier.errors.TargetError` with the plain reason, and
tests skip with the reason :func:`docker_available` gives.

SQL Server is reached through whichever SQL Server ODBC driver the machine has: Microsoft's
"ODBC Driver 18/17 for SQL Server" (``Encrypt=no;TrustServerCertificate=yes``: the container
has a self-signed certificate and Driver 18 encrypts by default) or FreeTDS
(``TDS_Version=7.4``, the protocol of SQL Server 2012 and later).
"""

from __future__ import annotations

import configparser
import contextlib
import os
import re
from pathlib import Path
from typing import Any

from applier.errors import TargetError
from applier.targets.base import Target

SQLSERVER_IMAGE = "mcr.microsoft.com/mssql/server:2022-latest"
POSTGRES_IMAGE = "postgres:15"
DATABASE = "applier"
# SQL Server's sa password must have 8+ characters from three of: upper, lower, digit, symbol.
_SA_PASSWORD = os.environ.get("APPLIER_MSSQL_PASSWORD", "Applier#2022pw")
_PG_PASSWORD = os.environ.get("APPLIER_PG_PASSWORD", "applier")

_MICROSOFT_RE = re.compile(r"^ODBC Driver (\d+) for SQL Server$")


def docker_available() -> tuple[bool, str]:
    """(True, "") where a Docker engine answers, else (False, the reason in plain words)."""
    try:
        import docker
    except ImportError as e:
        return False, f"the docker extra is not installed (pip install 'applier[docker]'): {e}"
    if not hasattr(docker, "from_env"):  # a folder named docker/ on sys.path, not docker-py
        return False, "the docker extra is not installed (pip install 'applier[docker]')"
    try:
        client = docker.from_env(timeout=5)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as e:  # docker raises DockerException, requests errors, OSError...
        return False, f"no Docker engine reachable (docker.from_env(): {_one_line(e)})"
    return True, ""


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def _odbcinst_paths() -> list[Path]:
    sysini = os.environ.get("ODBCSYSINI")
    return [Path(sysini) / "odbcinst.ini"] if sysini else [Path("/etc/odbcinst.ini")]


def _library_missing(driver: str) -> bool:
    """True when odbcinst.ini names an absolute library path for driver that does not exist."""
    for path in _odbcinst_paths():
        ini = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            ini.read(path, encoding="utf-8")
        except (OSError, configparser.Error):
            continue
        if ini.has_section(driver):
            lib = ini.get(driver, "Driver", fallback="")
            return bool(lib) and os.path.isabs(lib) and not os.path.exists(lib)
    return False


def sqlserver_odbc_driver() -> str | None:
    """The best SQL Server ODBC driver installed: Microsoft's newest, else FreeTDS, else None."""
    try:
        import pyodbc
    except ImportError:
        return None
    from applier.targets.connstr import ensure_odbc_env

    ensure_odbc_env()  # the same driver registry the connections will use
    names: list[str] = [str(n) for n in pyodbc.drivers() if not _library_missing(str(n))]
    microsoft = sorted((int(m.group(1)), n) for n in names if (m := _MICROSOFT_RE.match(n)))
    if microsoft:
        return microsoft[-1][1]
    for n in names:
        if "freetds" in n.lower():
            return n
    return None


def _braced(value: str) -> str:
    """An ODBC connection-string value, braced when it holds ; { } or spaces."""
    if re.search(r"[;{}\s=]", value):
        return "{" + value.replace("}", "}}") + "}"
    return value


def sqlserver_connection_string(
    driver: str, host: str, port: int, database: str, user: str, password: str
) -> str:
    """A connection string with the options driver needs for a container's SQL Server."""
    base = f"Driver={{{driver}}};Database={_braced(database)};Uid={_braced(user)};Pwd={_braced(password)};"
    if "freetds" in driver.lower():
        return f"{base}Server={host};Port={port};TDS_Version=7.4;ClientCharset=UTF-8;"
    return f"{base}Server={host},{port};Encrypt=no;TrustServerCertificate=yes;"


def _require_docker() -> None:
    ok, reason = docker_available()
    if not ok:
        raise TargetError(f"a container target needs a Docker engine (testcontainers): {reason}")


def _testcontainers(module: str) -> Any:
    try:
        return __import__(f"testcontainers.community.{module}", fromlist=["_"])
    except ImportError:
        try:
            return __import__(f"testcontainers.{module}", fromlist=["_"])
        except ImportError as e:
            raise TargetError(
                f"testcontainers is not installed (pip install 'applier[docker]'): {e}"
            ) from None


class _Container(Target):
    """A throwaway container applier starts (testcontainers) and removes; subclasses say how
    to start it, create a database in it and write its connection string."""

    kind = "container"

    def __init__(self) -> None:
        self.container: Any = None
        self.host = ""
        self.port = 0

    @property
    def started(self) -> bool:
        return self.container is not None

    @property
    def description(self) -> str:
        return f"{self.kind} container" + (f" on {self.host}:{self.port}" if self.started else "")

    def start(self) -> _Container:
        if self.started:
            return self
        _require_docker()
        try:
            self._start()
        except TargetError:
            raise
        except Exception as e:
            raise TargetError(f"starting the {self.kind} container failed: {_one_line(e)}") from None
        return self

    def stop(self) -> None:
        c, self.container = self.container, None
        if c is not None:
            with contextlib.suppress(Exception):
                c.stop()

    def _start(self) -> None:
        raise NotImplementedError

    def _exec_sql(self, sql: str) -> None:
        """Run one statement with the container's own client (for CREATE DATABASE)."""
        raise NotImplementedError

    def create_database(self, name: str) -> str:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", name):
            raise TargetError(f"database name {name!r}: letters, digits and _ only, at most 63")
        self._exec_sql(self.create_database_sql(name))
        return self.connection_string(name)

    def create_database_sql(self, name: str) -> str:
        raise NotImplementedError


class SqlServerContainer(_Container):
    """SQL Server 2022, reached with Microsoft's ODBC driver or FreeTDS (whichever is installed)."""

    kind = "mssql"
    user = "sa"

    def __init__(self) -> None:
        super().__init__()
        self.driver = ""
        self.password = _SA_PASSWORD

    def _start(self) -> None:
        driver = sqlserver_odbc_driver()
        if driver is None:
            raise TargetError(
                "no SQL Server ODBC driver installed (looked for 'ODBC Driver 18/17 for SQL Server' "
                "and FreeTDS in pyodbc.drivers()); install msodbcsql18 or tdsodbc"
            )
        mod = _testcontainers("mssql")
        c = mod.SqlServerContainer(SQLSERVER_IMAGE, password=self.password, dbname="master")
        c.start()  # waits until sqlcmd inside the container answers
        self.container, self.driver = c, driver
        try:
            self.host, self.port = c.get_container_host_ip(), int(c.get_exposed_port(1433))
            self._exec_sql(self.create_database_sql(DATABASE))
        except BaseException:
            self.stop()
            raise

    def create_database_sql(self, name: str) -> str:
        return f"IF DB_ID(N'{name}') IS NULL CREATE DATABASE [{name}]"

    def _exec_sql(self, sql: str) -> None:
        # The sqlcmd of the image (mssql-tools18 in 2022 images; -C trusts its certificate).
        res = self.container.exec(
            ["bash", "-c", f'/opt/mssql-tools*/bin/sqlcmd -C -b -U sa -P "$SA_PASSWORD" -Q "{sql}"']
        )
        if res.exit_code != 0:
            out = res.output.decode(errors="replace") if isinstance(res.output, bytes) else str(res.output)
            raise TargetError(f"{sql!r} in the SQL Server container failed: {out.strip()}")

    def connection_string(self, database: str | None = None) -> str:
        return sqlserver_connection_string(
            self.driver, self.host, self.port, database or DATABASE, self.user, self.password
        )


class PostgresContainer(_Container):
    """PostgreSQL 15 in a container, reached with psqlODBC."""

    kind = "postgres-container"
    user = "applier"

    def __init__(self) -> None:
        super().__init__()
        self.password = _PG_PASSWORD

    def _start(self) -> None:
        mod = _testcontainers("postgres")
        c = mod.PostgresContainer(POSTGRES_IMAGE, username=self.user, password=self.password, dbname=DATABASE)
        c.start()
        self.container = c
        self.host, self.port = c.get_container_host_ip(), int(c.get_exposed_port(5432))

    def create_database_sql(self, name: str) -> str:
        return f'CREATE DATABASE "{name}"'

    def _exec_sql(self, sql: str) -> None:
        res = self.container.exec(["psql", "-U", self.user, "-d", DATABASE, "-c", sql])
        if res.exit_code != 0:
            out = res.output.decode(errors="replace") if isinstance(res.output, bytes) else str(res.output)
            raise TargetError(f"{sql!r} in the PostgreSQL container failed: {out.strip()}")

    def connection_string(self, database: str | None = None) -> str:
        db = database or DATABASE
        return (
            f"Driver={{PostgreSQL Unicode}};Server={self.host};Port={self.port};Database={_braced(db)};"
            f"Uid={_braced(self.user)};Pwd={_braced(self.password)};"
        )
