"""Dialects, registered by name in an explicit dict (reladiff's ``_connect.py`` style)."""

from __future__ import annotations

from typing import Any

from applier.dialects.babelfish import BabelfishDialect
from applier.dialects.base import Dialect
from applier.dialects.postgres import PostgresDialect
from applier.dialects.tsql import TsqlDialect

DIALECTS: dict[str, type[Dialect]] = {
    PostgresDialect.name: PostgresDialect,
    TsqlDialect.name: TsqlDialect,
    BabelfishDialect.name: BabelfishDialect,  # T-SQL on Babelfish: found by asking the server
}


def for_server(dialect: Dialect, cursor: Any) -> Dialect:
    """``dialect`` as the server behind ``cursor`` speaks it: another registered engine of the
    same language when its :attr:`~Dialect.ENGINE_PROBE` answers 1 there (Babelfish for T-SQL),
    else ``dialect``. Asked once, when a target is reached (``targets.endpoint.preflight``): the
    server says what it is; no connection string's text decides."""
    for cls in DIALECTS.values():
        if cls.language != dialect.language or cls is type(dialect) or not cls.ENGINE_PROBE:
            continue
        try:
            rows = cursor.execute(cls.ENGINE_PROBE).fetchall()
        except Exception:  # noqa: BLE001 - a server that cannot answer is not that engine
            continue
        if rows and str(rows[0][0]) == "1":
            return cls()
    return dialect


def dialect(name: str) -> Dialect:
    """The dialect registered as ``name`` (KeyError naming the known ones)."""
    try:
        return DIALECTS[name]()
    except KeyError:
        raise KeyError(f"unknown dialect {name!r} ({', '.join(sorted(DIALECTS))})") from None


__all__ = ["DIALECTS", "Dialect", "dialect", "for_server"]
