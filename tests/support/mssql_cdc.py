"""The mssql-cdc change-table exports of tests/data/captures/mssql_cdc (CSV and Parquet, see its
README), the settings of their article ``dbo.customers``, and the rows a subscriber holds once
they are applied (the MicrosoftDocs change-table page's rules)."""

from __future__ import annotations

import decimal
from pathlib import Path
from typing import Any

from applier.config import parse_config
from tests.support.subscriber import rows

DATA = Path(__file__).resolve().parents[1] / "data" / "captures" / "mssql_cdc"
CSV = DATA / "dbo_customers_CT.csv"
PARQUET = DATA / "dbo_customers_CT.parquet"
COLUMNS = ("id", "name", "email", "balance", "notes", "memo")


def cdc_config(table: str = "customers"):  # type: ignore[no-untyped-def]
    """The exports' article as ``dbo.<table>``, at 4 streams, subscription ``cdc_<table>``."""
    return parse_config(
        {
            "run": {"streams": 4, "commit_batch_size": 2, "subscription": f"cdc_{table}"},
            "articles": [
                {
                    "name": f"dbo.{table}",
                    "columns": [
                        {"name": "id", "type": "int", "key": True},
                        {"name": "name", "type": "nvarchar(50)", "nullable": False},
                        {"name": "email", "type": "nvarchar(100)"},
                        {"name": "balance", "type": "decimal(10,2)"},
                        {"name": "notes", "type": "nvarchar(max)"},
                        {"name": "memo", "type": "ntext"},
                    ],
                }
            ],
        },
        f"<test mssql-cdc {table}>",
    )


D = decimal.Decimal
# The documented outcome (tests/data/captures/mssql_cdc/README.md).
EXPECTED: dict[int, tuple[Any, ...]] = {
    4: (4, "Dana C", "dana@example.com", D("40.00"), "n4, revised", "memo 4"),
    5: (5, "Eve", None, D("55.25"), "n5", "memo 5"),
    7: (7, "Gus", "gus@example.com", None, None, None),
    10: (10, "Alice", "alice@example.org", D("10.00"), "note 1", "memo 1"),
    60: (60, "Frank", "frank@example.com", D("60.00"), None, None),
}


def subscriber_rows(target, table: str = "customers") -> dict[int, tuple[Any, ...]]:  # type: ignore[no-untyped-def]
    """The subscriber's ``dbo.<table>`` by id, its columns in :data:`COLUMNS`' order."""
    cols = ", ".join(f'"{c}"' for c in COLUMNS)
    return {r[0]: r for r in rows(target, f'SELECT {cols} FROM "dbo"."{table}" ORDER BY "id"')}
