"""A real PostgreSQL publisher as the oracle (issue 31): an embedded cluster with
``wal_level = logical`` and two wal2json slots (tests/support/publisher.py), a table with a
``timestamptz`` (``datetimeoffset(6)`` in the articles), a ``timestamp`` and a ``timetz``
column changed by 24 transactions (inserts, updates, a delete, a key change), captured in
format versions 1 and 2; the articles made from the publisher's catalog (``applier articles
--from-target``); each capture applied at N = 4 into a database of its own, which must
converge and then hold the publisher's table row for row.

Time zones differ on purpose: the publisher's server runs in America/St_Johns (-03:30, -02:30
in summer), the version 1 capture is decoded in Asia/Kolkata (+05:30, so its timestamptz texts
carry that offset) and version 2 in the server's zone, and the subscriber's database runs in
Pacific/Chatham (+12:45 / +13:45). A timestamptz is an instant: each must arrive and be read
back as the same instant whatever offset its text had.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyodbc
import pytest

import applier
from applier.catalog.files import articles_toml
from applier.catalog.target import read_target
from applier.config import load_config, with_overrides
from tests.support.publisher import start_publisher

pytestmark = pytest.mark.integration

TABLE = "public.orders"
DDL = """
CREATE TABLE public.orders (
    id integer PRIMARY KEY,
    customer varchar(40) NOT NULL,
    amount numeric(12,2),
    updated timestamptz NOT NULL,
    due timestamp,
    opens timetz,
    note text
)"""
# Instants written with every kind of offset: numeric, a zone name, across DST changes
# (New York's and St John's 2024-03-10 and 2024-11-03), the widest offsets, microseconds.
INSERTS = [
    (1, "ann", "10.50", "2024-03-10 01:59:59.999999-05", "2024-02-29 23:59:59.5", "10:00:00+02", "first"),
    (2, "björn", "0.01", "2024-03-10 03:00:00 America/New_York", None, "23:59:59.999999-03:30", None),
    (3, "chloé", None, "2024-11-03 01:30:00-04", "2000-01-01 00:00:00", None, "it's"),
    (4, "dima", "99999.99", "1999-12-31 23:59:59.999999+14", "1970-01-01 00:00:00.000001", "00:00:00+00", ""),
    (5, "eve", "-3.20", "2024-06-01 12:00:00 Europe/Berlin", None, "12:30:00.5+05:45", "x"),
    (6, "fran", "7.00", "2024-11-03 05:30:00+00", "2024-11-03 01:30:00", "08:00:00-12", None),
    (7, "gus", "1.00", "2024-01-01 00:00:00+00", None, None, "last"),
]
COLUMNS = "id, customer, amount, updated, due, opens, note"
# Every column as text in a UTC session: a row compared exactly, publisher against subscriber.
AS_TEXT = (
    "SELECT id::text, customer, amount::text, updated::text, due::text, opens::text, note "
    "FROM {table} ORDER BY id"
)


def as_text(connection_string: str) -> list[tuple[Any, ...]]:
    """The table's rows, every column as text, read in a UTC session."""
    conn = pyodbc.connect(connection_string, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute("SET TimeZone = 'UTC'")
        return [tuple(r) for r in cur.execute(AS_TEXT.format(table=TABLE)).fetchall()]
    finally:
        conn.close()


def _transactions() -> list[list[str | tuple[Any, ...]]]:
    txs: list[list[str | tuple[Any, ...]]] = [
        [(f"INSERT INTO public.orders ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)", *r) for r in INSERTS[:4]],
        [(f"INSERT INTO public.orders ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)", *r) for r in INSERTS[4:]],
        ["UPDATE public.orders SET updated = updated + interval '1 hour 0.000001 second' WHERE id IN (1, 2)"],
        ["UPDATE public.orders SET opens = '13:14:15.161718+11', due = NULL WHERE id = 1"],
        ["DELETE FROM public.orders WHERE id = 3"],
        ["UPDATE public.orders SET id = 40, updated = '2024-03-31 02:30:00 Europe/London' WHERE id = 4"],
        ["UPDATE public.orders SET note = 'moved', amount = amount * 2 WHERE id = 40"],
    ]
    # small transactions that move instants back and forth across the DST changes
    for i in range(17):
        k = [1, 2, 5, 6, 7, 40][i % 6]
        step = f"{(i % 5) - 2} days {i * 37} minutes {i}.{i:06d} seconds"
        txs.append(
            [
                (
                    f"UPDATE public.orders SET updated = updated + interval '{step}', amount = amount + 1 WHERE id = ?",
                    k,
                ),
                ("UPDATE public.orders SET due = updated AT TIME ZONE 'Asia/Kolkata' WHERE id = ?", k),
            ]
        )
    return txs


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The two captures, the articles file from the publisher's catalog, and the publisher's
    rows as text (read in UTC) once every transaction committed."""
    folder = tmp_path_factory.mktemp("publisher")
    with start_publisher(timezone="America/St_Johns") as pub:
        pub.execute(DDL)
        pub.create_slot("v1")
        pub.create_slot("v2")
        for tx in _transactions():
            pub.transaction(*tx)
        v1 = pub.capture("v1", folder / "capture.v1.jsonl", 1, timezone="Asia/Kolkata")
        v2 = pub.capture("v2", folder / "capture.v2.jsonl", 2)
        catalog = read_target(pub.connection_string, [TABLE])
        articles = folder / "articles.toml"
        articles.write_text(articles_toml(catalog, "the publisher"), encoding="utf-8")
        expected = as_text(pub.connection_string)
    yield {"v1": v1, "v2": v2, "articles": articles, "catalog": catalog, "expected": expected}


def test_the_captures_and_articles_are_what_applier_reads(published: dict[str, Any]) -> None:
    """Version 1: one transaction a line with its nextlsn; version 2: B..C around each; the
    timestamptz texts carry the decoding session's offset; the articles map the types."""
    v1 = Path(published["v1"]).read_text().splitlines()
    v2 = Path(published["v2"]).read_text().splitlines()
    txs = len(_transactions())
    assert len(v1) == txs and all('"nextlsn"' in ln for ln in v1)
    assert sum('"action":"B"' in ln for ln in v2) == txs == sum('"action":"C"' in ln for ln in v2)
    assert '"2024-03-10 12:29:59.999999+05:30"' in v1[0]  # 01:59:59.999999-05 decoded in Kolkata
    assert '"2024-03-10 04:29:59.999999-02:30"' in "".join(v2)  # and in St John's (summer time)
    (article,) = published["catalog"].articles
    types = {c.name: str(c.type) for c in article.columns}
    assert types == {
        "id": "int",
        "customer": "nvarchar(40)",
        "amount": "decimal(12,2)",
        "updated": "datetimeoffset(6)",
        "due": "datetime2(6)",
        "opens": "nvarchar(max)",  # timetz travels as its text
        "note": "nvarchar(max)",
    }


@pytest.mark.parametrize("version", [1, 2])
def test_a_capture_applied_at_four_streams_converges_to_the_publishers_rows(
    spark: Any, pg: Any, published: dict[str, Any], version: int
) -> None:
    database = f"pub31_w2j_v{version}"
    target = pg.subscriber(database)
    # every session of the subscriber's database in another zone than the publisher's
    conn = pyodbc.connect(target.connection_string, autocommit=True)
    conn.execute(f"ALTER DATABASE {database} SET TimeZone = 'Pacific/Chatham'")
    conn.close()
    config = with_overrides(load_config(published["articles"]), run={"streams": 4})
    result = applier.run(
        config,
        pg.endpoint(database),
        spark=spark,
        changes=published[f"v{version}"],
        changes_format="wal2json" if version == 1 else "wal2json2",
    )
    (sub,) = result.subscriptions
    assert sub.verdict is applier.Verdict.CONVERGED, sub.check.reason or sub.check.to_json()
    assert sub.check.rows_expected == len(published["expected"]) == sub.check.rows_found
    assert as_text(target.connection_string) == published["expected"]
