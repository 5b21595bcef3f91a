"""Every call syntax for real on the embedded PostgreSQL, and on the embedded Babelfish (the tsql
marker) where the test takes ``any_target``.

Part one calls the installed procedures and statements directly (no Spark): the SCALL/MCALL
bitmap picks exactly the changed columns (unchanged columns hold values the call must not
overwrite, the last column sits in the bitmap's second byte), key changes move the row, XCALL
matches on the before image's key only, and every update and delete of a missing key raises
20598 (SQLSTATE RP598; T-SQL: error 20598). Part two runs the whole pipeline with N = 4 streams on a key-chain
workload for every delivery and expects convergence.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from applier.apply.install import install
from applier.articles import Article, Delivery
from applier.config import parse_config
from applier.dialects.conflicts import ConflictClass
from applier.plan.calls import Planner
from applier.targets.connection import connect
from tests.support.runs import run
from tests.support.subscriber import rows

pytestmark = pytest.mark.integration

# (insert, update, delete): together every option of seeds 002/003 but NONE (which the
# oracle cannot follow: the operation is not replicated; see tests/unit/test_procedures.py).
COMBOS = {
    "call": ("CALL", "CALL", "CALL"),
    "scall": ("CALL", "SCALL", "CALL"),
    "mcall": ("CALL", "MCALL", "XCALL"),
    "xcall": ("CALL", "XCALL", "XCALL"),
    "sql": ("SQL", "SQL", "SQL"),
}
# 10 columns: a 2-byte bitmap; j is column 10 (byte 2, bit 2); c and h are LOBs.
COLUMNS = [
    {"name": "id", "type": "int", "key": True},
    {"name": "a", "type": "nvarchar(20)"},
    {"name": "b", "type": "int"},
    {"name": "c", "type": "nvarchar(max)"},
    {"name": "d", "type": "decimal(12,2)"},
    {"name": "e", "type": "bit"},
    {"name": "f", "type": "datetime2"},
    {"name": "g", "type": "uniqueidentifier"},
    {"name": "h", "type": "varbinary(max)"},
    {"name": "j", "type": "int"},
]


def article(table: str, combo: tuple[str, str, str], schema: str = "syn") -> Article:
    i, u, d = combo
    return parse_config(
        {
            "articles": [
                {
                    "schema": schema,
                    "table": table,
                    "columns": COLUMNS,
                    "insert": i,
                    "update": u,
                    "delete": d,
                }
            ]
        }
    ).articles[0]


ROW = {
    "id": 1,
    "a": "keep",
    "b": 1,
    "c": "long text",
    "d": "1.50",
    "e": True,
    "f": "2020-01-01T00:00:00.000000",
    "g": "00000000-0000-0000-0000-000000000001",
    "h": "AAEC",
    "j": 10,
}


class Session:
    """One connection applying planned calls the way a stream does (errors classified)."""

    def __init__(self, target: Any, a: Article) -> None:
        self.dialect = target.dialect
        self.a = a
        self.planner = Planner(self.dialect, [a])
        self.conn = connect(target.connection_string, self.dialect, lock_timeout_ms=5000)

    def apply(self, op: str, before: dict[str, Any] | None, after: dict[str, Any] | None, changed: list[str]):
        call = self.planner.plan(
            self.a.name,
            op,
            json.dumps(before) if before else None,
            json.dumps(after) if after else None,
            changed,
        )
        assert call is not None
        import pyodbc

        try:
            cur = self.conn.cursor()
            cur.execute(call.sql, list(call.params))
            while cur.nextset():
                pass
            self.conn.commit()
            return None
        except pyodbc.Error as e:
            self.dialect.rollback(self.conn)
            return self.dialect.classify(e)

    def close(self) -> None:
        self.conn.close()


def table_rows(target: Any, a: Article) -> list[tuple[Any, ...]]:
    d = target.dialect
    return rows(
        target,
        f"SELECT {d.quote('id')}, {d.quote('a')}, {d.quote('b')}, {d.quote('j')} FROM {d.table(a)} ORDER BY 1",
    )


def row_not_found_code(target: Any) -> str:
    """The code a missing row is classified with: PostgreSQL's SQLSTATE, T-SQL's number."""
    return "RP598" if target.dialect.language == "postgres" else "20598"


def names_the_key(target: Any) -> bool:
    """Whether the 20598 message names the table and the key (Babelfish's stand-in raises the
    bare number: TsqlDialect.STAND_IN_THROWS)."""
    return bool(getattr(target.dialect, "STAND_IN_THROWS", True))


@pytest.mark.parametrize("name", sorted(COMBOS))
def test_each_syntax_applies_exactly_and_raises_20598(any_target, name: str) -> None:
    target = any_target
    a = article(f"direct_{name}", COMBOS[name])
    install(target, [a], f"direct-{name}")
    s = Session(target, a)
    try:
        assert s.apply("I", None, ROW, list(ROW)) is None
        # The stream's after image carries stale values for a and j; only b changed.
        stale = {**ROW, "a": "STALE", "b": 2, "j": 99}
        assert s.apply("U", ROW, stale, ["b"]) is None
        bitmap_syntax = a.update.syntax.value in ("SCALL", "MCALL", "SQL")
        if bitmap_syntax:
            # the bitmap (or the statement's SET list) picks exactly b
            assert table_rows(target, a) == [(1, "keep", 2, 10)]
        else:
            # CALL and XCALL carry no changed-column information: every column is set
            assert table_rows(target, a) == [(1, "STALE", 2, 99)]
        cur = {**ROW, "b": 2} if bitmap_syntax else stale
        # column 10 lives in the bitmap's second byte
        nxt = {**cur, "j": 77}
        assert s.apply("U", cur, nxt, ["j"]) is None
        assert table_rows(target, a)[0][3] == 77
        # a key change: 1 -> 5, with a changed non-key column
        moved = {**nxt, "id": 5, "a": "moved"}
        assert s.apply("U", nxt, moved, ["id", "a"]) is None
        assert [r[:2] for r in table_rows(target, a)] == [(5, "moved")]
        # XCALL: LOB before images arrive NULL and a stale non-key before value is no obstacle
        odd_before = {**moved, "c": "something else", "b": -1}
        again = {**moved, "b": 3}
        assert s.apply("U", odd_before, again, ["b"]) is None
        assert table_rows(target, a)[0][2] == 3
        # the old key is gone: update and delete raise 20598 with the key in the message
        for op, after in (("U", {**ROW, "b": 4}), ("D", None)):
            c = s.apply(op, ROW, after, ["b"])
            assert (
                c is not None
                and c.cls == ConflictClass.ROW_NOT_FOUND
                and c.code == row_not_found_code(target)
            )
            if names_the_key(target):
                assert "[id] = 1" in c.message and f"[{a.schema}].[{a.table}]" in c.message
        assert s.apply("D", again, None, []) is None
        assert table_rows(target, a) == []
    finally:
        s.close()


def test_hostile_names_every_syntax(any_target) -> None:
    """Quotes, brackets, --, spaces and Unicode in schema, table and column names. An engine
    that reads no escaped ] (Babelfish: BRACKET_ESCAPES) writes a name holding ] in double
    quotes, so a name holding both ] and " is refused there, clearly, before anything runs."""
    from applier.errors import UnsupportedError

    target = any_target
    both = getattr(target.dialect, "BRACKET_ESCAPES", True)
    if not both:
        with pytest.raises(UnsupportedError, match=r"both \] and"):
            target.dialect.quote('s"c]h')
    cols = [
        {"name": "it's [id]", "type": "int", "key": True},
        {"name": 'we"ird --', "type": "nvarchar(20)"},
        {"name": "名前 ü", "type": "int"},
    ]
    for name, (i, u, d) in COMBOS.items():
        a = parse_config(
            {
                "articles": [
                    {
                        "schema": 's"c]h --' if both else 's"c h --',
                        "table": f"T'{name}; --" if both else f"T'{name}]; --",
                        "columns": cols,
                        "insert": i,
                        "update": u,
                        "delete": d,
                    }
                ]
            }
        ).articles[0]
        install(target, [a], f"hostile-{name}")
        s = Session(target, a)
        try:
            k, v, n = (c["name"] for c in cols)
            row = {k: 1, v: "x'y", n: 1}
            assert s.apply("I", None, row, list(row)) is None
            assert s.apply("U", row, {**row, k: 2, n: 5}, [k, n]) is None
            miss = s.apply("D", row, None, [])
            assert miss is not None and miss.cls == ConflictClass.ROW_NOT_FOUND, name
            assert s.apply("D", {**row, k: 2, n: 5}, None, []) is None
        finally:
            s.close()


