"""A real publisher as the oracle (issue 31), under concurrent traffic: tests/support/harness.py
runs seeded transactions on four connections of an embedded PostgreSQL publisher at once (key
moves and chains on single, composite and text keys, deletes and re-inserts, large TOASTed
values left unchanged, NULLs, multi-statement transactions), on tables that held rows before
the slots, captures them through two wal2json slots (format version 1 created before the
traffic, version 2 while it runs) with ``applier capture --create-slot --snapshot``, applies
each capture and compares every subscriber table with the publisher's, row for row.

``make test``: 300 transactions, N = 4, both formats read as captured, two strategies.
``make test-e2e``: 2,000 transactions, N = 1, 4 and 8, every strategy and model, set-based
apply on and off, both formats; figures in out/publisher-matrix.json (or
$APPLIER_PUBLISHER_MATRIX) and a table on the terminal.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support import harness
from tests.support.harness import Cell, Published

pytestmark = pytest.mark.integration

SMALL = [
    Cell("wal2json", 4, "key-hash", "agent", False),
    Cell("wal2json2", 4, "writeset", "independent", False),
]


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Published:
    return harness.publish(tmp_path_factory.mktemp("harness"), seed=31, transactions=300, clients=4)


def test_the_traffic_holds_every_kind_of_change_the_harness_promises(published: Published) -> None:
    """What the version 2 capture shows of the traffic: the hazards are there, so the runs below
    test them (a change to the workload that lost one of them fails here)."""
    assert published.transactions == 300
    lines = [json.loads(x) for x in published.changes["wal2json2"].read_text().splitlines()]
    kinds: Counter[str] = Counter()
    deleted: set[tuple[str, Any]] = set()
    vacated: set[tuple[str, Any]] = set()  # keys a move or a delete left, this transaction
    landed: set[tuple[str, Any]] = set()  # keys a move made, this transaction
    for c in lines:
        if c["action"] == "B":
            vacated, landed = set(), set()
            continue
        if c["action"] not in "IUD":
            continue
        table = c["table"]
        keys = harness.KEYS[f"public.{table}"]
        new = {x["name"]: x["value"] for x in c.get("columns", [])}
        old = {x["name"]: x["value"] for x in c.get("identity", [])}
        before = (table, tuple(old.get(k) for k in keys))
        after = (table, tuple(new.get(k, old.get(k)) for k in keys))
        if c["action"] == "U" and after != before:
            kinds[f"key move {table}"] += 1
            kinds["chain in one transaction"] += before in landed
            kinds["key taken again in its transaction"] += after in vacated
            vacated.add(before)
            landed.add(after)
        if c["action"] == "U" and len(new) < {"accounts": 6, "lines": 5, "tags": 3}[table]:
            kinds["unchanged toast"] += 1
        if c["action"] == "D":
            deleted.add(before)
            vacated.add(before)
        if c["action"] == "I":
            kinds["re-insert"] += after in deleted
        kinds["null"] += any(v is None for v in new.values())
        kinds["large value"] += any(isinstance(v, str) and len(v) > 2000 for v in new.values())
    for kind in (
        "key move accounts", "key move lines", "key move tags", "chain in one transaction",
        "key taken again in its transaction", "unchanged toast", "re-insert", "null", "large value",
    ):  # fmt: skip
        assert kinds[kind] > 0, (kind, kinds)
    # both formats leave unchanged TOASTed values out, and the version 1 slot saw more traffic
    assert published.unchanged_toast["wal2json"] > published.unchanged_toast["wal2json2"] > 0
    # the tables held rows at each slot's start; the second slot started later, amid the traffic
    snap1, snap2 = (published.snapshots[f].read_text().splitlines() for f in harness.FORMATS)
    assert len(snap1) == 60 + 90 + 60 and snap1 != snap2
    # multi-statement transactions: a version 1 line holds a transaction
    v1 = [json.loads(x) for x in published.changes["wal2json"].read_text().splitlines()]
    assert max(len(t["change"]) for t in v1) >= 4


@pytest.mark.parametrize("cell", SMALL, ids=lambda c: c.name)
def test_a_capture_applied_at_four_streams_equals_the_publisher(
    spark: Any, pg: Any, published: Published, cell: Cell
) -> None:
    endpoint = pg.subscriber(f"harness_{cell.format}")
    row = harness.run_cell(spark, endpoint, published, cell)
    assert row["verdict"] == "converged", row["reason"] or row
    assert row["tables_equal"] == len(harness.TABLES), row["publisher_differences"]
    assert row["rows_compared"] == sum(len(r) for r in published.expected.values()) > 0
    assert row["ok"]


@pytest.mark.e2e
@pytest.mark.timeout(3600)  # ~10 minutes on a quiet 2-core machine; the suite's 600 s is per test
def test_the_publisher_matrix(
    spark: Any, pg: Any, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every cell that must converge does and equals the publisher; round-robin and key-hash with
    the independent model may diverge, and then applier must say so too."""

    def say(text: str) -> None:  # on the terminal as the matrix runs, not captured
        with capsys.disabled():
            print(text, flush=True)

    started = time.monotonic()
    published = harness.publish(
        tmp_path_factory.mktemp("matrix"), seed=31, transactions=harness.MATRIX_TRANSACTIONS, say=say
    )
    converted = harness.convert(spark, published)
    endpoint = pg.subscriber("harness_matrix")
    grid = harness.matrix_cells()
    say("")
    rows = harness.run_matrix(
        spark, endpoint, published, grid, on_row=lambda r: say(harness.row_text(r)), converted=converted
    )
    result = harness.figures(published, rows, time.monotonic() - started, converted)
    root = Path(__file__).resolve().parents[2]
    out = Path(os.environ.get("APPLIER_PUBLISHER_MATRIX", root / "out" / "publisher-matrix.json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    say(harness.table_text(rows))
    say(f"{len(rows)} cells in {result['seconds']} s; figures in {out}")
    assert len(rows) == len(grid) == 2 + 2 * (4 + 2 * 10)
    assert not result["failed"], [(r["read"], r["format"], r["streams"], r["partition"], r["model"], r["set_apply"],
                                   r["verdict"], r["reason"], r["publisher_differences"]) for r in result["failed"]]  # fmt: skip
    assert all(r["tables_equal"] == len(harness.TABLES) for r in rows if r["must_converge"])
