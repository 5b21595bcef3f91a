"""Verify in proportion to the change, without a database: when the stream's keys are taken, the
statements each dialect writes for them (T-SQL parsed by sqlglot), the keys tables' names, and
how the reports say which verify ran."""

from __future__ import annotations

import html
import io
import re
import xml.etree.ElementTree as ET
from decimal import Decimal
from typing import Any

import pytest
import sqlglot
from rich.console import Console

from applier.articles import Article, Column, parse_type
from applier.dialects import DIALECTS
from applier.report.console import print_summary
from applier.report.html import render_run
from applier.report.json import verify_line
from applier.report.junit import run_junit
from applier.results import Check, Verdict
from applier.targets.progress import Baseline
from applier.verify.scope import AUTO_MIN_ROWS, Scope, finish, plan


@pytest.mark.parametrize(
    ("mode", "reason", "rows", "commands", "whole"),
    [
        ("full", None, 10**6, 10, "asked for (--verify full)"),  # asked: always whole
        ("auto", "events", 10**6, 10, "events"),  # schema changes, statements: whole
        ("touched", "events", 10**6, 10, "events"),
        ("touched", None, 0, 10**6, None),  # touched: by the keys whatever the sizes
        ("auto", None, AUTO_MIN_ROWS - 1, 1, "fewer than 20,000"),  # a small snapshot reads fast
        ("auto", None, AUTO_MIN_ROWS, 10_000, None),  # 20,000 keys at most of 20,000 rows
        ("auto", None, AUTO_MIN_ROWS, 10_001, "may touch most"),
        ("auto", None, 200_000, None, None),  # commands not known: the keys' job says
    ],
)
def test_when_the_stream_s_keys_are_taken(mode, reason, rows, commands, whole) -> None:
    got = plan(mode, reason, rows, commands)
    assert (got is None) == (whole is None) and (whole is None or whole in got), got


def _article(
    schema: str = "dbo", table: str = "t", key: tuple[str, ...] = ("id",), extra: int = 2
) -> Article:
    cols = [Column(k, parse_type("int"), False, identity=True) for k in key]
    cols += [
        Column(f"c{i}", parse_type(t))
        for i, t in zip(range(extra), ["nvarchar(20)", "float"] * extra, strict=False)
    ]
    return Article(schema, table, tuple(cols), key)


HOSTILE = [
    ("dbo", "t"),
    ("sales", 'we"ird]name'),  # quotes and brackets
    ("s p", "名前-表"),  # a space, Unicode, a dash
    ("x" * 60, "y" * 60),  # longer than any identifier limit once joined
    ("a.b", "c"),  # two articles whose names differ only where a character is cut
    ("a", "b.c"),
]


def test_each_article_s_keys_table_is_a_plain_name_of_its_own() -> None:
    d = DIALECTS["postgres"]()
    names = [d.touched_article(_article(s, t)).table for s, t in HOSTILE]
    assert all(re.fullmatch(r"keys_[A-Za-z0-9_]+", n) and len(n.encode()) <= 63 for n in names), names
    assert len(set(names)) == len(names)
    ka = d.touched_article(_article(key=("k1", "k2")))
    assert ka.schema == d.PROGRESS_SCHEMA and ka.key == ("k1", "k2")
    assert [(c.name, c.nullable, c.identity) for c in ka.columns] == [
        ("k1", False, False),
        ("k2", False, False),
    ]


@pytest.mark.parametrize(("schema", "table"), HOSTILE[:4])
def test_t_sql_statements_parse(schema: str, table: str) -> None:
    """Every statement verify by keys runs on T-SQL reads as T-SQL (sqlglot)."""
    d = DIALECTS["tsql"]()
    if '"' in table:
        table = table.replace('"', "")  # Babelfish refuses ] with "; SQL Server takes either
    a = _article(schema, table, key=("id", "line"))
    stmts = [
        d.rest_digest_sql(a),
        d.select_rows_sql(a, touched=True),
        d.select_rows_sql(a, 4, touched=True),
        d.select_range_sql(a, True, True, touched=True),
        d.key_bounds_sql(a, touched=True),
        *d.touched_ddl(a),
        d.touched_insert_sql(a),
        *d.touched_drop_sql(a),
        d.render("baseline_create.sql.j2", table=d.baseline_table()).strip(),
        d.baseline_insert_sql(),
        d.baseline_select_sql(),
        d.baseline_clear_sql(),
    ]
    for stmt in stmts:
        assert sqlglot.parse(stmt, read="tsql"), stmt
    assert "NOT EXISTS (SELECT 1 FROM [applier].[keys_" in d.rest_digest_sql(a)
    assert d.select_range_sql(a, True, False, touched=True).endswith("AND [id] >= ?")


