"""PostgreSQL dialect: one quoting function tested with hostile names; type mapping;
classification by SQLSTATE; generated procedure text."""

from __future__ import annotations

import pytest

from applier.articles import parse_type
from applier.config import parse_config
from applier.dialects.conflicts import ConflictClass
from applier.dialects.postgres import PostgresDialect
from applier.errors import UnsupportedError

D = PostgresDialect()

QUOTES = [
    # (identifier, quoted) — one comment per case
    ("plain", '"plain"'),  # ordinary name keeps its case
    ("MixedCase", '"MixedCase"'),  # quoting preserves case
    ('we"ird', '"we""ird"'),  # embedded double quote is doubled
    ("a b", '"a b"'),  # space
    ("x--y", '"x--y"'),  # comment marker stays inside the quotes
    ("[br]ackets", '"[br]ackets"'),  # brackets mean nothing to PostgreSQL
    ("ünïcødé表", '"ünïcødé表"'),  # Unicode
    ("'; DROP TABLE t; --", '"\'; DROP TABLE t; --"'),  # injection attempt is just a name
]


@pytest.mark.parametrize("ident,quoted", QUOTES)
def test_quote(ident, quoted):
    assert D.quote(ident) == quoted


def test_quote_refuses_nul():
    with pytest.raises(UnsupportedError):
        D.quote("a\x00b")


def test_literal():
    assert D.literal("it's") == "'it''s'"


@pytest.mark.parametrize(
    "t,sql",
    [
        ("int", "integer"),
        ("bit", "boolean"),
        ("decimal(12,2)", "numeric(12,2)"),
        ("money", "numeric(19,4)"),
        ("nvarchar(40)", "varchar(40)"),
        ("nvarchar(max)", "text"),
        ("uniqueidentifier", "uuid"),
        ("varbinary(max)", "bytea"),
        ("datetime2", "timestamp(6)"),
        ("tinyint", "smallint"),
    ],
)
def test_type_mapping(t, sql):
    assert D.type_sql(parse_type(t)) == sql


def test_unmappable_type_is_a_clear_error():
    with pytest.raises(UnsupportedError, match="cannot be mapped"):
        D.type_sql(parse_type("rowversion"))


class FakePyodbcError(Exception):
    """pyodbc errors carry (sqlstate, message) in args."""


@pytest.mark.parametrize(
    "state,cls,transient",
    [
        ("RP598", ConflictClass.ROW_NOT_FOUND, False),
        ("23505", ConflictClass.DUPLICATE_KEY, False),
        ("23503", ConflictClass.FOREIGN_KEY, False),
        ("55P03", ConflictClass.LOCK_TIMEOUT, True),
        ("40P01", ConflictClass.DEADLOCK, True),
        ("08S01", ConflictClass.OTHER, True),
        ("42883", ConflictClass.OTHER, False),
    ],
)
def test_classify_by_sqlstate(state, cls, transient):
    c = D.classify(FakePyodbcError(state, f"[{state}] ERROR: something in English"))
    assert c.cls == cls and c.transient == transient and c.code == state


@pytest.mark.parametrize(
    "state,message,cls,constraint",
    [
        (
            "23505",
            '[23505] ERROR: duplicate key value violates unique constraint "t_pkey"\n'
            "DETAIL: Key (id)=(1) already exists.;\nError while executing the query (1) (SQLExecDirectW)",
            "duplicate_key",
            "t_pkey",
        ),
        (
            "23505",
            '[23505] ERROR: duplicate key value violates unique constraint "uq_t_0"\n'
            "DETAIL: Key (code)=(8) already exists.;\nError while executing the query (1) (SQLExecDirectW)",
            "unique_index",
            "uq_t_0",
        ),
        (
            "23503",
            '[23503] ERROR: insert or update on table "c" violates foreign key constraint "fk_c_0"\n'
            'DETAIL: Key (parent_id)=(5) is not present in table "p".;\nError while executing the query (1)',
            "foreign_key",
            "fk_c_0",
        ),
        ("RP598", "[RP598] ERROR: Row was not found ... (20598)", "row_not_found", None),
    ],
)
def test_the_constraint_that_fired_is_named_and_tells_the_primary_key_apart(state, message, cls, constraint):
    c = D.classify(FakePyodbcError(state, message)).keyed({"t_pkey"})
    assert (c.cls.value, c.code, c.constraint) == (cls, state, constraint)


def test_primary_key_is_named_as_postgresql_would_and_fits_namedatalen():
    assert D.primary_key_name(_article("acct")) == "acct_pkey"
    assert 'CONSTRAINT "acct_pkey" PRIMARY KEY ("id")' in D.create_table_sql(_article("acct"))
    long = D.primary_key_name(_article("é" * 40))
    assert long.startswith("éé") and len(long.encode()) <= 63
    assert long != D.primary_key_name(_article("é" * 41))


def _article(table='acc"t --'):
    return parse_config(
        {
            "articles": [
                {
                    "schema": "dbo",
                    "table": table,
                    "columns": [
                        {"name": "id", "type": "int", "key": True},
                        {"name": "$applier$", "type": "int"},
                    ],
                }
            ]
        }
    ).articles[0]


def test_update_procedure_has_key_branch_and_raises_rp598():
    sql = D.procedure_sql(_article(), "U")
    assert "ERRCODE = 'RP598'" in sql and "DETAIL = '20598'" in sql
    assert sql.count('UPDATE "dbo"."acc""t --"') == 2  # key-changed branch + non-key branch
    assert "$applier1$" in sql  # dollar tag chosen not to clash with a column name


def test_call_casts_every_parameter():
    assert D.call_sql(_article(), "D") == 'CALL "sp_MSdel_dboacc""t --"(CAST(? AS integer))'
