"""distribute, schema versions and rs_sqldml decisions: pure functions, no Spark, no database."""

from __future__ import annotations

import pytest

from applier.articles import Article, Column, parse_type
from applier.config import ArticleSubscription, parse_config
from applier.dialects import DIALECTS
from applier.distribute.routing import routed_op, subscribed_article, upgrade_image
from applier.distribute.statements import ROWS, STATEMENT, decide
from applier.errors import ConfigError, InputError
from applier.records.events import SchemaChange, Schemas, SqlStatement, convert_value
from applier.sources.canonical import validate_record


def _article(name: str = "dbo.t1", table: str | None = None) -> Article:
    schema, t = name.split(".")
    return Article(
        schema,
        table or t,
        (
            Column("id", parse_type("int"), nullable=False),
            Column("C1", parse_type("int")),
            Column("note", parse_type("nvarchar(20)")),
        ),
        ("id",),
    )


# -- seed 000: before/after routing --------------------------------------------------------
@pytest.mark.parametrize(
    ("op", "before", "after", "expected"),
    [
        ("U", True, True, "U"),  # both images match: the update (or the applied procedure)
        ("U", True, False, "D"),  # seed: subscription C1 = 1, C1 1 -> 2: rs_delete
        ("U", False, True, "I"),  # seed: subscription C1 = 2, C1 1 -> 2: rs_insert
        ("U", False, False, None),  # seed: subscription C1 > 2: nothing
        ("I", False, True, "I"),
        ("I", False, False, None),
        ("D", True, False, "D"),
        ("D", False, False, None),
    ],
)
def test_routed_op_follows_seed_000(op: str, before: bool, after: bool, expected: str | None) -> None:
    assert routed_op(op, before, after) == expected


def test_column_list_keeps_the_key_and_article_order() -> None:
    a = _article()
    cut = subscribed_article(a, ArticleSubscription(a.name, None, ("note", "id")))
    assert cut.column_names == ("id", "note")
    assert subscribed_article(a, ArticleSubscription(a.name)) is a


# -- rs_sqldml decisions ---------------------------------------------------------------------
def _stmt(category: str = "C1", rowcount: int = 50) -> SqlStatement:
    return SqlStatement("U", category, rowcount, set="n = n + 1", where="grp = 'a'")


@pytest.mark.parametrize(
    ("rowcount", "expected"),
    [(49, ROWS), (50, STATEMENT), (51, STATEMENT)],  # threshold - 1, threshold, threshold + 1
)
def test_threshold(rowcount: int, expected: str) -> None:
    assert decide(_stmt("C1", rowcount), 50, True, rowcount, 0).send == expected


def test_c2_only_on_a_full_copy() -> None:
    assert decide(_stmt("C2"), 50, True, 50, 0).send == STATEMENT
    d = decide(_stmt("C2"), 50, False, 50, 0)
    assert d.send == ROWS and "full copy" in d.reason


def test_c1_on_a_filtered_subscription_needs_every_row_unchanged() -> None:
    assert decide(_stmt("C1"), 50, False, 50, 0).send == STATEMENT
    assert decide(_stmt("C1"), 50, False, 39, 0).send == ROWS  # some rows outside the filter
    assert decide(_stmt("C1"), 50, False, 50, 3).send == ROWS  # some rows move out (U -> D)


def test_sqldml_payload_validation() -> None:
    with pytest.raises(InputError, match="operator"):
        SqlStatement.parse({"operator": "X", "category": "C1", "rowcount": 1}, "here")
    with pytest.raises(InputError, match="needs sqldml.set"):
        SqlStatement.parse({"operator": "U", "category": "C1", "rowcount": 1}, "here")
    with pytest.raises(InputError, match="rowcount"):
        SqlStatement.parse({"operator": "D", "category": "C1", "rowcount": -1}, "here")
    s = SqlStatement.parse({"operator": "D", "category": "C2", "rowcount": 3, "where": "x = 1"}, "here")
    assert SqlStatement.parse(s.payload(), "again") == s


# -- schema versions (seed 001) -----------------------------------------------------------
def _schemas(*changes: tuple[str, dict]) -> Schemas:
    a = _article()
    chs = [
        SchemaChange.parse(a.name, (v + 1) << 20, v + 1, payload, f"lsn {v}")
        for v, (_, payload) in enumerate(changes, 1)
    ]
    return Schemas.build({a.name: a}, chs)


