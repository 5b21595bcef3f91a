"""The two T-SQL paths that only PostgreSQL ran before, without a database: set-based apply
(sql/tsql/set_apply.sql.j2, bulk_insert.sql.j2, read with OPENJSON ... WITH) and the skip
policy under SET XACT_ABORT ON (XACT_ABORT off around the one-call-at-a-time loop, the
savepoint rolled back only while XACT_STATE() = 1). tests/integration/
test_sqlserver_docker_paths.py runs both against SQL Server where Docker is.

Parsing: sqlglot reads a whole CREATE PROCEDURE ... AS BEGIN ... END only as an opaque
Command, so every batch is parsed whole (it must not raise) and then statement by statement:
the set templates end every statement with ';' and put control flow (if, else, begin, end)
on lines of its own; sqlglot parses each statement, each condition and THROW's arguments
(it has no THROW), and the AST says what the statements do.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import pyodbc
import pytest
import sqlglot
from sqlglot import exp

from applier.apply.policy import send_with_policy
from applier.apply.sender import Sender
from applier.articles import Article, Column, Delivery, Syntax, parse_type
from applier.config import ErrorPolicy
from applier.dialects.postgres import PostgresDialect
from applier.dialects.tsql import TsqlDialect
from applier.plan.calls import Planner

D = TsqlDialect()
PG = PostgresDialect()


def article(
    schema: str, table: str, cols: list[tuple[str, str, str]], key: tuple[str, ...], **kw: Any
) -> Article:
    """cols: (name, type, flags) with flags among 'n' (nullable) and 'i' (identity)."""
    columns = tuple(Column(n, parse_type(t), nullable="n" in f, identity="i" in f) for n, t, f in cols)
    return Article(schema, table, columns, key, **kw)


VENDOR = article(
    "Purchasing",
    "Vendor",
    [
        ("VendorID", "int", ""),
        ("AccountNumber", "nvarchar(15)", ""),
        ("Name", "nvarchar(50)", ""),
        ("CreditRating", "tinyint", ""),
        ("PreferredVendorStatus", "bit", ""),
        ("ActiveFlag", "bit", ""),
        ("PurchasingWebServiceURL", "nvarchar(1024)", "n"),
        ("ModifiedDate", "datetime", ""),
    ],
    ("VendorID",),
)
COMPOSITE = article(
    "Person",
    "BusinessEntityAddress",
    [
        ("BusinessEntityID", "int", ""),
        ("AddressID", "int", ""),
        ("AddressTypeID", "int", ""),
        ("rowguid", "uniqueidentifier", ""),
        ("ModifiedDate", "datetime", ""),
    ],
    ("BusinessEntityID", "AddressID", "AddressTypeID"),
    update=Delivery(Syntax.CALL),
)
IDENTITY = article(
    "Person",
    "BusinessEntity",
    [("BusinessEntityID", "int", "i"), ("rowguid", "uniqueidentifier", ""), ("ModifiedDate", "datetime", "")],
    ("BusinessEntityID",),
    update=Delivery(Syntax.MCALL),
)
HOSTILE = article(
    "we ird]",
    "Order]Details; --'",
    [
        ("it's", "int", ""),
        ("a b", "nvarchar(10)", "n"),
        ("[x]", "varbinary(8)", ""),
        ("名前", "nvarchar(20)", "n"),
        ("--c", "date", "n"),
        ("_m", "datetime2", "n"),  # the mask's first choice is taken: it becomes __m
        ('q"uo\\te', "decimal(9,2)", "n"),
    ],
    ("it's", "[x]"),
)
KEY_ONLY = article("dbo", "Pair", [("A", "int", ""), ("B", "rowversion", "")], ("A", "B"))
WIDE = article(
    "dbo",
    "Wide",
    [
        ("Id", "bigint", ""),
        ("Note", "ntext", "n"),
        ("Blob", "image", "n"),
        ("Doc", "xml", "n"),
        ("Path", "hierarchyid", "n"),
        ("At", "smalldatetime", "n"),
        ("Seen", "datetimeoffset(3)", "n"),
        ("Code", "binary(4)", "n"),
    ],
    ("Id",),
)
CASES = {
    "vendor": VENDOR,
    "composite": COMPOSITE,
    "identity": IDENTITY,
    "hostile": HOSTILE,
    "key_only": KEY_ONLY,
    "wide": WIDE,
}
CTRL = re.compile(r"(?is)^(?:(?:else\s+)?if\s+(?P<cond>.*)|begin|end|else)$")


# -- a reader of the set templates' layout --------------------------------------------------
def body_statements(batch: str) -> tuple[str, list[str]]:
    """(the procedure header up to 'as', the body's statements and control lines)."""
    lines = [ln.strip() for ln in batch.splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("--")]
    at = lines.index("as")
    header, rest = "\n".join(lines[:at]), lines[at + 1 :]
    out: list[str] = []
    open_stmt: list[str] = []
    for ln in rest:
        if not open_stmt and CTRL.match(ln):
            out.append(ln)
            continue
        open_stmt.append(ln)
        if ln.endswith(";"):
            out.append("\n".join(open_stmt))
            open_stmt = []
    assert not open_stmt, f"a statement does not end with ';': {open_stmt}"
    return header, out


def parse_condition(cond: str) -> None:
    sqlglot.parse_one(f"select case when {cond} then 1 end", read="tsql")


def parse_leaf(stmt: str) -> exp.Expression:
    m = re.match(r"(?is)^throw\s+(.*?);$", stmt)
    if m:  # sqlglot has no THROW: its three arguments must read as a select list
        parsed = sqlglot.parse_one(f"select {m.group(1)}", read="tsql")
        assert len(parsed.expressions) == 3, stmt
        return parsed
    parsed = sqlglot.parse_one(stmt.rstrip(";"), read="tsql")
    assert isinstance(
        parsed, (exp.Insert, exp.Update, exp.Delete, exp.Select, exp.Set, exp.Declare, exp.Execute)
    )
    return parsed


def check_set_script(a: Article, op: str) -> list[exp.Expression]:
    """The drop batch and the create batch of op's set procedure, parsed; the body's leaves."""
    script = D.set_procedure_sql(a, op)
    assert script is not None
    batches = D.split_script(script)
    assert len(batches) == 2
    for b in batches:
        sqlglot.parse(b, read="tsql")  # whole batches: no error (the create is an opaque Command)
    ref = D.qualified(*D.set_proc_name(a, op))
    assert batches[0] == f"if object_id({D.literal(ref)}, N'P') is not null drop procedure {ref}"
    header, body = body_statements(batches[1])
    create = sqlglot.parse_one(f"{header}\nas select 1", read="tsql")
    assert isinstance(create, exp.Create) and create.kind == "PROCEDURE"
    assert [p.sql("tsql") for p in create.this.expressions] == ["@rows NVARCHAR(MAX)"]
    assert body[0] == "begin" and body[-1] == "end"
    depth, leaves = 0, []
    for stmt in body:
        low = stmt.lower()
        if low == "begin":
            depth += 1
        elif low == "end":
            depth -= 1
            assert depth >= 0
        elif m := CTRL.match(stmt):
            if m.group("cond"):
                parse_condition(m.group("cond"))
        else:
            leaves.append(parse_leaf(stmt))
    assert depth == 0
    return leaves


def names(nodes: Sequence[exp.Expression]) -> list[str]:
    return [n.name for n in nodes]


def join_pairs(on: exp.Expression) -> list[tuple[str, str, str, str]]:
    return [
        (e.this.table, e.this.name, e.expression.table, e.expression.name)
        for e in on.find_all(exp.EQ, bfs=False)
    ]


# -- set-based apply ------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_set_statement_parses_and_reads_each_column_by_its_json_path(name: str) -> None:
    a = CASES[name]
    for op in "IUD":
        leaves = check_set_script(a, op)
        reads = [x for leaf in leaves for x in leaf.find_all(exp.OpenJSON)]
        assert len(reads) == 1, op
        cols = a.replicated if op != "D" else a.key_columns
        defs = reads[0].expressions
        expected = [(c.name, D.json_path(c.name)) for c in cols]
        if op == "U":
            expected.append((D.set_mask_name(a), D.json_path(D.set_mask_name(a))))
        assert [(d.this.name, d.args["path"].name) for d in defs] == expected
        for c, d in zip(cols, defs, strict=False):
            json_type = d.args["kind"].sql("tsql").lower()
            if c.type.kind == "bytes":  # base64 in the image: OPENJSON decodes it into varbinary
                assert json_type == "varbinary(max)", c
            if c.type.base in ("datetime", "smalldatetime"):
                assert json_type == "datetime2(7)", c  # six fractional digits: datetime would refuse
    bulk = D.bulk_insert_sql(a)
    assert bulk is not None
    parsed = sqlglot.parse_one(bulk, read="tsql")
    assert isinstance(parsed, exp.Insert) and names(parsed.this.expressions) == list(a.column_names)
    assert parsed.find(exp.OpenJSON).this.sql("tsql") == "?"


@pytest.mark.parametrize("name", sorted(CASES))
def test_update_sets_each_non_key_column_by_its_mask_bit_and_finds_rows_by_the_key(name: str) -> None:
    a = CASES[name]
    leaves = check_set_script(a, "U")
    mask = D.set_mask_name(a)
    updates = [x for x in leaves if isinstance(x, exp.Update)]
    settable = [(i, c) for i, c in enumerate(a.replicated, 1) if c.name not in a.key and not c.identity]
    if not settable:  # only key (or identity) columns: every row must still be found
        assert not updates
        found = [x for x in leaves if isinstance(x, exp.Insert) and x.this.name == "found"]
        assert len(found) == 1
        on = found[0].expression.args["joins"][0].args["on"]
    else:
        (upd,) = updates
        assert [e.this.name for e in upd.expressions] == [c.name for _, c in settable]
        for (i, c), e in zip(settable, upd.expressions, strict=True):
            (case_if,) = e.expression.args["ifs"]
            test = case_if.this
            assert isinstance(test.this, exp.Substring) and test.this.this.name == mask
            assert (int(test.this.args["start"].name), test.expression.name) == (i, "1"), c
            assert (case_if.args["true"].table, case_if.args["true"].name) == ("v", c.name)
            assert (e.expression.args["default"].table, e.expression.args["default"].name) == ("tgt", c.name)
        assert names(upd.args["returning"].expressions) == list(a.key)  # output inserted.<key>
        on = upd.args["from_"].this.args["joins"][0].args["on"]
    assert join_pairs(on) == [("tgt", k, "v", k) for k in a.key]


@pytest.mark.parametrize("name", sorted(CASES))
def test_update_and_delete_raise_20598_naming_the_first_key_not_found(name: str) -> None:
    a = CASES[name]
    for op, param3 in (("U", 13233), ("D", 13234)):
        text = D.set_procedure_sql(a, op)
        assert text is not None
        table_text = D.literal(f"[{a.schema}].[{a.table}]") if "]" not in a.schema + a.table else None
        raise_line = (
            f"exec sp_MSreplraiserror @errorid=20598, @param1={D.literal(D.template_context(a, op)['table_text'])}, "
            f"@param2=@primarykey_text, @param3={param3};"
        )
        assert raise_line in text
        if table_text:
            assert f"@param1={table_text}" in text
        assert "\t\telse\n\t\t\texec sp_MSreplraiserror @errorid=20598;\n" in text  # bare where no @param3
        assert "throw" not in text.lower()  # the stand-in sp_MSreplraiserror throws (support_sql)
        leaves = check_set_script(a, op)
        counts = [x.sql("tsql") for x in leaves if isinstance(x, exp.Set)]
        assert counts == ["SET @expected = @@rowcount", "SET @done = @@rowcount"]
        (missing,) = [x for x in leaves if isinstance(x, exp.Select) and x.find(exp.Exists)]
        target, text_expr = missing.expressions[0].this, missing.expressions[0].expression
        assert target.name == "primarykey_text"
        key_texts = [n.name for n in text_expr.find_all(exp.National, bfs=False) if n.name.endswith(" = ")]
        assert key_texts == [f"{D.quote(k)} = " for k in a.key]  # '[k] = ' + value, per key
        assert [c.name for c in text_expr.find_all(exp.Column, bfs=False)] == list(a.key)
        on = missing.find(exp.Exists).this.args["where"].this
        assert sorted(join_pairs(on)) == sorted(("f", k, "v", k) for k in a.key)
    insert = D.set_procedure_sql(a, "I")
    assert insert is not None and "20598" not in insert  # a duplicate raises 2627 by itself


def test_delete_reads_only_the_key_and_outputs_what_it_deleted() -> None:
    leaves = check_set_script(COMPOSITE, "D")
    (dele,) = [x for x in leaves if isinstance(x, exp.Delete)]
    assert names(dele.args["returning"].expressions) == list(COMPOSITE.key)
    assert join_pairs(dele.this.args["joins"][0].args["on"]) == [("tgt", k, "v", k) for k in COMPOSITE.key]
    (read,) = [x for leaf in leaves for x in leaf.find_all(exp.OpenJSON)]
    assert [d.this.name for d in read.expressions] == list(COMPOSITE.key)


def test_values_are_typed_and_the_json_path_escapes_names() -> None:
    assert D.json_path('q"uo\\te') == '$."q\\"uo\\\\te"'  # a JSON string inside the path
    assert D.json_path("名前") == '$."名前"'
    assert D.literal(D.json_path("it's")) == "N'$.\"it''s\"'"
    text = D.set_procedure_sql(WIDE, "U")
    assert text is not None
    # the table variable holds each column's own type (keys compare as the columns' types);
    # types a table variable cannot hold are held as what they convert from
    for held in ("[Note] nvarchar(max)", "[Blob] varbinary(max)", "[Doc] xml", "[Path] hierarchyid"):
        assert f"\t\t{held}," in text
    assert "[At] smalldatetime," in text and "[Code] binary(4)," in text
    # read as what the canonical encoding can convert from
    for read in (
        "[Note] nvarchar(max) N'$.\"Note\"'",
        "[Blob] varbinary(max) N'$.\"Blob\"'",
        "[Doc] nvarchar(max) N'$.\"Doc\"'",
        "[Path] nvarchar(4000) N'$.\"Path\"'",
        "[At] datetime2(7) N'$.\"At\"'",
        "[Seen] datetimeoffset(3) N'$.\"Seen\"'",
        "[Code] varbinary(max) N'$.\"Code\"'",
    ):
        assert read in text
    assert D.set_mask_name(HOSTILE) == "__m" and "substring(v.[__m], " in (
        D.set_procedure_sql(HOSTILE, "U") or ""
    )


def test_set_calls_bind_one_json_text_and_custom_procedures_are_not_set_based() -> None:
    assert D.SET_APPLY
    assert D.set_call_sql(VENDOR, "U") == "EXEC [applier].[update_set_Purchasing_Vendor] ?"
    assert D.set_call_sql(HOSTILE, "D") == "EXEC [applier].[delete_set_we ird]]_Order]]Details; --'] ?"
    xcall = article(
        "dbo", "t", [("id", "int", ""), ("v", "int", "n")], ("id",), update=Delivery(Syntax.XCALL)
    )
    assert D.set_procedure_sql(xcall, "U") is None and D.set_procedure_sql(xcall, "D") is not None
    custom = article("dbo", "t", [("id", "int", "")], ("id",), insert=Delivery(Syntax.CALL, "dbo.my_ins"))
    assert D.set_procedure_sql(custom, "I") is None
    # the planner's rows go to the T-SQL set call as they go to PostgreSQL's: one JSON text
    sender = Sender(None, D, Planner(D, [VENDOR]), 0, set_apply=True)
    img = {c: None for c in VENDOR.column_names} | {"VendorID": 1, "Name": "x"}
    row = {
        "lsn": 1,
        "xact_seqno": 1,
        "article": VENDOR.name,
        "op": "U",
        "before": json.dumps(img),
        "after": json.dumps(img),
        "changed": ["Name"],
        "key_before": "[1]",
        "key_after": "[1]",
    }
    ((_, call),) = sender.calls([row])
    assert call.sql == D.set_call_sql(VENDOR, "U") and json.loads(call.params[0])[0]["_m"] == "00100000"


# -- the skip policy ------------------------------------------------------------------------
ART = article("dbo", "t", [("id", "int", ""), ("v", "nvarchar(9)", "n")], ("id",))
DUP = (
    "23000",
    "[23000] [Microsoft][ODBC Driver 18 for SQL Server][SQL Server]Violation of PRIMARY KEY constraint 'PK_t'. (2627) (SQLExecDirectW)",
)
NOT_FOUND = (
    "42000",
    "[42000] [Microsoft][ODBC Driver 18 for SQL Server][SQL Server]The row was not found (20598)",
)
DOOMED = (
    "42000",
    "[42000] [Microsoft][ODBC Driver 18 for SQL Server][SQL Server]the error policy skips the error, but it left the transaction uncommittable (50000)",
)
PG_DUP = ("23505", 'ERROR: duplicate key value violates unique constraint "t_pkey"')
PG_NOT_FOUND = ("RP598", "ERROR: The row was not found (20598)")


def _row(lsn: int, key: int, op: str) -> dict[str, Any]:
    img = json.dumps({"id": key, "v": "x"})
    return {
        "lsn": lsn,
        "xact_seqno": lsn,
        "article": ART.name,
        "op": op,
        "before": img if op != "I" else None,
        "after": img if op != "D" else None,
        "changed": ["v"],
        "key_before": json.dumps([key]) if op != "I" else None,
        "key_after": json.dumps([key]) if op != "D" else None,
    }


class Conn:
    """Records every text; a text binding a key in ``errors`` raises that error, a text
    containing a key of ``texts`` raises its error."""

    def __init__(
        self, errors: dict[int, tuple[str, str]], texts: dict[str, tuple[str, str]] | None = None
    ) -> None:
        self.errors, self.texts_fail = errors, texts or {}
        self.texts: list[str] = []
        self.rollbacks = 0

    def cursor(self) -> Conn:
        return self

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.texts.append(sql)
        for p in params:
            if p in self.errors:
                raise pyodbc.Error(*self.errors[p])
        for piece, err in self.texts_fail.items():
            if piece in sql:
                raise pyodbc.Error(*err)

    def nextset(self) -> bool:
        return False

    def rollback(self) -> None:
        self.rollbacks += 1


def _apply(dialect: Any, conn: Conn, policy: str = "skip:2627:20598") -> tuple[list[Any], Any]:
    sender = Sender(conn, dialect, Planner(dialect, [ART]), 0)
    rows = [_row(1, 1, "I"), _row(2, 7, "I"), _row(3, 2, "I"), _row(4, 8, "U"), _row(5, 3, "I")]
    errors = ErrorPolicy.parse(policy)
    return send_with_policy(sender, sender.calls(rows), [], lambda f: errors.skips(f.cls, f.code))


def test_tsql_turns_xact_abort_off_around_the_savepoint_loop_and_on_again() -> None:
    conn = Conn({7: DUP, 8: NOT_FOUND})
    skipped, failure = _apply(D, conn)
    assert failure is None and [(r["lsn"], f.code) for r, f in skipped] == [(2, "2627"), (4, "20598")]
    texts = conn.texts[1:]  # after the first try of the whole transaction and its rollback
    assert conn.rollbacks == 1
    assert texts[0] == "SET XACT_ABORT OFF;\nIF @@TRANCOUNT = 0 BEGIN TRANSACTION"
    assert texts[-1] == "IF @@TRANCOUNT > 1 AND XACT_STATE() = 1 COMMIT TRANSACTION;\nSET XACT_ABORT ON"
    loop = texts[1:-1]
    calls = [t for t in loop if t.startswith("SAVE TRANSACTION applier_sp;\nEXEC ")]
    assert len(calls) == 5  # one call a round trip, each under the savepoint
    rollbacks = [t for t in loop if "ROLLBACK TRANSACTION" in t]
    assert rollbacks == [D.skip_rollback_sql("applier_sp")] * 2
    assert all(t.count("EXEC ") <= 1 for t in loop) and not any("XACT_ABORT" in t for t in loop)
    # the rollback goes to the savepoint only while the transaction can (XACT_STATE() = 1)
    rb = rollbacks[0].split(";\n")
    assert rb[0].startswith("IF XACT_STATE() = -1 THROW 50000, N'") and "uncommittable" in rb[0]
    assert (
        rb[1].startswith("IF XACT_STATE() = 0 THROW 50000, N'")
        and "rolled the whole transaction back" in rb[1]
    )
    assert rb[2] == "ROLLBACK TRANSACTION applier_sp"


def test_postgres_keeps_its_loop_without_session_statements() -> None:
    conn = Conn({7: PG_DUP, 8: PG_NOT_FOUND})
    skipped, failure = _apply(PG, conn)
    assert failure is None and [r["lsn"] for r, _ in skipped] == [2, 4]
    assert PG.skip_loop_sql() == ([], [])
    assert PG.skip_rollback_sql("applier_sp") == PG.rollback_to_savepoint_sql("applier_sp")
    assert not any("XACT" in t for t in conn.texts)
    loop = conn.texts[1:]
    assert loop[0].startswith('SAVEPOINT "applier_sp";\nCALL ')  # the loop starts with the first call
    assert [t for t in loop if t.startswith("ROLLBACK")] == ['ROLLBACK TO SAVEPOINT "applier_sp"'] * 2


def test_an_error_the_savepoint_cannot_undo_stands_and_says_why() -> None:
    conn = Conn({7: DUP}, {"IF XACT_STATE() = -1 THROW": DOOMED})
    skipped, failure = _apply(D, conn)
    assert skipped == [] and failure is not None
    assert (failure.cls, failure.code, failure.lsn) == ("duplicate_key", "2627", 2)  # the error stands
    assert "not skipped" in failure.message and "uncommittable" in failure.message
    assert conn.texts[-1].endswith("SET XACT_ABORT ON")  # the session goes back as it was


def test_an_error_the_policy_does_not_skip_ends_the_loop_and_xact_abort_comes_back() -> None:
    conn = Conn({7: DUP, 8: NOT_FOUND})
    skipped, failure = _apply(D, conn, policy="skip:2627")
    assert [r["lsn"] for r, _ in skipped] == [2]
    assert failure is not None and (failure.code, failure.lsn) == ("20598", 4)
    assert conn.texts[-1].endswith("SET XACT_ABORT ON")


def test_the_skip_loop_statements_parse() -> None:
    opening, closing = D.skip_loop_sql()
    assert isinstance(sqlglot.parse_one(opening[0], read="tsql"), exp.Set)
    assert isinstance(sqlglot.parse_one(closing[-1], read="tsql"), exp.Set)
    for stmt, body_type in ((opening[1], exp.Transaction), (closing[0], exp.Commit)):
        m = re.fullmatch(r"IF (.*) ((?:BEGIN|COMMIT) TRANSACTION)", stmt)
        assert m, stmt
        parse_condition(m.group(1))
        assert isinstance(sqlglot.parse_one(m.group(2), read="tsql"), body_type)
    for line in D.skip_rollback_sql("applier_sp").split(";\n"):
        m = re.fullmatch(r"IF (.*?) THROW (.*)", line, re.S)
        if m:
            parse_condition(m.group(1))
            assert len(sqlglot.parse_one(f"select {m.group(2)}", read="tsql").expressions) == 3
        else:
            assert isinstance(sqlglot.parse_one(line, read="tsql"), exp.Rollback)