def test_postgres_hashes_the_whole_row_and_joins_the_keys_table() -> None:
    d = DIALECTS["postgres"]()
    a = _article("s p", 'we"ird', key=("id", "line"))
    sql = d.rest_digest_sql(a)
    keys = d.touched_table(a)
    assert sql == (
        f'SELECT COUNT(*), COALESCE(SUM(hash_record_extended(t.*, 0)), 0) FROM "s p"."we""ird" AS t '
        f'WHERE NOT EXISTS (SELECT 1 FROM {keys} AS k WHERE k."id" = t."id" AND k."line" = t."line")'
    )
    assert d.select_rows_sql(a, touched=True).endswith(
        f'AS t WHERE EXISTS (SELECT 1 FROM {keys} AS k WHERE k."id" = t."id" AND k."line" = t."line")'
    )
    assert d.key_bounds_sql(a, touched=True) == f'SELECT MIN("id"), MAX("id"), COUNT(*) FROM {keys}'
    # full reads are as they were
    assert "EXISTS" not in d.select_rows_sql(a) + d.select_range_sql(a, True, True) + d.key_bounds_sql(a)


def test_t_sql_row_text_is_lossless_per_type_and_concat_never_takes_too_many_arguments() -> None:
    d = DIALECTS["tsql"]()
    a = Article(
        "dbo",
        "wide",
        (Column("id", parse_type("int"), False),)
        + tuple(
            Column(f"c{i}", parse_type(t))
            for i, t in enumerate(["float", "datetime", "money", "varbinary(8)"] * 50)
        ),
        ("id",),
    )
    h = d.row_hash_sql(a, "t")
    concats = list(sqlglot.parse_one(f"SELECT {h}", read="tsql").find_all(sqlglot.exp.Concat))
    assert len(concats) > 1 and all(2 <= len(c.expressions) <= 254 for c in concats)
    assert "CONVERT(nvarchar(30), t.[c0], 3)" in h and "CONVERT(nvarchar(40), t.[c1], 121)" in h
    assert (
        "CAST(t.[c2] AS decimal(19,4))" in h and "HASHBYTES('SHA2_256', CAST(t.[c3] AS varbinary(max)))" in h
    )
    # Babelfish's CONCAT writes floats and dates with every digit itself (faster there)
    b = DIALECTS["babelfish"]().row_hash_sql(a, "t")
    assert "CONVERT(" not in b and "HASHBYTES('SHA2_256', CAST(t.[c3] AS varbinary(max)))" in b
    # a string's length goes first: a | inside it cannot make two rows one text
    s = d.row_hash_sql(_article(extra=1), "t")
    assert "DATALENGTH(t.[c0]), N':', t.[c0], N'|'" in s


def _check(by_article: dict[str, dict[str, int]], verdict: Verdict = Verdict.CONVERGED) -> Check:
    counts = {"missing": 0, "extra": 0, "different": 0}
    exp = sum(v["expected"] for v in by_article.values())
    found = sum(v["found"] for v in by_article.values())
    return Check(verdict, counts, (), exp, found, by_article=by_article)


def _counts(expected: int, found: int) -> dict[str, int]:
    return {"expected": expected, "found": found, "missing": 0, "extra": 0, "different": 0}


def test_finish_counts_the_rest_in_and_says_which_verify_ran() -> None:
    scope = Scope(
        "auto",
        True,
        by_keys={"dbo.a": Baseline("dbo.a", 12, 49_990, Decimal(7))},
        whole={"dbo.b": "the snapshot's 100 rows are fewer than 20,000: reading them costs less"},
        rest_now={"dbo.a": 49_990},
    )
    out = finish(_check({"dbo.a": _counts(10, 10), "dbo.b": _counts(100, 100)}), scope)
    assert out.verdict is Verdict.CONVERGED and out.reason is None
    assert out.rows_expected == out.rows_found == 50_100
    assert out.by_article["dbo.a"]["expected"] == 50_000
    v = out.verify
    assert v["mode"] == "mixed" and v["rows_read"] == 110
    assert v["articles"]["dbo.a"] == {
        "read": "keys",
        "touched_keys": 12,
        "rows_read": 10,
        "rest_rows": 49_990,
    }
    assert v["articles"]["dbo.b"]["read"] == "whole"
    line = verify_line(v)
    assert line.startswith(
        "mixed: 110 rows read; dbo.a by the stream's 12 keys, the 49,990 rows outside them"
    )
    assert "dbo.b whole (the snapshot's 100 rows" in line