def test_versions_follow_the_stream() -> None:
    s = _schemas(
        ("add", {"action": "add_column", "column": {"name": "extra", "type": "nvarchar(5)"}}),
        ("drop", {"action": "drop_column", "column": "note"}),
        ("retype", {"action": "alter_column_type", "column": "C1", "type": "decimal(12,2)"}),
    )
    assert [a.column_names for a in s.versions["dbo.t1"]] == [
        ("id", "C1", "note"),
        ("id", "C1", "note", "extra"),
        ("id", "C1", "extra"),
        ("id", "C1", "extra"),
    ]
    assert s.version_at("dbo.t1", 2 << 20) == 1  # the DDL event itself is not after itself
    assert s.version_at("dbo.t1", (2 << 20) + 1) == 2
    assert s.version_at("dbo.t1", 99 << 20) == 4
    # An old row: the dropped column goes, the added one is NULL, the retyped one converted.
    assert upgrade_image(s, "dbo.t1", 1, {"id": 1, "C1": 5, "note": "x"}) == {
        "id": 1,
        "C1": "5.00",
        "extra": None,
    }
    assert upgrade_image(s, "dbo.t1", 2, {"id": 1, "C1": 5, "note": "x", "extra": "e"}) == {
        "id": 1,
        "C1": "5.00",
        "extra": "e",
    }


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        ({"action": "drop_column", "column": "id"}, "key column"),  # the key names the row
        ({"action": "alter_column_type", "column": "id", "type": "bigint"}, "key column"),
        ({"action": "drop_column", "column": "nope"}, "not a column"),
        ({"action": "add_column", "column": {"name": "note", "type": "int"}}, "already has it"),
        ({"action": "alter_column_type", "column": "note", "type": "int"}, "not supported"),  # text -> int
        ({"action": "rename", "column": "note"}, "ddl.action"),
        ({"action": "add_column", "column": {"name": "x", "type": "int", "nullable": False}}, "nullable"),
    ],
)
def test_bad_schema_changes_are_refused(payload: dict, why: str) -> None:
    with pytest.raises(InputError, match=why):
        _schemas(("x", payload))


def test_versions_must_go_up_by_one() -> None:
    a = _article()
    ch = SchemaChange.parse(a.name, 5 << 20, 3, {"action": "drop_column", "column": "note"}, "here")
    with pytest.raises(InputError, match="expected 2"):
        Schemas.build({a.name: a}, [ch])


def test_convert_value() -> None:
    i, d, s = (Column("c", parse_type(t)) for t in ("int", "decimal(12,2)", "nvarchar(20)"))
    assert convert_value(i, d, 5) == "5.00"
    assert convert_value(i, s, -7) == "-7"
    assert convert_value(d, s, "12.50") == "12.50"
    assert convert_value(i, d, None) is None


def test_records_carry_their_schema_version() -> None:
    s = _schemas(("add", {"action": "add_column", "column": {"name": "extra", "type": "nvarchar(5)"}}))
    arts = {"dbo.t1": _article()}
    new = {"lsn": (3 << 20) | 1, "xact_seqno": 3, "command_id": 1, "article": "dbo.t1", "op": "I"}
    row = validate_record({**new, "schema_version": 2, "after": {"id": 1, "extra": "e"}}, arts, "f:1", s)
    assert '"extra":"e"' in row.after
    with pytest.raises(InputError, match="schema_version 2 here"):
        validate_record({**new, "schema_version": 1, "after": {"id": 1}}, arts, "f:2", s)
    with pytest.raises(InputError, match="not a column"):  # the old shape before the change
        old = {**new, "lsn": 1 << 20 | 1, "xact_seqno": 1}
        validate_record({**old, "schema_version": 1, "after": {"id": 1, "extra": "e"}}, arts, "f:3", s)


def test_event_records_validate_their_payload() -> None:
    arts = {"dbo.t1": _article()}
    base = {"lsn": 1 << 20 | 1, "xact_seqno": 1, "command_id": 1, "article": "dbo.t1"}
    row = validate_record(
        {**base, "op": "SQL", "sqldml": {"operator": "D", "category": "C1", "rowcount": 2}}, arts, "f:1"
    )
    assert row.op == "SQL" and row.key_before is None and '"rowcount":2' in row.after
    with pytest.raises(InputError, match="new schema_version"):
        validate_record(
            {**base, "op": "DDL", "ddl": {"action": "drop_column", "column": "note"}}, arts, "f:2"
        )
    with pytest.raises(InputError, match="op must be"):
        validate_record({**base, "op": "X"}, arts, "f:3")


# -- SQL text per dialect: identifiers quoted, the publisher's clauses as written -----------
HOSTILE = 'we"ird]--tab'


