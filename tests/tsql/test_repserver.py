"""Replication Server semantics through ``applier.run`` on the embedded Babelfish (T-SQL over TDS):
the PostgreSQL tests of tests/integration/test_repserver_filters.py, test_repserver_schema.py and
test_repserver_sqldml.py, each subscriber a T-SQL database of its own on the Babelfish target.

- seed 000: a filtered subscription migrating rows (C1 from 1 to 2: a delete, an insert,
  nothing, the update), with an applied procedure written in T-SQL; a generated stream with key
  updates to two filtered subscriptions, one with a column list;
- seed 001: add, drop and retype columns mid-stream, the subscriber's shape read from sys.columns;
- seed 004: rs_sqldml at the threshold: statements where allowed, the row counts compared, the
  fallback to rows when they differ.

Identifiers go through the endpoint's dialect (``quote``, ``table``), catalog checks through the
sys views. Run with ``pytest -m tsql tests/tsql/test_repserver.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from applier.config import parse_config
from applier.targets.endpoint import Endpoint
from tests.support import repserver_schema as seed001
from tests.support import repserver_sqldml as seed004
from tests.support.changes import write_jsonl
from tests.support.runs import run_subscriptions

pytestmark = [pytest.mark.tsql]


# -- T-SQL-aware helpers -------------------------------------------------------------------------
def _rows(endpoint: Endpoint, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """A query on the subscriber, through applier's own connection (the dialect's session set-up)."""
    conn = endpoint.connect()
    try:
        return [tuple(r) for r in conn.cursor().execute(sql, *params).fetchall()]
    finally:
        endpoint.dialect.rollback(conn)
        conn.close()


def _columns(endpoint: Endpoint, table: str) -> list[tuple[str, str, int, int, int]]:
    """(name, type, max_length, precision, scale) of the table's columns, in column order, from
    sys.columns (``table`` is the dialect's quoted name, as OBJECT_ID reads it)."""
    assert _rows(endpoint, "SELECT OBJECT_ID(?)", table)[0][0] is not None, f"no table {table}"
    return _rows(  # type: ignore[return-value]
        endpoint,
        "SELECT c.name, t.name, c.max_length, c.precision, c.scale FROM sys.columns c "
        "JOIN sys.types t ON t.user_type_id = c.user_type_id "
        "WHERE c.object_id = OBJECT_ID(?) ORDER BY c.column_id",
        table,
    )


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# -- seed 000: filtered subscriptions and before/after routing -----------------------------------
T1 = "dbo.t1"


def _t1_config(subs: list[dict[str, Any]]):  # type: ignore[no-untyped-def]
    return parse_config(
        {
            "run": {"streams": 2, "commit_batch_size": 10},
            "articles": [
                {
                    "name": T1,
                    "columns": [
                        {"name": "id", "type": "int", "key": True},
                        {"name": "C1", "type": "int"},
                        {"name": "note", "type": "nvarchar(20)"},
                    ],
                }
            ],
            "subscriptions": subs,
        },
        "<tsql repserver>",
    )


# The applied procedure of seed 000 in T-SQL, as a DBA installs it (batches split on GO lines).
UPD_C1 = """
IF OBJECT_ID(N'dbo.upd_c1', N'P') IS NOT NULL DROP PROCEDURE dbo.upd_c1
GO
CREATE PROCEDURE dbo.upd_c1 @p_id int, @old_c1 int, @new_c1 int
AS
BEGIN
    UPDATE dbo.t1 SET C1 = @new_c1 WHERE id = @p_id AND C1 = @old_c1
END
GO
"""


def test_seed_000_update_c1_from_1_to_2(spark, babelfish, tmp_path):
    """Row 1: a plain update of C1 from 1 to 2. Row 2: the same update made by the applied
    procedure upd_c1(2, 1, 2), a T-SQL procedure: called on the full copy, where both images
    match; sent as the seed's delete / insert / nothing elsewhere."""
    cfg = _t1_config(
        [
            {"name": "c1_eq_1", "articles": [{"name": T1, "where": "C1 = 1"}]},
            {"name": "c1_eq_2", "articles": [{"name": T1, "where": "c1 = 2"}]},
            {"name": "c1_gt_2", "articles": [{"name": T1, "where": "`C1` > 2"}]},
            {"name": "full"},
        ]
    )
    snap = write_jsonl(
        tmp_path / "snap.jsonl",
        [{"article": T1, "image": {"id": i, "C1": 1, "note": "a"}} for i in (1, 2)],
    )
    changes = write_jsonl(
        tmp_path / "changes.jsonl",
        [
            {
                "lsn": 1 << 20 | 1,
                "xact_seqno": 1,
                "command_id": 1,
                "article": T1,
                "op": "U",
                "before": {"id": 1, "C1": 1, "note": "a"},
                "after": {"id": 1, "C1": 2, "note": "a"},
            },
            {
                "lsn": 2 << 20 | 1,
                "xact_seqno": 2,
                "command_id": 1,
                "article": T1,
                "op": "PROC",
                "procedure": {"procedure": "dbo.upd_c1", "params": [2, 1, 2], "rowcount": 1},
            },
            {
                "lsn": 2 << 20 | 2,
                "xact_seqno": 2,
                "command_id": 2,
                "article": T1,
                "op": "U",
                "before": {"id": 2, "C1": 1, "note": "a"},
                "after": {"id": 2, "C1": 2, "note": "a"},
            },
        ],
    )
    proc_sql = _write(tmp_path / "upd_c1.sql", UPD_C1)
    res, targets = run_subscriptions(
        spark, babelfish, cfg, "bbf_seed000", changes=changes, snapshot=snap, custom_sql=[proc_sql]
    )

    for s in res.subscriptions:
        assert s.verdict.value == "converged", (s.name, s.check.to_json())
    got = {s.name: s.routing for s in res.subscriptions}
    # the plain update, and (but on the full copy) the procedure's first row operation
    assert got == {"c1_eq_1": {"U>D": 2}, "c1_eq_2": {"U>I": 2}, "c1_gt_2": {}, "full": {"U>U": 1}}
    procs = {s.name: [p["sent_as"] for p in s.procedures] for s in res.subscriptions}
    assert procs == {"c1_eq_1": ["U>D"], "c1_eq_2": ["U>I"], "c1_gt_2": ["nothing"], "full": ["procedure"]}

    d = targets["full"].dialect
    art = cfg.article(T1)
    table, c1 = d.table(art), d.quote("C1")
    assert d.name == "babelfish"  # the engine was recognised: Babelfish's flags are in use
    assert _rows(targets["c1_eq_1"], f"SELECT id FROM {table}") == []  # the deletes went there
    assert _rows(targets["c1_eq_2"], f"SELECT id, {c1} FROM {table} ORDER BY id") == [
        (1, 2),
        (2, 2),
    ]  # inserts
    assert _rows(targets["c1_gt_2"], f"SELECT id FROM {table}") == []  # nothing
    assert _rows(targets["full"], f"SELECT id, {c1}, note FROM {table} ORDER BY id") == [
        (1, 2, "a"),
        (2, 2, "a"),
    ]
    # The full copy's row 2 was changed by the T-SQL procedure, which is installed there.
    proc = _rows(targets["full"], "SELECT OBJECT_ID(?, 'P')", d.qualified("dbo", "upd_c1"))
    assert proc[0][0] is not None
    assert res.exit_code == 0


def test_generated_stream_with_key_updates_converges_per_filter(spark, babelfish):
    """A generated stream (inserts, updates, deletes, key updates) to two filtered
    subscriptions, one with a column list: rows move in and out of each filter, keys change,
    and each subscriber converges to the oracle filtered its way."""
    cfg = parse_config(
        {
            "run": {"streams": 2, "commit_batch_size": 20},
            "workload": {
                "kind": "uniform",
                "initial_rows": 60,
                "transactions": 60,
                "commands_per_transaction": 3,
                "key_update_share": 0.1,
            },
            "articles": [
                {
                    "name": "dbo.gen",
                    "columns": [
                        {"name": "id", "type": "int", "key": True},
                        {"name": "v", "type": "nvarchar(40)"},
                        {"name": "n", "type": "int"},
                    ],
                }
            ],
            "subscriptions": [
                {
                    "name": "even_n",
                    "articles": [{"name": "dbo.gen", "where": "n % 2 = 0", "columns": ["id", "n"]}],
                },
                {"name": "low_ids", "articles": [{"name": "dbo.gen", "where": "id < 40 AND v IS NOT NULL"}]},
            ],
        },
        "<tsql generated>",
    )
    res, targets = run_subscriptions(spark, babelfish, cfg, "bbf_generated")
    for s in res.subscriptions:
        assert s.verdict.value == "converged", (s.name, s.check.to_json())
        assert s.check.rows_found > 0
    # Rows did migrate: updates became deletes and inserts somewhere.
    migrated = sum(s.routing.get("U>D", 0) + s.routing.get("U>I", 0) for s in res.subscriptions)
    assert migrated > 0, [s.routing for s in res.subscriptions]
    table = targets["even_n"].dialect.table(cfg.article("dbo.gen"))
    # the column list on one, every column on the other
    assert [c[0] for c in _columns(targets["even_n"], table)] == ["id", "n"]
    assert [c[0] for c in _columns(targets["low_ids"], table)] == ["id", "v", "n"]
    # each subscriber holds only rows of its filter
    n_col = targets["even_n"].dialect.quote("n")
    assert _rows(
        targets["even_n"], f"SELECT count(*) FROM {table} WHERE {n_col} % 2 <> 0 OR {n_col} IS NULL"
    ) == [(0,)]
    assert _rows(targets["low_ids"], f"SELECT count(*) FROM {table} WHERE id >= 40 OR v IS NULL") == [(0,)]


# -- seed 001: schema changes mid-stream -----------------------------------------------------------
def test_add_drop_retype_mid_stream_converges_at_n4(spark, babelfish, tmp_path):
    """Old rows, add a column, rows with values for it, drop a column, more rows, int ->
    decimal(12,2), more rows: each change a barrier (drain, alter, regenerate, resume)."""
    art = seed001.ART
    cfg = parse_config(
        {
            "run": {"streams": 4, "commit_batch_size": 2},
            "articles": [
                {
                    "name": art,
                    "columns": [
                        {"name": "id", "type": "int", "key": True},
                        {"name": "qty", "type": "int"},
                        {"name": "note", "type": "nvarchar(10)"},
                        {"name": "old", "type": "nvarchar(10)"},
                    ],
                }
            ],
            "subscriptions": [{"name": "copy"}],
        },
        "<tsql schema>",
    )
    snap = write_jsonl(
        tmp_path / "snap.jsonl",
        [{"article": art, "image": {"id": i, "qty": i, "note": f"n{i}", "old": "o"}} for i in range(1, 5)],
    )
    changes = write_jsonl(tmp_path / "changes.jsonl", seed001.stream())
    res, targets = run_subscriptions(spark, babelfish, cfg, "bbf_schema", changes=changes, snapshot=snap)
    target = targets["copy"]
    sub = res.subscription("copy")

    assert sub.verdict.value == "converged", sub.check.to_json()
    assert [c["version"] for c in sub.schema_changes] == [2, 3, 4]
    assert sub.summary.segments == 4  # the stream was cut at each change
    d = target.dialect
    table = d.table(cfg.article(art))
    cols = _columns(target, table)
    # (name, type, max_length, precision, scale): "old" is gone, qty is decimal(12,2), extra
    # nvarchar(20) (max_length in bytes: 2 per character).
    assert [(n, t) for n, t, *_ in cols] == [
        ("id", "int"),
        ("qty", "decimal"),
        ("note", "nvarchar"),
        ("extra", "nvarchar"),
    ], cols
    shape = {n: rest for n, _, *rest in cols}
    assert shape["qty"][1:] == [12, 2], cols
    assert shape["extra"][0] == 40 and shape["note"][0] == 20, cols
    # No value of the added column is lost.
    extra = _rows(
        target, f"SELECT id, {d.quote('extra')} FROM {table} WHERE {d.quote('extra')} IS NOT NULL ORDER BY id"
    )
    assert extra == [(2, "x2"), (9, "x9b")] + [(i, f"x{i}") for i in (10, 11, 12, 13, 14, 15, 16)]
    qty = dict(_rows(target, f"SELECT id, {d.quote('qty')} FROM {table} WHERE id IN (1, 13, 16)"))
    assert {k: str(v) for k, v in qty.items()} == {1: "10.00", 13: "13.25", 16: "16.50"}
    # The procedures were regenerated for the last shape: the insert procedure takes qty as
    # decimal(12,2) and extra, not old (sys.all_parameters: Babelfish has no sys.parameters).
    params = _rows(
        target,
        "SELECT p.name, t.name, p.precision, p.scale FROM sys.all_parameters p "
        "JOIN sys.types t ON t.user_type_id = p.user_type_id "
        "WHERE p.object_id = OBJECT_ID(?) ORDER BY p.parameter_id",
        d.proc_ref(cfg.article(art), "I"),
    )
    assert [(n.lower(), t) for n, t, _, _ in params] == [
        ("@c1", "int"),
        ("@c2", "decimal"),
        ("@c3", "nvarchar"),
        ("@c4", "nvarchar"),
    ], params
    assert tuple(params[1][2:]) == (12, 2), params


# -- seed 004: rs_sqldml at the threshold ----------------------------------------------------------
def test_statements_at_threshold_c2_and_fallback(spark, babelfish, tmp_path):
    """One stream's statements (seed004.stream: 49, 50 and 51 rows, C1 and C2, a statement
    touching one row more at the subscriber than at the publisher, an INSERT ... SELECT) to a
    full copy and a filtered subscription (id < 440), threshold 50."""
    art = seed004.ART
    cfg = parse_config(
        {
            "run": {"streams": 2, "commit_batch_size": 4},
            "articles": [
                {
                    "name": art,
                    "columns": [
                        {"name": "id", "type": "int", "key": True},
                        {"name": "grp", "type": "nvarchar(4)"},
                        {"name": "n", "type": "int"},
                    ],
                }
            ],
            "subscriptions": [
                {"name": "full"},
                {"name": "part", "articles": [{"name": art, "where": "id < 440"}]},
            ],
        },
        "<tsql sqldml>",
    )
    snap = write_jsonl(
        tmp_path / "snap.jsonl",
        [{"article": art, "image": seed004.image(i, g, i)} for g, ids in seed004.GROUPS.items() for i in ids],
    )
    changes = write_jsonl(tmp_path / "changes.jsonl", seed004.stream())
    res, targets = run_subscriptions(spark, babelfish, cfg, "bbf_sqldml", changes=changes, snapshot=snap)

    def sent(name: str) -> list[tuple[str, str, bool]]:
        s = res.subscription(name)
        return [(st["operator"] + st["category"], st["sent_as"], st["fallback"]) for st in s.statements]

    for s in res.subscriptions:
        assert s.verdict.value == "converged", (s.name, s.check.to_json())
    assert sent("full") == [
        ("UC1", "rows", False),  # 49 rows: threshold - 1
        ("UC1", "statement", False),  # 50: threshold
        ("DC1", "statement", False),  # 51: threshold + 1
        ("UC2", "statement", False),  # C2 on a full copy
        ("UC1", "rows", True),  # 51 rows at the subscriber, rs_rowcount 50: rolled back, rows applied
        ("IC1", "statement", False),
    ]
    assert sent("part") == [
        ("UC1", "rows", False),
        ("UC1", "statement", False),
        ("DC1", "statement", False),
        ("UC2", "rows", False),  # C2 never on a filtered subscription
        ("UC1", "rows", False),  # only 39 of its rows are in the filter
        ("IC1", "rows", False),  # none of its rows is in the filter
    ]
    # The row counts the subscriber reported (SET NOCOUNT OFF over FreeTDS).
    counts = [(st["rs_rowcount"], st["subscriber_rowcount"]) for st in res.subscription("full").statements]
    assert [c for c in counts if c[1] is not None] == [(50, 50), (51, 51), (50, 50), (50, 51), (50, 50)], (
        counts
    )
    fallback = res.subscription("full").statements[4]
    assert fallback["subscriber_rowcount"] == 51 and "differs from rs_rowcount 50" in fallback["reason"]
    outcomes = res.subscription("full").summary.outcomes
    assert outcomes["statement"] == 50 + 51 + 50 + 50  # rows carried by statements b, c, d, f

    full, part = targets["full"], targets["part"]
    d = full.dialect
    table = d.table(cfg.article(art))
    n, grp = d.quote("n"), d.quote("grp")
    assert _rows(full, f"SELECT {n} FROM {table} WHERE id = 451") == [(451,)]  # the fallback left it alone
    assert _rows(full, f"SELECT count(*) FROM {table} WHERE {grp} = 'f'") == [(50,)]
    assert _rows(full, f"SELECT count(*) FROM {table} WHERE {grp} = 'c'") == [(0,)]  # the delete statement
    assert _rows(full, f"SELECT min({n} - id), max({n} - id) FROM {table} WHERE {grp} IN ('b', 'd')") == [
        (1, 1)
    ]
    assert _rows(part, f"SELECT count(*) FROM {table} WHERE {grp} = 'f' OR id >= 440") == [(0,)]
