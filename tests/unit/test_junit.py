"""The JUnit XML of a run and of a matrix: valid against the JUnit XSD (tests/data/junit), a
testsuite per subscription, a testcase per article and per matrix cell, failures carrying the
keys, commands, streams and the inverted pair; the reports a run writes whatever happens."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import xmlschema

from applier.report.files import write_reports
from applier.report.json import SCHEMA_VERSION, unfinished_report, versions
from applier.report.junit import matrix_junit, run_junit

XSD = xmlschema.XMLSchema(str(Path(__file__).parents[1] / "data" / "junit" / "junit.xsd"))

_SETTINGS = {
    "run": {
        "streams": 4,
        "model": "agent",
        "partition": "key-hash",
        "commit_batch_size": 100,
        "error_policy": "strict",
        "schedule": "free",
    },
    "workload": {"seed": 7},
    "articles": [{"schema": "dbo", "table": "accounts"}, {"schema": "dbo", "table": "order_lines"}],
}

_COMMANDS = [
    {
        "lsn": 10,
        "xact_seqno": 3,
        "op": "U",
        "key_before": [5],
        "key_after": [6],
        "stream": 1,
        "round": 0,
        "outcome": "applied",
    },
    {
        "lsn": 11,
        "xact_seqno": 4,
        "op": "U",
        "key_before": [6],
        "key_after": [6],
        "stream": 2,
        "round": 0,
        "outcome": "applied",
    },
]


def _sub(name: str = "applier", diverged: bool = False) -> dict[str, Any]:
    div = (
        [
            {
                "article": "dbo.accounts",
                "key": [6],
                "kind": "missing",
                "expected": {"id": 6},
                "found": None,
                "columns": [],
                "commands": _COMMANDS,
                "inverted": {
                    "first": 10,
                    "second": 11,
                    "why": "lsn 11 (xact 4) ran on stream 2 before lsn 10 committed",
                },
                "skipped": [],
            },
        ]
        if diverged
        else []
    )
    return {
        "subscription": name,
        "verdict": "diverged" if diverged else "converged",
        "reason": None,
        "commands": 100,
        "rounds": 3,
        "resets": 1,
        "conflicts": {"row_not_found": 2, "deadlock": 0},
        "reset_log": [
            {
                "round": 0,
                "streams_from": 4,
                "classes": ["row_not_found"],
                "streams": [{"stream": 1, "class": "row_not_found", "lsn": 10}],
                "message": "Number of subscription streams has been reset from 4 to 1",
            }
        ],
        "divergent": div,
        "by_article": {
            "dbo.accounts": {
                "expected": 10,
                "found": 9 if diverged else 10,
                "missing": 1 if diverged else 0,
                "extra": 0,
                "different": 0,
            }
        },
        "phases_seconds": {"prepare": 1.0, "apply": 2.5, "verify": 1.0},
        "settings": _SETTINGS,
        "target": "embedded PostgreSQL",
        "source": "generated",
    }


def _validate(xml: str) -> ET.Element:
    XSD.validate(xml)  # raises with the place when not valid
    return ET.fromstring(xml)


def test_converged_run_is_valid_junit_one_case_per_article():
    root = _validate(
        run_junit(
            {
                "schema_version": 2,
                "started_at": "2026-11-23T01:02:03Z",
                "seconds": 5.0,
                "versions": versions(),
                **_sub(),
            }
        )
    )
    (suite,) = root.findall("testsuite")
    names = [c.get("name") for c in suite.findall("testcase")]
    assert names == ["apply", "dbo.accounts converges", "dbo.order_lines converges"]
    assert suite.get("tests") == "3" and suite.get("failures") == "0" and suite.get("errors") == "0"
    assert suite.get("timestamp") == "2026-11-23T01:02:03"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["streams"] == "4" and props["conflicts.row_not_found"] == "2"
    assert "conflicts.deadlock" not in props  # only the classes met
    assert "stream 1 row_not_found" in suite.findtext("system-out")


def test_diverged_article_fails_with_keys_commands_streams_and_inverted_pair():
    root = _validate(run_junit(_sub(diverged=True)))
    cases = {c.get("name"): c for c in root.iter("testcase")}
    failure = cases["dbo.accounts converges"].find("failure")
    assert failure is not None and failure.get("type") == "diverged"
    assert "1 divergent rows (missing 1" in failure.get("message") and "[6]" in failure.get("message")
    text = failure.text or ""
    assert "lsn 10 xact 3 U [5] -> [6] stream 1 round 0: applied" in text
    assert "streams [1, 2]" in text
    assert "inverted pair: lsn 11 (xact 4) ran on stream 2" in text
    assert cases["dbo.order_lines converges"].find("failure") is None
    assert root.get("failures") == "1"


def test_one_testsuite_per_subscription():
    doc = {"verdict": "diverged", "subscriptions": [_sub("east"), _sub("west", diverged=True)]}
    root = _validate(run_junit(doc))
    assert [s.get("name") for s in root.findall("testsuite")] == ["applier.east", "applier.west"]
    assert [s.get("failures") for s in root.findall("testsuite")] == ["0", "1"]
    assert root.get("tests") == "6"


def test_a_subscription_with_its_own_articles_lists_only_them():
    settings = copy.deepcopy(_SETTINGS)
    settings["subscriptions"] = [{"name": "east", "articles": [{"name": "dbo.order_lines"}]}]
    sub = {**_sub("east"), "settings": settings, "by_article": {}}
    root = _validate(run_junit({"subscriptions": [sub]}))
    assert [c.get("name") for c in root.iter("testcase")] == ["apply", "dbo.order_lines converges"]


def test_a_stopped_run_errors_apply_and_leaves_articles_undecided():
    sub = {**_sub(), "verdict": "unknown", "reason": "the single connection failed", "by_article": {}}
    root = _validate(run_junit(sub))
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["apply"].find("error").get("message") == "the single connection failed"
    assert cases["dbo.accounts converges"].find("error").get("type") == "unknown"
    assert root.get("errors") == "3"


def test_a_check_that_could_not_decide_errors_its_articles_not_the_apply():
    """The apply ran to its end (apply_stopped None); verification failed: every article's
    testcase holds the one-line reason, the apply's none."""
    why = "could not check article 'dbo.accounts': column 'id' (int) at key [3]: not an int"
    sub = {**_sub(), "verdict": "unknown", "reason": why, "apply_stopped": None, "by_article": {}}
    root = _validate(run_junit(sub))
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["apply"].find("error") is None
    for name in ("dbo.accounts converges", "dbo.order_lines converges"):
        error = cases[name].find("error")
        assert (error.get("message"), error.text) == (f"not checked: {why}", why)
    assert root.get("errors") == "2"
    stopped = {**sub, "apply_stopped": "the single connection failed"}
    cases = {c.get("name"): c for c in _validate(run_junit(stopped)).iter("testcase")}
    assert cases["apply"].find("error").get("message") == "the single connection failed"


