"""A subscriber server: what a user names as ``--target`` (:class:`Target`).

A ``Target`` is what a user names: the embedded PostgreSQL applier starts, a PostgreSQL or
SQL Server container, or any database by ODBC connection string. One class per backend,
each owning how its connection string is written. A target that applier starts (embedded,
containers) is started by :meth:`Target.start` and removed by :meth:`Target.stop`; a
context manager does both. Each database applier uses on it is an
:class:`~applier.targets.endpoint.Endpoint`.
"""

from __future__ import annotations

import abc
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from applier.errors import TargetError, did_you_mean
from applier.targets.endpoint import Endpoint, preflight

if TYPE_CHECKING:
    from typing_extensions import Self


BACKENDS: dict[str, Callable[..., Target]] = {}  # name -> class, filled by applier.targets
ENV = "APPLIER_TARGET"  # the target when none is named (Target.parse(None))


class Target(abc.ABC):
    """A subscriber server: started (or reached) once, holding one database per subscriber."""

    keep: bool = False  # stop() leaves the server running (embedded: --keep)

    # -- constructors (the public API: applier.Target.embedded() ...) --------------------
    # Each backend is registered in BACKENDS by the package (applier/targets/__init__.py).
    @staticmethod
    def embedded(**settings: Any) -> Target:
        """A throwaway PostgreSQL cluster from the local binaries (the default)."""
        return BACKENDS["embedded"](**settings)

    @staticmethod
    def babelfish(**settings: Any) -> Target:
        """A throwaway Babelfish (T-SQL over TDS) from a local build ($APPLIER_BABELFISH)."""
        return BACKENDS["babelfish"](**settings)

    @staticmethod
    def odbc(connection_string: str) -> Target:
        """An existing database, by ODBC connection string."""
        return BACKENDS["odbc"](connection_string)

    @staticmethod
    def postgres_container() -> Target:
        """PostgreSQL in a throwaway container (testcontainers; needs a Docker engine)."""
        return BACKENDS["postgres-container"]()

    @staticmethod
    def sqlserver_container() -> Target:
        """SQL Server 2022 in a throwaway container (testcontainers; needs a Docker engine)."""
        return BACKENDS["mssql"]()

    @staticmethod
    def parse(spec: str | None, keep: bool = False) -> Target:
        """``embedded``, ``babelfish``, ``postgres-container``, ``mssql``, or an ODBC connection string.
        ``None``: the ``APPLIER_TARGET`` environment variable if it is set (CI keeps the
        connection string and its password in a secret), else ``embedded``. ``keep``: the
        embedded server stays up after the run."""
        if spec is None and os.environ.get(ENV, "").strip():
            try:
                return Target.parse(os.environ[ENV], keep)
            except TargetError as e:  # the message is already redacted
                raise TargetError(f"${ENV}: {e}") from None
        text = (spec or "embedded").strip()
        if text == "embedded":
            return Target.embedded(keep=keep)
        if text == "babelfish":
            return Target.babelfish(keep=keep)
        if text in ("postgres-container", "mssql"):
            return BACKENDS[text]()
        if "=" not in text and re.fullmatch(r"[\w.\-]{1,40}", text):  # a misspelt name? (a word: no secret)
            names = ["embedded", "babelfish", "postgres-container", "mssql"]
            hint = did_you_mean(text, names) or f"the names are {', '.join(names)}"
            raise TargetError(
                f"bad ODBC connection string {text!r}: neither a target name nor key=value pairs; {hint}"
            )
        return Target.odbc(text)

    # -- lifecycle -----------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def started(self) -> bool: ...

    def start(self) -> Self:
        """Start the server if applier owns it; reach it otherwise. Returns self."""
        return self

    def stop(self) -> None:  # noqa: B027 - a target applier only reaches has nothing to stop
        """Stop and remove the server if applier started it."""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- databases -----------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def description(self) -> str:
        """What the target is, for people: never a secret."""

    @abc.abstractmethod
    def connection_string(self, database: str | None = None) -> str:
        """ODBC connection string of ``database`` (default: the target's own database)."""

    def create_database(self, name: str) -> str:
        """Create another database on this server; returns its connection string."""
        raise TargetError(f"{self.description}: applier cannot create databases here (database {name!r})")

    def endpoint(self, database: str | None = None) -> Endpoint:
        """``database`` (default: the target's own), checked reachable."""
        if not self.started:
            raise TargetError(f"{self.description} is not started")
        what = self.description if database is None else f"{self.description}, database {database}"
        return preflight(self.connection_string(database), what)

    def subscriber(self, database: str) -> Endpoint:
        """A database of its own for a subscriber, created where applier may create one."""
        return preflight(self.create_database(database), f"{self.description}, database {database}")
