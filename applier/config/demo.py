"""The demo's articles and configuration: what a run uses without a file.

Owns the two demo articles (one with a single int key, one with a composite key). Hazard
workloads, which bring their own articles, carry these as placeholders.
"""

from __future__ import annotations

from applier.articles import Article, Column, parse_type
from applier.config.model import Config


def _columns(*spec: tuple[str, str, bool]) -> tuple[Column, ...]:
    """(name, type, is key): key columns are NOT NULL, the others nullable."""
    return tuple(Column(name, parse_type(type_), nullable=not key) for name, type_, key in spec)


def demo_articles() -> tuple[Article, ...]:
    """Two articles: one with a single int key, one with a composite key."""
    accounts = Article(
        "dbo",
        "accounts",
        _columns(
            ("id", "int", True),
            ("owner", "nvarchar(40)", False),
            ("balance", "decimal(12,2)", False),
            ("active", "bit", False),
            ("updated", "datetime2", False),
            ("ref", "uniqueidentifier", False),
        ),
        ("id",),
    )
    order_lines = Article(
        "dbo",
        "order_lines",
        _columns(
            ("order_id", "bigint", True),
            ("line", "smallint", True),
            ("qty", "int", False),
            ("price", "money", False),
            ("note", "nvarchar(max)", False),
        ),
        ("order_id", "line"),
    )
    return (accounts, order_lines)


def demo_config() -> Config:
    """The demo articles with the default run and workload settings."""
    return Config(demo_articles())