@pytest.mark.smoke
def test_every_syntax_converges_on_four_streams(spark, any_target) -> None:
    """One run, one article per delivery (so every syntax shares the same rounds): the
    key-chain workload's key changes hit the documented hazard, the agent resets to one
    stream, and the subscriber converges."""
    cfg = parse_config(
        {
            "run": {"streams": 4, "commit_batch_size": 20, "subscription": "syntaxes"},
            "workload": {
                "kind": "key-chains",
                "transactions": 100,
                "initial_rows": 40,
                "commands_per_transaction": 3,
                "key_update_share": 0.15,
                "chain_length": 3,
                "seed": 7,
            },
            "articles": [
                {"name": f"dbo.chain_{name}", "columns": COLUMNS, "insert": i, "update": u, "delete": d}
                for name, (i, u, d) in sorted(COMBOS.items())
            ],
        },
        "<syntaxes>",
    )
    result, report = run(spark, cfg, any_target)
    assert report["verdict"] == "converged", report.get("divergent")
    assert result.exit_code == 0
    # key changes were present and hit the documented hazard (20598 -> one stream -> resume)
    assert report["conflicts"]["row_not_found"] >= 1 and report["resets"] >= 1
    assert report["rounds_parallel"] >= 1  # and the other rounds stayed on 4 streams (seeded: 3 of 5)


