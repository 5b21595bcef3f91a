"""Dialects, registered by name in an explicit dict (reladiff's ``_connect.py`` style)."""

from __future__ import annotations

from applier.dialects.base import Dialect
from applier.dialects.postgres import PostgresDialect
from applier.dialects.tsql import TsqlDialect

DIALECTS: dict[str, type[Dialect]] = {
    PostgresDialect.name: PostgresDialect,
    TsqlDialect.name: TsqlDialect,
}


def dialect(name: str) -> Dialect:
    """The dialect registered as ``name`` (KeyError naming the known ones)."""
    try:
        return DIALECTS[name]()
    except KeyError:
        raise KeyError(f"unknown dialect {name!r} ({', '.join(sorted(DIALECTS))})") from None


__all__ = ["DIALECTS", "Dialect", "dialect"]