def test_why_the_rounds_reset_follows_the_reset_log_in_system_out():
    why = {
        "reason": "17 of 17 rounds reset to one stream: 53 commands depended ...",
        "advice": ["--x 1", "--y 2"],
    }
    sub = {**_sub(), "parallelism": why}
    root = _validate(run_junit(sub))
    out = root.find("testsuite/system-out").text.splitlines()
    assert out[-3:] == [
        f"why they reset: {why['reason']}",
        "to run in parallel: --x 1",
        "to run in parallel: --y 2",
    ]
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["resets_why"] == why["reason"]
    assert "resets_why" not in {p.get("name") for p in _validate(run_junit(_sub())).iter("property")}


def test_run_that_ended_before_its_verdict_is_one_errored_case():
    doc = unfinished_report(None, "--streams: must be between 1 and 64", 2, started=0.0, seconds=0.1)
    assert doc["schema_version"] == SCHEMA_VERSION and doc["verdict"] == "unknown"
    root = _validate(run_junit(doc))
    (case,) = root.iter("testcase")
    assert case.get("name") == "run"
    assert case.find("error").get("message") == "--streams: must be between 1 and 64"


def test_hostile_text_stays_valid_xml():
    sub = _sub(diverged=True)
    sub["divergent"][0]["article"] = 'dbo.<x> & "y"\x01'
    sub["by_article"] = {
        'dbo.<x> & "y"\x01': {"expected": 1, "found": 0, "missing": 1, "extra": 0, "different": 0}
    }
    xml = run_junit(sub)
    root = _validate(xml)
    assert any(c.get("name") == 'dbo.<x> & "y"\\x01 converges' for c in root.iter("testcase"))


def test_the_schema_rejects_what_ci_could_not_read():
    """The XSD is a real check: counts that are not numbers, a testcase without a name fail."""
    good = run_junit(_sub())
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        XSD.validate(good.replace('tests="3"', 'tests="three"', 1))
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        XSD.validate(good.replace('name="apply" ', "", 1))


def test_matrix_one_case_per_cell():
    rows = [
        {
            "workload": "key-chains",
            "partition": "key-hash",
            "model": "agent",
            "policy": "strict",
            "verdict": "converged",
            "seconds": 3.2,
        },
        {
            "workload": "vacated-insert",
            "partition": "round-robin",
            "model": "independent",
            "policy": "continue-on-data-consistency-errors",
            "verdict": "diverged",
            "divergent_rows": 2,
            "divergence": {"missing": 2},
            "divergent": [_sub(diverged=True)["divergent"][0]],
            "seconds": 4.0,
        },
        {
            "workload": "fk-chains",
            "partition": "writeset",
            "model": "agent",
            "policy": "strict",
            "verdict": "n/a",
            "reason": "writeset needs the independent model",
        },
        {
            "workload": "fk-chains",
            "partition": "key-hash",
            "model": "agent",
            "policy": "strict",
            "verdict": "unknown",
            "reason": "verification failed",
        },
    ]
    root = _validate(matrix_junit({"rows": rows, "streams": 4, "transactions": 320}))
    (suite,) = root.findall("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == (
        "4",
        "1",
        "1",
        "1",
    )
    failure = next(root.iter("failure"))
    assert "missing 2" in failure.get("message") and "inverted pair" in failure.text


def test_write_reports_writes_json_and_junit_whole(tmp_path):
    doc = {"schema_version": 2, **_sub(diverged=True)}
    files = write_reports(doc, json=tmp_path / "r" / "report.json", junit=tmp_path / "r" / "junit.xml")
    assert json.loads(Path(files["json"]).read_text())["verdict"] == "diverged"
    _validate(Path(files["junit"]).read_text())
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [
        "junit.xml",
        "report.json",
    ]  # no temporaries