def test_procs_scripts_install_on_postgres(target, tmp_path) -> None:
    """`applier procs --dialect postgres --out DIR` writes scripts that run as they are."""
    from applier.cli import main

    arts = [article(f"script_{name}", combo) for name, combo in sorted(COMBOS.items())]
    lines = []
    for name, (i, u, d) in sorted(COMBOS.items()):
        lines.append(
            f'[[articles]]\nname = "syn.script_{name}"\ninsert = "{i}"\nupdate = "{u}"\ndelete = "{d}"'
        )
        lines.append(
            "columns = ["
            + ", ".join(
                "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in c.items()) + " }" for c in COLUMNS
            )
            + "]"
        )
    cfg = tmp_path / "articles.toml"
    cfg.write_text("\n".join(lines).replace("True", "true"), encoding="utf-8")
    install(target, arts, "scripts")  # tables (and procedures, replaced below)
    d = target.dialect
    out = tmp_path / "procs"
    assert main(["procs", "--dialect", "postgres", "--config", str(cfg), "--out", str(out)]) == 0
    import pyodbc

    conn = pyodbc.connect(target.connection_string, autocommit=True)
    try:
        for a in arts:
            for op in "IUD":
                if d.procedure_sql(a, op):
                    conn.cursor().execute(f"DROP PROCEDURE {d.proc_ref(a, op)}")
        for f in sorted(out.iterdir()):
            conn.cursor().execute(f.read_text(encoding="utf-8"))
    finally:
        conn.close()
    names = {r[0] for r in rows(target, "SELECT proname FROM pg_proc WHERE proname LIKE 'sp_MS%script%'")}
    expected = {d.proc_name(a, op)[1] for a in arts for op in "IUD" if d.procedure_sql(a, op)}
    assert expected and expected <= names


