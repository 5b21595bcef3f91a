"""Any database by ODBC connection string: the target applier reaches but does not start."""

from __future__ import annotations

from applier.errors import TargetError
from applier.targets.base import Target
from applier.targets.connstr import parse_connection_string, redact


class OdbcTarget(Target):
    """An existing database. Its connection string is the user's; applier adds its driver
    options (the dialect's) when it connects, and shows it only redacted."""

    def __init__(self, connection_string: str) -> None:
        parse_connection_string(connection_string)  # a bad string is refused here, redacted
        self._cs = connection_string

    @property
    def started(self) -> bool:
        return True

    @property
    def description(self) -> str:
        return redact(self._cs)

    def connection_string(self, database: str | None = None) -> str:
        if database is not None:
            raise TargetError(
                f"{self.description}: a subscriber database {database!r} on this target needs its own "
                "connection string (set `target` on the subscription)"
            )
        return self._cs
