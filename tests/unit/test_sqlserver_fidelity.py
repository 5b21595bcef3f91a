"""SQL Server fidelity: `applier procs --dialect tsql` for four AdventureWorks tables equals,
modulo whitespace, the text SQL Server 2016+ generates for them (tests/golden/sqlserver2016/, whose
README says where each line comes from); the legacy template and the procedure schema."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlglot

from applier.cli import main
from applier.dialects.tsql import TsqlDialect
from tests.support import adventureworks

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "sqlserver2016"
TABLES = (
    "Person.BusinessEntityAddress",
    "Person.BusinessEntity",
    "Production.ProductPhoto",
    "Production.ProductDescription",
)
D = TsqlDialect()


def squeeze(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def creates(script: str) -> list[str]:
    """The create procedure batches of a script, in order."""
    return [b for b in D.split_script(script) if b.lstrip().lower().startswith("create procedure")]


@pytest.fixture(scope="module")
def procs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`applier articles --from-ddl` then `applier procs --dialect tsql --out`, as a user runs them."""
    tmp = tmp_path_factory.mktemp("procs")
    toml = tmp / "aw.toml"
    argv = [
        "articles",
        "--from-ddl",
        str(adventureworks.DDL),
        "--tables",
        ",".join(TABLES),
        "--out",
        str(toml),
    ]
    assert main(argv) == 0
    assert main(["procs", "--dialect", "tsql", "--config", str(toml), "--out", str(tmp / "out")]) == 0
    return tmp / "out"


@pytest.mark.parametrize("table", TABLES)
def test_procs_equal_what_sql_server_2016_generates(procs: Path, table: str) -> None:
    ours = creates((procs / f"{table}.tsql.sql").read_text(encoding="utf-8"))
    expected = creates((GOLDEN / f"{table}.sql").read_text(encoding="utf-8"))
    assert len(ours) == len(expected) == 3
    for got, want in zip(ours, expected, strict=True):
        assert squeeze(got) == squeeze(want)


def test_golden_text_is_not_the_templates_own_rendering() -> None:
    """The expected files are written apart from the templates: a change to the templates'
    words (not their whitespace) must show. The identity-key update has no branch and never
    sets the key; the composite key's has one OR'ed test per key column."""
    be = (GOLDEN / "Person.BusinessEntity.sql").read_text(encoding="utf-8")
    assert "[BusinessEntityID] = case" not in be and "\nelse\n" not in be
    bea = (GOLDEN / "Person.BusinessEntityAddress.sql").read_text(encoding="utf-8")
    assert bea.count(" or\n (substring(@bitmap,1,1) & ") == 2 and bea.count("@pkc1 int = NULL,") == 1


@pytest.mark.parametrize("table", TABLES)
def test_every_batch_parses(procs: Path, table: str) -> None:
    for batch in D.split_script((procs / f"{table}.tsql.sql").read_text(encoding="utf-8")):
        if batch.lstrip().startswith("--"):
            continue
        head = batch.split("\nas\n", 1)[0] + "\nas select 1" if "create procedure" in batch else batch
        assert sqlglot.parse(head, read="tsql")


def test_legacy_template_and_procedure_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    toml = tmp_path / "aw.toml"
    assert (
        main(["articles", "--from-ddl", str(adventureworks.DDL), "--tables", TABLES[0], "--out", str(toml)])
        == 0
    )
    capsys.readouterr()
    assert main(["procs", "--dialect", "tsql", "--config", str(toml), "--template", "legacy"]) == 0
    legacy = capsys.readouterr().out
    assert "exec sp_MSreplraiserror 20598\n" in legacy and "primarykey_text" not in legacy
    assert "--UPDATE procedure using SCALL syntax" in legacy and "@pkc1 int,@pkc2 int" in legacy
    assert main(["procs", "--dialect", "tsql", "--config", str(toml), "--proc-schema", "repl"]) == 0
    qualified = capsys.readouterr().out
    assert "create procedure [repl].[sp_MSupd_PersonBusinessEntityAddress]" in qualified
    assert "drop procedure [repl].[sp_MSupd_PersonBusinessEntityAddress]" in qualified
    assert main(["procs", "--dialect", "postgres", "--config", str(toml)]) == 0
    pg = capsys.readouterr().out
    assert 'CREATE OR REPLACE PROCEDURE "sp_MSupd_PersonBusinessEntityAddress"(' in pg  # default schema


def test_all_key_table_has_one_case_update_in_both_dialects() -> None:
    from applier.articles import Article, Column, parse_type
    from applier.dialects.postgres import PostgresDialect

    pair = Article(
        "dbo",
        "Pair",
        (Column("A", parse_type("int"), False), Column("B", parse_type("int"), False)),
        ("A", "B"),
    )
    t = D.procedure_sql(pair, "U") or ""
    assert (
        t.count("update [dbo].[Pair] set") == 1
        and "\nelse\n" not in t
        and "select" not in t.lower().split("sys.all_parameters")[1].split("\n", 1)[1]
    )
    assert "[A] = case substring(@bitmap,1,1) & 1 when 1 then @c1 else [A] end," in t
    p = PostgresDialect().procedure_sql(pair, "U") or ""
    assert p.count('UPDATE "dbo"."Pair"') == 1 and " ELSE\n" not in p and "PERFORM" not in p


def test_messages_name_a_bracketed_table_the_same_in_both_dialects() -> None:
    """A name holding ] is written as QUOTENAME writes it ([a]]b]) in both dialects' 20598
    message; PostgreSQL quotes the table in the message as SQL Server does ('...')."""
    from applier.articles import Article, Column, parse_type
    from applier.dialects.postgres import PostgresDialect

    odd = Article(
        "s]x", "t]y", (Column("k]z", parse_type("int"), False), Column("v", parse_type("int"))), ("k]z",)
    )
    t = D.procedure_sql(odd, "D") or ""
    p = PostgresDialect().procedure_sql(odd, "D") or ""
    assert "@param1=N'[s]]x].[t]]y]'" in t and "'[k]]z] = ' + convert(" in t
    assert "'[s]]x].[t]]y]'" in p and "'[k]]z] = ' || coalesce(" in p
    assert "for Table ''%s'' with" in p


def test_two_articles_that_would_share_a_procedure_are_refused() -> None:
    """a.bc and ab.c both give sp_MSins_abc in the one procedure schema: refused with both
    named, not one article's procedure silently replacing the other's."""
    from applier.config import parse_config
    from applier.errors import ConfigError

    col = [{"name": "k", "type": "int", "key": True}]
    arts = [{"schema": "a", "table": "bc", "columns": col}, {"schema": "AB", "table": "c", "columns": col}]
    with pytest.raises(ConfigError) as info:
        parse_config({"articles": arts})
    assert "a.bc and AB.c would both be applied by sp_MSins_ABc" in str(info.value)
    arts[1]["insert"] = "CALL my_ins"
    arts[1]["update"] = "SQL"
    arts[1]["delete"] = "NONE"
    assert len(parse_config({"articles": arts}).articles) == 2