def test_custom_procedures_are_called_with_their_declared_syntax(target, tmp_path) -> None:
    """A custom MCALL update and a custom XCALL delete from the user's SQL file, called with
    the seed's parameter orders; a custom procedure that no file creates is a clear error."""
    from applier.errors import ApplierError

    sql = tmp_path / "custom.sql"
    params = ", ".join(f"c{i} {t}" for i, t in enumerate(["integer", "varchar(20)", "integer"], 1))
    sql.write_text(
        f"""
CREATE OR REPLACE PROCEDURE syn.my_mupd({params}, pkc1 integer, bitmap bytea)
LANGUAGE plpgsql AS $$
BEGIN
    -- MCALL: every value arrives; the bitmap says which changed
    UPDATE syn.custom AS t SET b = CASE WHEN (get_byte(bitmap, 0) & 4) = 4 THEN c3 ELSE t.b END,
                               a = CASE WHEN (get_byte(bitmap, 0) & 2) = 2 THEN c2 ELSE t.a END
    WHERE t.id = pkc1;
    IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = 'RP598', MESSAGE = '[id] = ' || pkc1, DETAIL = '20598'; END IF;
END $$;
CREATE OR REPLACE PROCEDURE syn.my_xdel({params})
LANGUAGE plpgsql AS $$
BEGIN
    -- XCALL delete: the whole before image; match on the key only
    DELETE FROM syn.custom AS t WHERE t.id = c1;
    IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = 'RP598', MESSAGE = '[id] = ' || c1, DETAIL = '20598'; END IF;
END $$;
""",
        encoding="utf-8",
    )
    cols = [
        {"name": "id", "type": "int", "key": True},
        {"name": "a", "type": "nvarchar(20)"},
        {"name": "b", "type": "int"},
    ]

    def art(update: str, delete: str) -> Article:
        spec = {"name": "syn.custom", "columns": cols, "update": update, "delete": delete}
        return parse_config({"articles": [spec]}).articles[0]

    a = art("MCALL syn.my_mupd", "XCALL syn.my_xdel")
    install(target, [a], "custom", custom_sql=[sql])
    s = Session(target, a)
    try:
        row = {"id": 1, "a": "keep", "b": 1}
        assert s.apply("I", None, row, list(row)) is None
        assert s.apply("U", row, {"id": 1, "a": "STALE", "b": 2}, ["b"]) is None
        assert rows(target, "SELECT id, a, b FROM syn.custom") == [(1, "keep", 2)]
        assert s.apply("D", {"id": 1, "a": "other", "b": 7}, None, []) is None
        miss = s.apply("D", row, None, [])
        assert miss is not None and miss.cls == ConflictClass.ROW_NOT_FOUND
    finally:
        s.close()
    with pytest.raises(ApplierError, match=r"custom CALL procedure syn.nowhere is not installed"):
        install(target, [art("SCALL", "CALL syn.nowhere")], "custom", custom_sql=[sql])


@pytest.mark.parametrize("name", sorted(COMBOS))
def test_adventureworks_tables_apply(any_target, name: str) -> None:
    """Every AdventureWorks table of tests/data (composite keys, identity, hierarchyid,
    xml, money, uniqueidentifier, nvarchar(max), varbinary(max); computed columns dropped):
    tables and procedures install, and an insert, a key-preserving update of every column,
    a missing-key update (20598) and a delete apply."""
    import dataclasses
    import random

    from applier.sources.generator import random_row
    from tests.support import adventureworks

    arts = adventureworks.articles()
    assert arts, "tests/data/adventureworks holds no table"
    i, u, d = COMBOS[name]
    arts = [
        dataclasses.replace(
            a,
            schema=f"aw_{name}_{a.schema}",
            insert=Delivery.parse("insert", i),
            update=Delivery.parse("update", u),
            delete=Delivery.parse("delete", d),
        )
        for a in arts
    ]
    target = any_target
    install(target, arts, f"aw-{name}")
    rng = random.Random(3)
    for a in arts:
        s = Session(target, a)
        try:
            row = random_row(a, 7, rng)
            assert s.apply("I", None, row, list(row)) is None, a.name
            new = {**random_row(a, 7, rng), **{k: row[k] for k in a.key}}
            changed = [c for c in a.column_names if c not in a.key]
            assert s.apply("U", row, new, changed) is None, a.name
            gone = {**new, **{k: v for k, v in random_row(a, 9, rng).items() if k in a.key}}
            miss = s.apply("U", gone, gone, changed)
            assert miss is not None and miss.cls == ConflictClass.ROW_NOT_FOUND, a.name
            assert s.apply("D", new, None, []) is None, a.name
        finally:
            s.close()
