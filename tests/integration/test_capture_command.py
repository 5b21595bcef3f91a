"""``applier capture`` against a live publisher (issue 31): the embedded PostgreSQL with
``wal_level = logical`` (tests/support/publisher.py), rows present before the slot, changes
after it (inserts, updates, a key change, deletes, a multi-statement transaction); each format
captured with its slot's snapshot and applied at N = 4 into a database of its own, which must
converge and hold the publisher's tables row for row. The wal2json2 slot is created after half
the changes, so its snapshot differs from the first one's. Then the refusals, one line each
with exit code 2, a password kept out of every output, and a capture killed (kill -9) between
writing a batch and confirming it, then continued: every transaction once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import applier
from applier.catalog.files import articles_toml
from applier.catalog.target import read_target
from applier.cli import main
from applier.config import load_config, with_overrides
from tests.support.publisher import Publisher, start_publisher, text_rows

pytestmark = pytest.mark.integration

TABLES = ("public.orders", "public.lines")
DDL = (
    "CREATE TABLE public.orders (id integer PRIMARY KEY, customer varchar(40) NOT NULL, "
    "amount numeric(12,2), updated timestamptz NOT NULL, note text)",
    "CREATE TABLE public.lines (order_id integer, n integer, qty integer NOT NULL, sku text, "
    "PRIMARY KEY (order_id, n))",
    # a table left out by --tables: its changes are not captured
    "CREATE TABLE public.audit (id serial PRIMARY KEY, what text)",
)
BEFORE = (
    "INSERT INTO public.orders SELECT i, 'c' || i, i * 1.25, timestamptz '2024-03-10 01:30:00-05' "
    "+ i * interval '1 hour', CASE WHEN i % 3 = 0 THEN NULL ELSE 'n' || i END FROM generate_series(1, 20) i",
    "INSERT INTO public.lines SELECT i % 20 + 1, i, i * 2, 's' || i FROM generate_series(1, 40) i",
    "INSERT INTO public.audit (what) VALUES ('before')",
)
# Transactions after the first slot; the second slot starts after FIRST of them.
CHANGES: list[list[str]] = [
    ["INSERT INTO public.orders VALUES (21, 'new', 5.00, now(), 'it''s new')"],
    ["UPDATE public.orders SET amount = amount + 1, note = 'up' WHERE id <= 5"],
    ["UPDATE public.orders SET id = 120 WHERE id = 20"],  # a key change
    ["DELETE FROM public.lines WHERE order_id = 3", "DELETE FROM public.orders WHERE id = 3"],
    ["INSERT INTO public.audit (what) VALUES ('ignored')"],
    [  # one transaction, several statements and tables
        "INSERT INTO public.orders VALUES (22, 'multi', NULL, '2024-11-03 01:30:00-04', NULL)",
        "INSERT INTO public.lines VALUES (22, 1, 7, 'a'), (22, 2, 8, NULL)",
        "UPDATE public.lines SET n = n + 100 WHERE order_id = 22",  # key change of two rows
        "UPDATE public.orders SET customer = 'ümlaut' WHERE id = 22",
        "DELETE FROM public.lines WHERE order_id = 4 AND n > 20",
    ],
    ["UPDATE public.lines SET qty = qty * 3 WHERE qty > 40"],
]
FIRST = 3
SECRET = "Sup3r-S3cret-31"


def rows(cs: str, table: str) -> list[tuple[Any, ...]]:
    """Every row as text, read in UTC, ordered by its key."""
    return text_rows(cs, table, "1, 2")


def capture(*args: str) -> int:
    return main(["capture", *args])


@pytest.fixture(scope="module")
def publisher() -> Iterator[Publisher]:
    with start_publisher(timezone="America/St_Johns") as pub:
        pub.execute(*DDL, *BEFORE)
        yield pub


@pytest.fixture(scope="module")
def captured(publisher: Publisher, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("capture")
    src = publisher.connection_string
    tables = ",".join(TABLES)
    common = ("--source", src, "--tables", tables, "--create-slot")
    assert capture(*common, "--slot", "cap1", "--format", "wal2json", "--out", str(folder / "v1.jsonl"),
                   "--snapshot", str(folder / "snap1.jsonl")) == 0  # fmt: skip
    for tx in CHANGES[:FIRST]:
        publisher.transaction(*tx)
    assert capture(*common, "--slot", "cap2", "--format", "wal2json2", "--out", str(folder / "v2.jsonl"),
                   "--snapshot", str(folder / "snap2.jsonl")) == 0  # fmt: skip
    for tx in CHANGES[FIRST:]:
        publisher.transaction(*tx)
    for slot, fmt, out in (("cap1", "wal2json", "v1"), ("cap2", "wal2json2", "v2")):
        args = ("--source", src, "--slot", slot, "--format", fmt, "--tables", tables)
        assert capture(*args, "--out", str(folder / f"{out}.jsonl")) == 0
    catalog = read_target(src, list(TABLES))
    articles = folder / "articles.toml"
    articles.write_text(articles_toml(catalog, "the publisher"), encoding="utf-8")
    expected = {t: rows(src, t) for t in TABLES}
    return {"folder": folder, "articles": articles, "expected": expected}


def test_the_snapshots_are_the_tables_at_each_slots_start(captured: dict[str, Any]) -> None:
    folder = captured["folder"]
    snap1 = [json.loads(x) for x in (folder / "snap1.jsonl").read_text().splitlines()]
    snap2 = [json.loads(x) for x in (folder / "snap2.jsonl").read_text().splitlines()]
    assert len(snap1) == 20 + 40 and {r["article"] for r in snap1} == set(TABLES)
    ids1 = {r["image"]["id"] for r in snap1 if r["article"] == "public.orders"}
    ids2 = {r["image"]["id"] for r in snap2 if r["article"] == "public.orders"}
    assert 21 not in ids1 and {21, 120} <= ids2 and 20 not in ids2
    first = next(r["image"] for r in snap1 if r["article"] == "public.orders" and r["image"]["id"] == 1)
    assert first == {
        "id": 1,
        "customer": "c1",
        "amount": "1.25",
        "updated": "2024-03-10T07:30:00.000000+00:00",  # the instant, in UTC
        "note": "n1",
    }
    v1 = (folder / "v1.jsonl").read_text().splitlines()
    assert len(v1) == len(CHANGES)  # one line a transaction
    assert '"change":[]' in v1[4] and "audit" not in "".join(v1)  # --tables left its change out


@pytest.mark.parametrize("version", [1, 2])
def test_a_capture_applied_at_four_streams_converges_to_the_publishers_rows(
    spark: Any, pg: Any, captured: dict[str, Any], version: int
) -> None:
    database = f"cap31_v{version}"
    target = pg.subscriber(database)
    config = with_overrides(load_config(captured["articles"]), run={"streams": 4})
    folder = captured["folder"]
    result = applier.run(
        config,
        pg.endpoint(database),
        spark=spark,
        changes=folder / f"v{version}.jsonl",
        snapshot=folder / f"snap{version}.jsonl",
        changes_format="wal2json" if version == 1 else "wal2json2",
    )
    (sub,) = result.subscriptions
    assert sub.verdict is applier.Verdict.CONVERGED, sub.check.reason or sub.check.to_json()
    for table in TABLES:
        assert rows(target.connection_string, table) == captured["expected"][table], table


def test_each_run_records_what_it_asked_the_slot_for(publisher: Publisher, captured: dict[str, Any]) -> None:
    """``FILE.meta`` beside each capture: a line a run (the one that made the slot, the one that
    continued), with the options, whether numbers came as strings (wal2json 2.6 and later), and
    otherwise the published columns whose NaN or ±Infinity would arrive as NULL."""
    folder = captured["folder"]
    for name, slot, fmt, version in (("v1", "cap1", "wal2json", "1"), ("v2", "cap2", "wal2json2", "2")):
        takes = publisher.takes_numbers_as_strings(slot)
        entries = [json.loads(x) for x in (folder / f"{name}.jsonl.meta").read_text().splitlines()]
        assert len(entries) == 2, entries
        for e in entries:
            assert e["slot"] == slot and e["format"] == fmt
            assert e["wal2json_options"] == {
                "format-version": version,
                "include-lsn": "1",
                "include-xids": "1",
                "actions": "insert,update,delete",
                "add-tables": ",".join(TABLES),
                **({"numeric-data-types-as-string": "1"} if takes else {}),
            }
            assert e["numeric-data-types-as-string"] is takes
            assert e["nan_as_null_columns"] == ([] if takes else ["public.orders.amount (numeric(12,2))"])
            assert (e["warning"] is None) is takes


# -- refusals: exit code 2, one line naming the option ------------------------------------------
def _refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert capture(*args) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert SECRET not in out + err
    return lines[0]


def test_an_unknown_format_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    line = _refused(capsys, "--source", "Driver={PostgreSQL Unicode};Server=nowhere;Pwd=" + SECRET,
                    "--slot", "s", "--format", "wal2jsn", "--out", str(tmp_path / "x"))  # fmt: skip
    assert line == (
        "applier capture: --format: unknown format 'wal2jsn' (wal2json or wal2json2); did you mean 'wal2json'?"
    )


def test_a_missing_slot_without_create_slot_is_refused(
    publisher: Publisher, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # a role of its own whose password is SECRET: reached, then refused, the password nowhere
    publisher.execute("DROP ROLE IF EXISTS cap31", f"CREATE ROLE cap31 LOGIN REPLICATION PASSWORD '{SECRET}'")
    src = publisher.connection_string.replace("Uid=applier;Pwd=applier;", f"Uid=cap31;Pwd={SECRET};")
    assert SECRET in src
    line = _refused(
        capsys, "--source", src, "--slot", "nosuch", "--format", "wal2json", "--out", str(tmp_path / "x")
    )
    assert (
        line.startswith("applier capture: --slot: no replication slot 'nosuch'") and "--create-slot" in line
    )
    assert not (tmp_path / "x").exists()


def test_a_slot_of_another_plugin_is_refused(
    publisher: Publisher, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    publisher.execute("SELECT pg_create_logical_replication_slot('td31', 'test_decoding')")
    try:
        line = _refused(capsys, "--source", publisher.connection_string, "--slot", "td31",
                        "--format", "wal2json2", "--out", str(tmp_path / "x"))  # fmt: skip
    finally:
        publisher.execute("SELECT pg_drop_replication_slot('td31')")
    assert line == (
        "applier capture: --slot: slot 'td31' decodes with 'test_decoding', not wal2json "
        "(create another with --create-slot)"
    )


def test_a_publisher_without_logical_wal_is_refused(
    pg: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # the suite's subscriber server runs with PostgreSQL's default wal_level (replica)
    line = _refused(capsys, "--source", pg.connection_string(), "--slot", "s",
                    "--create-slot", "--format", "wal2json", "--out", str(tmp_path / "x"))  # fmt: skip
    assert line.startswith("applier capture: --source: the publisher runs with wal_level = replica;")


def test_an_unreachable_publisher_is_named_without_its_password(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    src = f"Driver={{PostgreSQL Unicode}};Server=127.0.0.1;Port=1;Database=p;Uid=u;Pwd={SECRET};"
    line = _refused(
        capsys, "--source", src, "--slot", "s", "--format", "wal2json", "--out", str(tmp_path / "x")
    )
    assert line.startswith("applier capture: --source: cannot reach the publisher ") and "Pwd=***" in line


# -- kill -9 between the write and the confirmation, then continued -----------------------------
def _cli(tmp_path: Path, *args: str, failpoint: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parents[2]), *sys.path]))
    if failpoint:
        env |= {"APPLIER_FAILPOINT": failpoint, "APPLIER_FAILPOINT_DIR": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "-m", "applier.cli", "capture", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,  # the fail point kills its session
        check=False,
    )


def test_a_capture_killed_after_writing_is_continued_without_doubles(
    publisher: Publisher, tmp_path: Path
) -> None:
    out = tmp_path / "k.jsonl"
    args = ("--source", publisher.connection_string, "--slot", "kill31", "--format", "wal2json2",
            "--tables", "public.audit", "--out", str(out))  # fmt: skip
    done = _cli(tmp_path, *args, "--create-slot")
    assert done.returncode == 0, done.stderr
    publisher.transaction(
        "INSERT INTO public.audit (what) VALUES ('a')", "INSERT INTO public.audit (what) VALUES ('b')"
    )
    publisher.transaction("UPDATE public.audit SET what = 'c' WHERE what = 'a'")
    killed = _cli(tmp_path, *args, failpoint="capture.written@1")
    assert killed.returncode == -9, killed.stderr
    with out.open("a") as f:
        f.write('{"action":"B","xid":1')  # a line cut by the kill too: dropped on the way
    publisher.transaction("DELETE FROM public.audit WHERE what = 'b'")
    again = _cli(tmp_path, *args)
    assert again.returncode == 0, again.stderr
    assert "continuing" in again.stdout and "1 changes in 1 transactions" in again.stdout
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["action"] for x in lines] == ["B", "I", "I", "C", "B", "U", "C", "B", "D", "C"]
    commits = [x["nextlsn"] for x in lines if x["action"] == "C"]
    assert len(set(commits)) == 3
    publisher.execute("SELECT pg_drop_replication_slot('kill31')")