@pytest.mark.parametrize("dialect", ["postgres", "tsql"])
def test_statement_and_alter_sql_quote_identifiers(dialect: str) -> None:
    d = DIALECTS[dialect]()
    a = _article("dbo.x", table=HOSTILE)
    q = d.table(a)
    # SQL Server: row counts reach the driver only with NOCOUNT off (sessions run NOCOUNT ON)
    pre = "SET NOCOUNT OFF;\n" if dialect == "tsql" else ""
    upd = d.rs_sqldml_sql(a, SqlStatement("U", "C1", 50, set="n = n + 1", where="grp = 'a'"))
    assert upd == f"{pre}UPDATE {q} SET n = n + 1 WHERE grp = 'a'"
    assert d.rs_sqldml_sql(a, SqlStatement("D", "C1", 50)) == f"{pre}DELETE FROM {q}"
    ins = d.rs_sqldml_sql(
        a, SqlStatement("I", "C1", 50, select="id + 1, n", from_="s", insert_column="id, n")
    )
    assert ins == f"{pre}INSERT INTO {q} (id, n) SELECT id + 1, n FROM s"
    sel = d.rs_sqldml_sql(a, SqlStatement("S", "C2", 50, select="*", from_="s", where="k > 1"))
    assert sel == f"{pre}SELECT * INTO {q} FROM s WHERE k > 1"

    new_col = Column('ex"t]ra', parse_type("nvarchar(5)"))
    b = Article(a.schema, a.table, (*a.columns[:2], new_col), a.key)
    stmts = d.alter_sql(a, b)
    # SQL Server drops what depends on the column first (5074/4922); PostgreSQL does it itself
    assert stmts[0].endswith(f"ALTER TABLE {q} DROP COLUMN {d.quote('note')}")
    assert stmts[1].startswith(f"ALTER TABLE {q} ADD ") and d.quote('ex"t]ra') in stmts[1]
    ref = d.proc_ref(a, "U")
    drop = f"IF OBJECT_ID({d.literal(ref)}, N'P') IS NOT NULL DROP PROCEDURE {ref}" if pre else ""
    assert d.drop_procedure_sql(a, "U") == (drop or f"DROP PROCEDURE IF EXISTS {ref}")


# -- settings -------------------------------------------------------------------------------
def _cfg(subs: list) -> object:
    art = {
        "name": "dbo.t1",
        "columns": [{"name": "id", "type": "int", "key": True}, {"name": "C1", "type": "int"}],
    }
    return parse_config({"articles": [art], "subscriptions": subs}, "s.toml")


def test_subscriptions_parse() -> None:
    cfg = _cfg(
        [
            {"name": "a", "articles": [{"name": "dbo.t1", "where": "C1 = 1", "columns": ["C1", "id"]}]},
            {"name": "b", "streams": 2, "sqldml_threshold": 10},
        ]
    )
    a, b = cfg.subscriptions  # type: ignore[attr-defined]
    assert a.of("dbo.t1") == ArticleSubscription("dbo.t1", "C1 = 1", ("id", "C1"))
    assert not a.full_copy(("dbo.t1",)) and b.full_copy(("dbo.t1",))
    assert b.streams == 2 and b.sqldml_threshold == 10


@pytest.mark.parametrize(
    ("subs", "where"),
    [
        ([{"name": "a", "articles": [{"name": "dbo.nope"}]}], "subscriptions[0].articles[0].name"),
        ([{"name": "a", "articles": [{"name": "dbo.t1", "columns": ["C1"]}]}], "key column 'id'"),
        ([{"name": "a", "articles": [{"name": "dbo.t1", "columns": ["zz", "id"]}]}], "'zz' is not a column"),
        ([{"name": "a"}, {"name": "a"}], "duplicate subscription"),
        ([{"name": "a", "streams": 0}], "subscriptions[0].streams"),
        ([{"name": "a", "filter": "x"}], "unknown key"),
    ],
)
def test_subscription_errors_name_the_key(subs: list, where: str) -> None:
    with pytest.raises(ConfigError) as e:
        _cfg(subs)
    assert "s.toml" in str(e.value) and where in str(e.value)


def test_applied_procedure_payload_and_call() -> None:

    from applier.records.events import AppliedProcedure

    p = AppliedProcedure.parse({"procedure": "dbo.upd_c1", "params": [2, "x", None], "rowcount": 1}, "here")
    assert p.params == (2, "x", None) and AppliedProcedure.parse(p.payload(), "again") == p
    with pytest.raises(InputError, match="scalar"):
        AppliedProcedure.parse({"procedure": "p", "params": [{"a": 1}], "rowcount": 1}, "here")
    with pytest.raises(InputError, match="rowcount"):
        AppliedProcedure.parse({"procedure": "p", "params": [], "rowcount": 0}, "here")
    pg, ts = DIALECTS["postgres"](), DIALECTS["tsql"]()
    assert pg.call_procedure_sql("dbo.upd_c1", 3) == 'CALL "dbo"."upd_c1"(?, ?, ?)'
    assert ts.call_procedure_sql("dbo.upd_c1", 2) == "EXEC [dbo].[upd_c1] ?, ?"
    assert pg.call_procedure_sql('we"ird', 0) == 'CALL "we""ird"()'
