"""The AdventureWorks DDL kept in tests/data/adventureworks/ (MIT, see tests/data/README.md), read
by the product's own reader (applier.catalog.ddl.read_ddl): alias types, IDENTITY, NOT NULL,
computed columns (not replicated), typed xml (carried as xml), primary keys and unique indexes.
"""

from __future__ import annotations

from pathlib import Path

from applier.articles import Article
from applier.catalog.ddl import read_ddl

DATA = Path(__file__).resolve().parents[1] / "data" / "adventureworks"
DDL = DATA / "instawdb_selected_tables.sql"
PG_DDL = DATA / "lorint_AdventureWorks-for-Postgres_install.sql"


def read_articles(text: str) -> list[Article]:
    return list(read_ddl(text, "tsql", str(DDL)).articles)


def articles() -> list[Article]:
    """The AdventureWorks tables as articles (the file is in the repository: no skip)."""
    return read_articles(DDL.read_text(encoding="utf-8"))
