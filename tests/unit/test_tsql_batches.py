"""T-SQL scripts cut at their GO lines (applier.dialects.batches): one reader for the installers
(``TsqlDialect.split_script``) and the DDL reader (``applier.catalog.ddl``), table-driven."""

from __future__ import annotations

import pytest

from applier.catalog.ddl import read_ddl
from applier.dialects import DIALECTS
from applier.dialects.batches import separators, split_batches

T = DIALECTS["tsql"]()

CASES = [
    # GO on its own line, in any case, with spaces or tabs around it
    ("select 1\nGO\nselect 2\n", ["select 1", "select 2"]),
    ("select 1\ngo\nselect 2", ["select 1", "select 2"]),
    ("select 1\n  Go \t\nselect 2\n", ["select 1", "select 2"]),
    # a trailing comment on the GO line
    ("select 1\nGO -- the end of the first batch\nselect 2\n", ["select 1", "select 2"]),
    ("select 1\nGO--tight\nselect 2\n", ["select 1", "select 2"]),
    # Windows line ends
    ("select 1\r\nGO\r\nselect 2\r\n", ["select 1", "select 2"]),
    # GO n: the batch before it runs n times (sqlcmd)
    ("insert t values (1)\nGO 3\nselect 2\n", ["insert t values (1)"] * 3 + ["select 2"]),
    ("select 1\nGO 2 -- twice\n", ["select 1", "select 1"]),
    # a line that only begins with GO is SQL, not a separator
    ("GOTO done\ngo\n", ["GOTO done"]),
    ("select 1 go\nselect 2\n", ["select 1 go\nselect 2"]),
    ("select 1\nGO;\n", ["select 1\nGO;"]),
    # GO inside a string, a quoted identifier or a comment does not cut
    ("select 'a\nGO\nb'\nGO\n", ["select 'a\nGO\nb'"]),
    ("select N'it''s\ngo\n'\nGO\n", ["select N'it''s\ngo\n'"]),
    ('select "x\nGO\ny" from t\nGO\n', ['select "x\nGO\ny" from t']),
    ("select [x\nGO\n]]y] from t\nGO\n", ["select [x\nGO\n]]y] from t"]),
    ("select 1 /* a comment\nGO\n*/\nGO\nselect 2\n", ["select 1 /* a comment\nGO\n*/", "select 2"]),
    ("/* nested /* comments\n*/\nGO\n*/ select 1\nGO\n", ["/* nested /* comments\n*/\nGO\n*/ select 1"]),
    (
        "select 1 -- a quote ' in a comment\nGO\nselect 2\n",
        ["select 1 -- a quote ' in a comment", "select 2"],
    ),
    # nothing between two separators: no batch
    ("GO\n\nGO\nselect 1\n", ["select 1"]),
    ("go\n", []),
    ("", []),
]


@pytest.mark.parametrize(("script", "batches"), CASES, ids=[repr(c[0])[:40] for c in CASES])
def test_split_batches(script: str, batches: list[str]) -> None:
    assert split_batches(script) == batches
    assert T.split_script(script) == batches


def test_separators_say_where_each_go_line_is() -> None:
    text = "select 1\n  GO 2 -- twice\nselect 'GO'\ngo"
    got = [(text[s.start : s.end], s.count) for s in separators(text)]
    assert got == [("  GO 2 -- twice", 2), ("go", 1)]


def test_the_ddl_reader_ends_statements_at_the_same_go_lines() -> None:
    """A GO line ends a statement, with or without a count; a GO inside a comment does not
    (sqlglot would read it as an alias otherwise); lines are counted from the script."""
    ddl = (
        "create table dbo.a (id int primary key)\n"
        "GO 2\n"
        "/* a comment that says\n"
        "GO\n"
        "*/\n"
        "create table dbo.b (id int primary key, note nvarchar(10))\n"
        "go -- done\n"
        "create table dbo.c (id int not null primary key)\n"
    )
    cat = read_ddl(ddl, "tsql", "s.sql")
    assert cat.problems == ()
    assert [a.name for a in cat.articles] == ["dbo.a", "dbo.b", "dbo.c"]
    assert [c.name for c in cat.articles[1].columns] == ["id", "note"]