def test_a_changed_rest_is_diverged_with_one_line_naming_the_article() -> None:
    scope = Scope(
        "auto",
        True,
        whole={"dbo.a": "rows outside the stream's keys changed, appeared or went"},
        changed={"dbo.a": (50_000, 49_999)},
    )
    # read whole, the row was found...
    out = finish(_check({"dbo.a": {**_counts(50_000, 49_999), "missing": 1}}, Verdict.DIVERGED), scope)
    assert out.verdict is Verdict.DIVERGED
    assert (
        out.reason
        == "dbo.a: rows outside the stream's keys changed, appeared or went (50,000 rows -> 49,999)"
    )
    assert out.verify["articles"]["dbo.a"]["rest"] == "changed"
    # ...or not (a change the canonical images cannot show): diverged all the same
    assert finish(_check({"dbo.a": _counts(5, 5)}), scope).verdict is Verdict.DIVERGED
    # a check that could not decide stays unknown
    assert finish(Check.unknown("boom"), scope).verdict is Verdict.UNKNOWN


def _report(verify: dict[str, Any], reason: str | None = None, verdict: str = "converged") -> dict[str, Any]:
    return {
        "schema_version": 2,
        "subscription": "applier",
        "verdict": verdict,
        "reason": reason,
        "commands": 200,
        "transactions": 40,
        "rounds": 1,
        "rounds_parallel": 1,
        "resets": 0,
        "reset_log": [],
        "conflicts": {},
        "outcomes": {},
        "skipped": 0,
        "deferred": 0,
        "skips": {},
        "divergent_rows": 0,
        "divergence": {},
        "divergent": [],
        "rows_expected": 50_000,
        "rows_found": 50_000,
        "throughput_cmds_per_s": None,
        "apply_seconds": 0.0,
        "phases_seconds": {"verify": 1.0},
        "streams": [],
        "by_article": {"dbo.a": _counts(50_000, 50_000)},
        "verify": verify,
        "settings": {
            "run": {
                "streams": 4,
                "model": "agent",
                "partition": "key-hash",
                "commit_batch_size": 100,
                "error_policy": "strict",
            },
            "articles": [{"schema": "dbo", "table": "a"}],
        },
        "target": "t",
        "source": "s",
    }


KEYS = {
    "mode": "keys",
    "requested": "auto",
    "rows_read": 161,
    "articles": {"dbo.a": {"read": "keys", "touched_keys": 202, "rows_read": 161, "rest_rows": 49_839}},
}


def test_the_console_the_html_and_junit_say_which_verify_ran() -> None:
    line = "keys: 161 rows read; every article by the stream's 202 keys, the 49,839 rows outside them unchanged (digest)"
    assert verify_line(KEYS) == line
    out = io.StringIO()
    print_summary(_report(KEYS), Console(file=out, width=300))
    assert f"read back               │ {line}" in out.getvalue()
    assert f"<td>{html.escape(line)}</td>" in render_run(_report(KEYS))
    suite = ET.fromstring(run_junit(_report(KEYS))).find("testsuite")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["verify"] == line


def test_junit_fails_an_article_whose_rest_changed_even_with_no_row_named() -> None:
    reason = "dbo.a: rows outside the stream's keys changed, appeared or went (50,000 rows -> 50,000)"
    changed = {
        "mode": "whole",
        "requested": "auto",
        "rows_read": 50_000,
        "articles": {
            "dbo.a": {"read": "whole", "why": "rows outside ...", "rows_read": 50_000, "rest": "changed"}
        },
    }
    suite = ET.fromstring(run_junit(_report(changed, reason, "diverged"))).find("testsuite")
    assert suite is not None
    (case,) = [c for c in suite.findall("testcase") if c.get("name") == "dbo.a converges"]
    failure = case.find("failure")
    assert failure is not None and failure.get("message") == reason


def test_the_mode_is_a_setting_of_the_file_the_command_line_and_the_plugin() -> None:
    from applier.cli import parser
    from applier.config import parse_config
    from applier.errors import ConfigError
    from applier.pytest_plugin import run_overrides

    assert run_overrides({"verify": "full", "streams": 2}) == ({"verify": "full", "streams": 2}, {})
    art = [{"name": "dbo.t", "columns": [{"name": "id", "type": "int", "key": True}]}]
    assert parse_config({"articles": art}, "f").run.verify == "auto"
    assert parse_config({"run": {"verify": "touched"}, "articles": art}, "f").run.verify == "touched"
    with pytest.raises(
        ConfigError, match=r"f: run.verify: unknown verify mode 'ful' \(auto, touched, full\)"
    ):
        parse_config({"run": {"verify": "ful"}, "articles": art}, "f")
    assert parser().parse_args(["run", "--verify", "full"]).verify == "full"
