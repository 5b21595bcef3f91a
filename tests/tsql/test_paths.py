"""The skip policy under SET XACT_ABORT ON, and set-based apply (OPENJSON set procedures and the
JSON snapshot load) converging with the row procedures, on a T-SQL engine: the embedded Babelfish
(``make test-tsql``), and SQL Server 2022 in a container where a Docker engine runs (``pytest -m
docker tests/tsql``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from applier.apply.bulk import BulkCall
from applier.apply.install import install
from applier.apply.policy import send_with_policy
from applier.apply.sender import Sender
from applier.config import ErrorPolicy, parse_config
from applier.dialects.tsql import TsqlDialect
from applier.plan.calls import Planner
from applier.targets.endpoint import Endpoint

D = TsqlDialect()  # the engine's own (Babelfish's flags there): set by the conn fixture


@pytest.fixture
def conn(sqlserver: Endpoint) -> Iterator[Any]:
    global D
    D = sqlserver.dialect
    c = sqlserver.connect(2000)
    yield c
    D.rollback(c)
    c.close()


def _articles(spec: list[dict[str, Any]]) -> list[Any]:
    return list(parse_config({"articles": spec}, "<mssql paths>").articles)


def _row(article: str, key: Any, lsn: int, op: str, before: Any, after: Any, changed: Any = None) -> dict:
    return {
        "lsn": lsn,
        "xact_seqno": lsn,
        "xact_index": 0,
        "article": article,
        "op": op,
        "before": None if before is None else json.dumps(before),
        "after": None if after is None else json.dumps(after),
        "changed": changed,
        "key_before": None if before is None else json.dumps(key(before)),
        "key_after": None if after is None else json.dumps(key(after)),
        "stream": 0,
        "round": 0,
    }


def _select(conn: Any, article: Any) -> list[tuple]:
    cols = ", ".join(D.quote(c.name) for c in article.columns)
    rows = conn.cursor().execute(f"SELECT {cols} FROM {D.table(article)} ORDER BY 1, 2").fetchall()
    conn.commit()
    return [tuple(r) for r in rows]


# -- the skip policy -------------------------------------------------------------------------
VENDOR_COLS = [
    {"name": "VendorID", "type": "int", "key": True},
    {"name": "Name", "type": "nvarchar(50)"},
    {"name": "CreditRating", "type": "tinyint"},
    {"name": "ModifiedDate", "type": "datetime"},
]


def _vendor(k: int, name: str, rating: int = 1) -> dict[str, Any]:
    return {"VendorID": k, "Name": name, "CreditRating": rating, "ModifiedDate": "2024-05-01T10:11:12.123000"}


def _vkey(img: dict[str, Any]) -> list[Any]:
    return [img["VendorID"]]


def test_the_skip_policy_skips_2627_and_20598_in_one_transaction_and_commits_the_rest(
    sqlserver: Endpoint, conn: Any
) -> None:
    (art,) = _articles([{"name": "Purchasing.SkipVendor", "columns": VENDOR_COLS, "update": "SCALL"}])
    install(sqlserver, [art], "mssql-skip")
    sender = Sender(conn, D, Planner(D, [art]), 0)
    assert sender.send(sender.calls([_row(art.name, _vkey, 1, "I", None, _vendor(1, "one"))])) is None
    conn.commit()
    rows = [
        _row(art.name, _vkey, 2, "I", None, _vendor(2, "two")),
        _row(art.name, _vkey, 3, "I", None, _vendor(1, "dup")),  # 2627: key 1 is there
        _row(art.name, _vkey, 4, "U", _vendor(99, "x"), _vendor(99, "y"), ["Name"]),  # 20598
        _row(art.name, _vkey, 5, "I", None, _vendor(3, "three")),
        _row(art.name, _vkey, 6, "U", _vendor(2, "two"), _vendor(2, "TWO", 7), ["Name", "CreditRating"]),
    ]
    policy = ErrorPolicy.parse("skip:2627:20598")
    skipped, failure = send_with_policy(sender, sender.calls(rows), [], lambda f: policy.skips(f.cls, f.code))
    assert failure is None, failure
    assert [(r["lsn"], f.code) for r, f in skipped] == [(3, "2627"), (4, "20598")]
    state = conn.cursor().execute("SELECT @@TRANCOUNT, XACT_STATE(), @@OPTIONS & 16384").fetchone()
    assert tuple(state) == (1, 1, 16384)  # one transaction level for the commit; XACT_ABORT ON again
    conn.commit()
    got = [(r[0], r[1], r[2]) for r in _select(conn, art)]
    assert got == [(1, "one", 1), (2, "TWO", 7), (3, "three", 1)]  # everything but the skipped two


def test_an_error_that_rolls_the_transaction_back_is_not_skipped(
    sqlserver: Endpoint, conn: Any, tmp_path: Path
) -> None:
    # A custom insert procedure with XACT_ABORT ON of its own: its duplicate key rolls the whole
    # transaction back (XACT_STATE() = 0), so no savepoint is left to undo it with.
    custom = tmp_path / "abort.sql"
    custom.write_text(
        "if object_id(N'[dbo].[ins_abort]', N'P') is not null drop procedure [dbo].[ins_abort]\ngo\n"
        "create procedure [dbo].[ins_abort] @c1 int, @c2 nvarchar(50), @c3 tinyint, @c4 datetime\n"
        "as\nbegin\n\tset xact_abort on;\n"
        "\tinsert into [Purchasing].[AbortVendor] values (@c1, @c2, @c3, @c4);\nend\n",
        encoding="utf-8",
    )
    spec = {"name": "Purchasing.AbortVendor", "columns": VENDOR_COLS, "insert": "CALL dbo.ins_abort"}
    (art,) = _articles([spec])
    install(sqlserver, [art], "mssql-skip-abort", custom_sql=[custom])
    sender = Sender(conn, D, Planner(D, [art]), 0)
    assert sender.send(sender.calls([_row(art.name, _vkey, 1, "I", None, _vendor(1, "one"))])) is None
    conn.commit()
    rows = [
        _row(art.name, _vkey, 2, "I", None, _vendor(2, "two")),
        _row(art.name, _vkey, 3, "I", None, _vendor(1, "dup")),
    ]
    policy = ErrorPolicy.parse("skip:2627")
    skipped, failure = send_with_policy(sender, sender.calls(rows), [], lambda f: policy.skips(f.cls, f.code))
    D.rollback(conn)
    assert skipped == [] and failure is not None
    assert (failure.code, failure.lsn) == ("2627", 3)  # the error stands, naming its command
    assert "not skipped" in failure.message and "XACT_STATE() = 0" in failure.message
    assert conn.cursor().execute("SELECT @@OPTIONS & 16384").fetchone()[0] == 16384
    conn.commit()
    assert [r[0] for r in _select(conn, art)] == [1]


# -- set-based apply ---------------------------------------------------------------------------
SET_COLS = [
    {"name": 'k"1', "type": "int", "key": True},
    {"name": "b key]", "type": "varbinary(8)", "key": True},
    {"name": "_m", "type": "int"},
    {"name": "amount", "type": "decimal(12,2)"},
    {"name": "at", "type": "datetime2"},
    {"name": "old", "type": "datetime"},
    {"name": "flag", "type": "bit"},
    {"name": "note's", "type": "nvarchar(30)"},
]


def _set_articles() -> list[Any]:
    return _articles(
        [{"name": f"set{x}.t b'", "columns": SET_COLS, "update": "SCALL"} for x in ("bulk", "rows")]
    )


def _img(k: int, m: int, amount: str, note: str | None) -> dict[str, Any]:
    return {
        'k"1': k,
        "b key]": base64.b64encode(bytes([k, 255])).decode(),
        "_m": m,
        "amount": amount,
        "at": f"2024-05-0{1 + k % 8}T10:11:12.123456",
        "old": f"2024-05-0{1 + k % 8}T10:11:12.123000",
        "flag": k % 2 == 0,
        "note's": note,
    }


def _skey(img: dict[str, Any]) -> list[Any]:
    return [img['k"1'], img["b key]"]]


def _script(article: str) -> list[dict]:
    out = [_row(article, _skey, k, "I", None, _img(k, k, f"{k}.50", "n")) for k in range(1, 7)]
    lsn = 10
    for k, m, amount, note, changed in [
        (1, 11, "1.50", "n", ["_m"]),
        (2, 2, "99.99", None, ["amount", "note's"]),
        (1, 11, "7.25", "n", ["amount"]),  # second update of key 1: merges with the first
        (3, 3, "3.50", "é'\"; DROP 名前", ["note's"]),
    ]:
        out.append(_row(article, _skey, lsn, "U", _img(k, k, "0.00", "n"), _img(k, m, amount, note), changed))
        lsn += 1
    out.append(_row(article, _skey, lsn, "D", _img(4, 4, "4.50", "n"), None))
    out.append(_row(article, _skey, lsn + 1, "D", _img(5, 5, "5.50", "n"), None))
    out.append(_row(article, _skey, lsn + 2, "I", None, _img(4, 40, "40.00", "back")))  # re-insert
    return out


def test_set_procedures_leave_the_rows_the_row_procedures_leave(sqlserver: Endpoint, conn: Any) -> None:
    bulk_art, rows_art = _set_articles()
    installed = install(sqlserver, [bulk_art, rows_art], "mssql-set", set_apply=True)
    assert D.qualified(*D.set_proc_name(bulk_art, "U")) in installed
    planner = Planner(D, [bulk_art, rows_art])
    for art, set_apply in ((bulk_art, True), (rows_art, False)):
        sender = Sender(conn, D, planner, 0, set_apply=set_apply)
        calls = sender.calls(_script(art.name))
        assert any(isinstance(c, BulkCall) for _, c in calls) is set_apply
        assert sender.send(calls) is None
        conn.commit()
    got = _select(conn, bulk_art)
    assert got == _select(conn, rows_art)
    assert [r[0] for r in got] == [1, 2, 3, 4, 6]
    by_key = {r[0]: r for r in got}
    assert by_key[1][2] == 11 and str(by_key[1][3]) == "7.25"  # both updates of key 1 landed
    assert by_key[2][7] is None and by_key[3][7] == "é'\"; DROP 名前"
    assert by_key[4][2] == 40 and bytes(by_key[4][1]) == bytes([4, 255])
    assert by_key[2][6] is True and str(by_key[2][4]) == "2024-05-03 10:11:12.123456"


def test_the_json_snapshot_load_inserts_typed_rows(sqlserver: Endpoint, conn: Any) -> None:
    bulk_art, _ = _set_articles()
    install(sqlserver, [bulk_art], "mssql-set-load", set_apply=True)
    sql = D.bulk_insert_sql(bulk_art)
    assert sql is not None
    conn.cursor().execute(sql, json.dumps([_img(k, k, f"{k}.25", "s") for k in (7, 8)]))
    conn.commit()
    got = _select(conn, bulk_art)
    assert [(r[0], bytes(r[1]), str(r[3]), r[6]) for r in got] == [
        (7, bytes([7, 255]), "7.25", False),
        (8, bytes([8, 255]), "8.25", True),
    ]


def test_a_missing_row_raises_20598_naming_its_key(sqlserver: Endpoint, conn: Any) -> None:
    bulk_art, _ = _set_articles()
    install(sqlserver, [bulk_art], "mssql-set-missing", set_apply=True)
    sender = Sender(conn, D, Planner(D, [bulk_art]), 3, set_apply=True)
    assert (
        sender.send(sender.calls([_row(bulk_art.name, _skey, 1, "I", None, _img(1, 1, "1.00", "a"))])) is None
    )
    conn.commit()
    for op, before, after, changed in (
        ("U", _img(77, 7, "1.00", "a"), _img(77, 7, "2.00", "a"), ["amount"]),
        ("D", _img(77, 7, "1.00", "a"), None, None),
    ):
        found = _row(
            bulk_art.name, _skey, 2, op, _img(1, 1, "1.00", "a"), after and _img(1, 1, "2.00", "a"), changed
        )
        calls = sender.calls([found, _row(bulk_art.name, _skey, 3, op, before, after, changed)])
        assert len(calls) == 1 and isinstance(calls[0][1], BulkCall)
        failure = sender.send(calls)
        D.rollback(conn)
        assert failure is not None
        assert (failure.cls, failure.code, failure.lsn, failure.stream) == ("row_not_found", "20598", 3, 3)
        if D.STAND_IN_THROWS:  # Babelfish's stand-in raises the bare number (RAISERROR(20598))
            assert '[k"1] = 77' in failure.message, failure.message
        assert [str(r[3]) for r in _select(conn, bulk_art)] == ["1.00"]  # rolled back: key 1 as it was
