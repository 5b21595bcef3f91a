"""Dialects, registered by name in an explicit dict."""

from __future__ import annotations

from applier.dialects.base import Dialect
from applier.dialects.postgres import PostgresDialect


def _tsql() -> type[Dialect]:
    from applier.dialects.tsql import TsqlDialect

    return TsqlDialect


class _Registry(dict[str, type[Dialect]]):
    """name -> dialect class; T-SQL is imported on first use."""

    def __missing__(self, key: str) -> type[Dialect]:
        if key == "tsql":
            cls = _tsql()
            self[key] = cls
            return cls
        raise KeyError(f"unknown dialect {key!r} (postgres, tsql)")


DIALECTS: dict[str, type[Dialect]] = _Registry(postgres=PostgresDialect)
