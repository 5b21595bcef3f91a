"""applier lint, the text half: which procedure texts have a zero-row check (no database)."""

from __future__ import annotations

from pathlib import Path

import pytest

from applier.config import parse_config
from applier.dialects import DIALECTS
from applier.lint.checks import has_zero_row_check, procedure_texts, text_findings


@pytest.mark.parametrize(
    "dialect, body, ok",
    [
        # SQL Server's own generated form
        (
            "tsql",
            "update t set a = @c1 where k = @pkc1\nif @@rowcount = 0\nexec sp_MSreplraiserror 20598",
            True,
        ),
        # THROW after ROWCOUNT_BIG()
        ("tsql", "update t set a=1; IF ROWCOUNT_BIG() = 0 THROW 120598, N'gone', 1;", True),
        # RAISERROR with a message text
        ("tsql", "delete t where k=@pkc1 IF @@ROWCOUNT < 1 RAISERROR('row not found', 16, 1)", True),
        # the check only in a comment does not count
        ("tsql", "update t set a = 1 -- if @@rowcount = 0 exec sp_MSreplraiserror 20598", False),
        ("tsql", "update t set a = 1 /* if @@rowcount = 0 throw 50000, 'x', 1 */", False),
        # a row count without a raise is no check
        ("tsql", "update t set a = 1; select @@rowcount", False),
        # PL/pgSQL: FOUND and RAISE
        (
            "postgres",
            "UPDATE t SET a = 1; IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = 'RP598'; END IF;",
            True,
        ),
        # GET DIAGNOSTICS ... ROW_COUNT
        (
            "postgres",
            "DELETE FROM t; GET DIAGNOSTICS n = ROW_COUNT; IF n = 0 THEN RAISE SQLSTATE 'RP598'; END IF;",
            True,
        ),
        # nothing
        ("postgres", "UPDATE t SET a = 1 WHERE k = pkc1;", False),
        ("postgres", "UPDATE t SET a = 1; -- IF NOT FOUND THEN RAISE EXCEPTION 'x'; END IF;", False),
    ],
)
def test_has_zero_row_check(dialect: str, body: str, ok: bool) -> None:
    assert has_zero_row_check(DIALECTS[dialect](), body) is ok


def test_procedure_names_are_read_with_quotes_and_schemas() -> None:
    text = '''
create procedure [dbo].[my]]upd] @c1 int as begin update t set a = 1 end
go
CREATE OR ALTER PROC "sales"."del ""x""" AS SELECT 1
go
create procedure plain as select 1
'''
    names = [n for n, _ in procedure_texts(text)]
    assert names == [("dbo", "my]upd"), ("sales", 'del "x"'), ("plain",)]


def _articles(update: str, delete: str = "CALL"):  # type: ignore[no-untyped-def]
    return parse_config(
        {
            "articles": [
                {
                    "name": "dbo.t",
                    "columns": [{"name": "k", "type": "int", "key": True}, {"name": "a", "type": "int"}],
                    "update": update,
                    "delete": delete,
                }
            ]
        }
    ).articles


def test_text_findings(tmp_path: Path) -> None:
    f = tmp_path / "procs.sql"
    f.write_text(
        "create procedure [dbo].[upd_ok] @c1 int, @c2 int, @pkc1 int as begin\n"
        "update t set a = @c2 where k = @pkc1\nif @@rowcount = 0 exec sp_MSreplraiserror 20598\nend\ngo\n"
        "create procedure dbo.del_bad @pkc1 int as begin delete t where k = @pkc1 end\n",
        encoding="utf-8",
    )
    tsql = DIALECTS["tsql"]()
    # upd_ok without a schema resolves to the article's schema (dbo) and has the check
    found = text_findings(_articles("CALL upd_ok", "CALL dbo.del_bad"), tsql, [f])
    assert [(x.op, x.procedure, x.check) for x in found] == [("D", "dbo.del_bad", "text")]
    assert "no zero-row check" in found[0].message and "@@ROWCOUNT = 0" in found[0].message
    missing = text_findings(_articles("SCALL dbo.nowhere"), tsql, [f])
    assert [x.message for x in missing] == ["not found in the custom SQL files (text not checked)"]
    # default procedures are not linted
    assert text_findings(_articles("SCALL"), tsql, [f]) == []
