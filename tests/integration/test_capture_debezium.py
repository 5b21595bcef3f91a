"""Debezium and Maxwell captures (tests/data/captures/debezium, .../maxwell: the Debezium
documentation's and Maxwell's dataformat.md examples) applied through ``applier.run(...,
changes_format="debezium"|"maxwell")`` at N = 4 streams on the embedded PostgreSQL: each
converges, and the subscriber then holds the rows the example documents. A sequence is cut
where its documented outcome is visible (customer 1005 after the doc's update holds
noreply@example.org; after the delete, no row). Bad captures apply nothing.

Each run in a database of its own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import applier
from applier.config import parse_config
from applier.errors import InputError
from applier.sources.formats import Options
from applier.values import encode_row, validate_encoded
from tests.support.debezium_capture import write_debezium_capture
from tests.support.subscriber import rows

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parents[1] / "data" / "captures"
DBZ, MAXWELL = DATA / "debezium", DATA / "maxwell"

CUSTOMER_COLUMNS = [
    {"name": "id", "type": "int", "key": True},
    {"name": "first_name", "type": "nvarchar(255)", "nullable": False},
    {"name": "last_name", "type": "nvarchar(255)", "nullable": False},
    {"name": "email", "type": "nvarchar(255)", "nullable": False},
]
SIMPLE = [{"name": "pk", "type": "int", "key": True}, {"name": "aa", "type": "int"}]
TABLE_E = [  # dataformat.md: id int primary key, m double, c timestamp(6), comment varchar(255)
    {"name": "id", "type": "int", "key": True},
    {"name": "m", "type": "float"},
    {"name": "c", "type": "datetime2(6)"},
    {"name": "comment", "type": "varchar(255)"},
]
JOHN = {"id": 1005, "first_name": "john", "last_name": "doe", "email": "john.doe@example.org"}
E1 = {"id": 1, "m": 5.444, "c": "2016-10-21T05:33:54.631000", "comment": "I am a creature of light."}


def config(name: str, articles: dict[str, list[dict[str, Any]]]):  # type: ignore[no-untyped-def]
    return parse_config(
        {
            "run": {"streams": 4, "commit_batch_size": 1, "subscription": name},
            "articles": [{"name": a, "columns": cols} for a, cols in articles.items()],
        },
        f"<capture {name}>",
    )


def _held(target: Any, article: Any) -> list[dict[str, Any]]:
    q = target.dialect.quote
    cols = ", ".join(q(c.name) for c in article.replicated)
    order = ", ".join(q(k) for k in article.key)
    got = rows(
        target,
        f"SELECT {cols} FROM {target.dialect.qualified(article.schema, article.table)} ORDER BY {order}",
    )
    return [encode_row(article, dict(zip(article.column_names, r, strict=True))) for r in got]


def _lines(path: Path, upto: int | None, tmp: Path) -> Path:
    if upto is None:
        return path
    cut = tmp / f"{path.stem}.first{upto}{path.suffix}"
    cut.write_text("\n".join(path.read_text(encoding="utf-8").splitlines()[:upto]) + "\n", encoding="utf-8")
    return cut


CUSTOMERS = {"dbo.customers": CUSTOMER_COLUMNS}
# (id, capture, lines applied (None: all), format, articles, fold, expected rows per article)
CASES: list[tuple[str, Path, int | None, str, dict[str, Any], bool, dict[str, list[dict[str, Any]]]]] = [
    # sqlserver.adoc create: customer 1005 inserted
    (
        "doc_create",
        DBZ / "sqlserver_doc_customers.jsonl",
        1,
        "debezium",
        CUSTOMERS,
        False,
        {"dbo.customers": [JOHN]},
    ),
    # sqlserver.adoc update: its email becomes noreply@example.org
    (
        "doc_create_update",
        DBZ / "sqlserver_doc_customers.jsonl",
        2,
        "debezium",
        CUSTOMERS,
        False,
        {"dbo.customers": [dict(JOHN, email="noreply@example.org")]},
    ),
    # sqlserver.adoc delete: no row
    (
        "doc_create_update_delete",
        DBZ / "sqlserver_doc_customers.jsonl",
        None,
        "debezium",
        CUSTOMERS,
        False,
        {"dbo.customers": []},
    ),
    (
        "doc_bare_create_update",
        DBZ / "sqlserver_doc_customers.bare.jsonl",
        2,
        "debezium",
        CUSTOMERS,
        False,
        {"dbo.customers": [dict(JOHN, email="noreply@example.org")]},
    ),
    (
        "doc_bare_all",
        DBZ / "sqlserver_doc_customers.bare.jsonl",
        None,
        "debezium",
        CUSTOMERS,
        False,
        {"dbo.customers": []},
    ),
    # sqlserver.adoc key change (delete + tombstone + create at one LSN): 1005 becomes 1006
    (
        "doc_key_change",
        DBZ / "sqlserver_doc_key_change.jsonl",
        None,
        "debezium",
        CUSTOMERS,
        False,
        {"dbo.customers": [dict(JOHN, id=1006)]},
    ),
    (
        "doc_key_change_folded",
        DBZ / "sqlserver_doc_key_change.jsonl",
        None,
        "debezium",
        CUSTOMERS,
        True,
        {"dbo.customers": [dict(JOHN, id=1006)]},
    ),
    # sqlserver.adoc BEGIN/END: the END's two events, one per table
    (
        "doc_transaction",
        DBZ / "sqlserver_doc_transaction.jsonl",
        None,
        "debezium",
        {"dbo.tablea": SIMPLE, "dbo.tableb": SIMPLE},
        False,
        {"dbo.tablea": [{"pk": 2, "aa": 1}], "dbo.tableb": [{"pk": 2, "aa": 1}]},
    ),
    # serde-update.json (MySQL): Anne-Marie -> Anne
    (
        "serde_update",
        DBZ / "mysql_serde_update.jsonl",
        None,
        "debezium",
        {"inventory.customers": CUSTOMER_COLUMNS},
        False,
        {
            "inventory.customers": [
                {"id": 1004, "first_name": "Anne", "last_name": "Kretchmar", "email": "annek@noanswer.org"}
            ]
        },
    ),
    # dataformat.md: insert of row 1, then the update of m and c; then the delete: no row
    (
        "maxwell_insert_update",
        MAXWELL / "dataformat_e.jsonl",
        2,
        "maxwell",
        {"test.e": TABLE_E},
        False,
        {"test.e": [E1]},
    ),
    (
        "maxwell_all",
        MAXWELL / "dataformat_e.jsonl",
        None,
        "maxwell",
        {"test.e": TABLE_E},
        False,
        {"test.e": []},
    ),
    # dataformat.md transaction grouping: xid 142 (inserts 2 and 3, updates 2), xid 155 deletes 3
    (
        "maxwell_transactions",
        MAXWELL / "dataformat_transactions.jsonl",
        None,
        "maxwell",
        {"test.e": TABLE_E},
        False,
        {"test.e": [{"id": 2, "m": 1.5, "c": "2016-10-21T05:40:00.000000", "comment": "two, updated"}]},
    ),
]


# make test applies two (each a run of its own, ~30 s on two cores); make test-e2e every one.
QUICK = {"doc_key_change_folded", "maxwell_all"}


@pytest.mark.parametrize(
    ("name", "capture", "upto", "fmt", "arts", "fold", "expected"),
    [pytest.param(*c, id=c[0], marks=() if c[0] in QUICK else pytest.mark.e2e) for c in CASES],
)
def test_capture_example_converges_to_its_documented_rows(
    spark, pg, tmp_path, name, capture, upto, fmt, arts, fold, expected
):
    cfg = config(f"cap_{name}", arts)
    target = pg.subscriber(f"cap_{name}")
    result = applier.run(
        cfg,
        target,
        spark=spark,
        changes=_lines(capture, upto, tmp_path),
        changes_format=fmt,
        capture=Options(fold_key_changes=fold),
    )
    (sub,) = result.subscriptions
    assert sub.verdict is applier.Verdict.CONVERGED, sub.check.to_json()
    by_name = {a.name: a for a in cfg.articles}
    for art, want in expected.items():
        article = by_name[art]
        canonical = [{c.name: validate_encoded(c, r.get(c.name)) for c in article.replicated} for r in want]
        assert _held(target, article) == sorted(canonical, key=lambda r: [r[k] for k in article.key]), art


def test_a_bad_line_applies_nothing(spark, pg, tmp_path):
    """A capture with one good transaction and a line whose value does not fit its column:
    the run is refused naming file:line and the field, and the subscriber has no row."""
    lines = (DBZ / "sqlserver_doc_customers.jsonl").read_text(encoding="utf-8").splitlines()
    bad = lines[1].replace("noreply@example.org", "x" * 300)
    path = tmp_path / "bad.jsonl"
    path.write_text(lines[0] + "\n" + bad + "\n", encoding="utf-8")
    cfg = config("cap_bad", CUSTOMERS)
    target = pg.subscriber("cap_bad")
    with pytest.raises(
        InputError, match=r"bad\.jsonl:2: payload\.after\.email: column 'email' \(nvarchar\(255\)\)"
    ):
        applier.run(cfg, target, spark=spark, changes=path, changes_format="debezium")
    assert not rows(
        target,
        "SELECT 1 FROM information_schema.tables WHERE table_schema = 'dbo' AND table_name = 'customers'",
    ) or not rows(target, 'SELECT * FROM "dbo"."customers"')


@pytest.mark.e2e  # make bench-capture does the same at 1,000,000 events
def test_generated_capture_converts_like_its_canonical_twin(spark, tmp_path):
    """tests/support/debezium_capture.py: N Debezium events (with the envelope) and the same
    changes as a canonical file convert to the same canonical rows (positions numbered alike)."""
    from applier import api

    cfg, dbz, canonical = write_debezium_capture(tmp_path, events=300, seed=5)
    a = api.convert(cfg, dbz, tmp_path / "from_dbz", changes_format="debezium", spark=spark)
    b = api.convert(cfg, canonical, tmp_path / "from_canonical", spark=spark)
    assert a.commands == b.commands == 300 and a.transactions == b.transactions

    def read(folder: Path) -> list[dict[str, Any]]:
        out = []
        for f in sorted(folder.rglob("*.json*")):
            for line in f.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    r = json.loads(line)
                    r.pop("source", None)
                    out.append(r)
        return sorted(out, key=lambda r: r["lsn"])

    assert read(a.changes) == read(b.changes)


def _key_chain_capture(path: Path, article: str) -> Path:
    """sqlserver.adoc's key change twice over (the seed's chain 1 -> 2 -> 3): each a delete, a
    tombstone and a create sharing one change LSN (event_serial_no 1 and 2)."""
    schema, table = article.split(".")

    def ev(op: str, before: Any, after: Any, n: int, serial: int) -> str:
        src = {
            "connector": "sqlserver",
            "db": "testDB",
            "schema": schema,
            "table": table,
            "change_lsn": f"00000030:{n:08x}:0003",
            "commit_lsn": f"00000030:{n:08x}:0005",
            "event_serial_no": serial,
        }
        return json.dumps({"before": before, "after": after, "source": src, "op": op})

    def row(i: int) -> dict[str, Any]:
        return {"id": i, "v": "x", "n": 0}

    lines = [
        ev("d", row(1), None, 0x100, 1),
        "null",
        ev("c", None, row(2), 0x100, 2),
        ev("d", row(2), None, 0x200, 1),
        "null",
        ev("c", None, row(3), 0x200, 2),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.e2e
@pytest.mark.parametrize("fold", [False, True], ids=["as-delivered", "folded"])
def test_debezium_key_changes_folded_reproduce_20598(spark, pg, tmp_path, fold):
    """The key chain 1 -> 2 -> 3 captured by Debezium (delete + create per key change), in one
    round on streams that put keys 1 and 2 apart: as delivered, each key's commands stay on its
    stream and nothing conflicts; folded into key updates (--fold-key-changes), the second
    update finds no row on its stream (20598), the round is re-applied on one connection, and
    both converge to the one row of key 3."""
    from tests.support.changes import key_update, write_jsonl
    from tests.support.runs import config as plain_config
    from tests.support.runs import run, streams_of
    from tests.support.subscriber import table_ref

    table = f"dbz_chain_{'folded' if fold else 'delivered'}"
    art = f"dbo.{table}"
    chain = [key_update(1 << 20 | 1, 1, art, 1, 2), key_update(2 << 20 | 1, 2, art, 2, 3)]
    n = next(
        k for k in range(2, 9) if len(set(streams_of(spark, plain_config(table), chain, k, tmp_path))) == 2
    )
    cfg = plain_config(table, streams=n, batch=100)
    snap = write_jsonl(tmp_path / "snap.jsonl", [{"article": art, "image": {"id": 1, "v": "x", "n": 0}}])
    target = pg.subscriber(table)
    result, report = run(
        spark,
        cfg,
        target,
        changes=_key_chain_capture(tmp_path / "chain.jsonl", art),
        snapshot=snap,
        changes_format="debezium",
        capture=Options(fold_key_changes=fold),
    )
    assert report["verdict"] == "converged" and result.exit_code == 0
    assert rows(target, f"SELECT id FROM {table_ref(target, table)}") == [(3,)]
    if fold:
        assert report["conflicts"]["row_not_found"] >= 1 and report["resets"] == 1
    else:
        assert report["conflicts"]["row_not_found"] == 0 and report["resets"] == 0
