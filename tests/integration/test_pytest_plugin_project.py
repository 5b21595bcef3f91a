"""The plugin as a user meets it: a throwaway project holding only the files copied from
examples/ (two test files, the broken procedure's SQL and its configuration; no conftest, no
pyproject) run by the installed applier's pytest. The converging test passes; the broken
procedure's test fails and its message, in the JUnit XML and on stdout, names the lost keys."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]
pytest_plugins = ["pytester"]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FILES = ("test_subscriber.py", "test_broken_procedure.py", "broken_update.sql", "broken_procedure.toml")


def test_examples_in_a_throwaway_project(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    for name in FILES:
        shutil.copy(EXAMPLES / name, project / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "APPLIER_TARGET"))}
    junit, basetemp = tmp_path / "junit.xml", tmp_path / "basetemp"
    started = time.monotonic()
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            f"--junitxml={junit}",
            f"--basetemp={basetemp}",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=1400,
    )
    seconds = time.monotonic() - started
    out = res.stdout + res.stderr
    assert res.returncode == 1, out  # 1: tests ran and some failed
    assert "applier target: embedded (default)" in res.stdout

    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert set(cases) == {
        "test_key_chains_converge_on_four_streams",
        "test_update_procedure_without_zero_row_check_loses_keys",
    }, out
    good, broken = (
        cases["test_key_chains_converge_on_four_streams"],
        cases["test_update_procedure_without_zero_row_check_loses_keys"],
    )
    assert good.get("classname") == "test_subscriber", out
    assert not list(good.iter("failure")) and not list(good.iter("error")) and not list(good.iter("skipped"))
    (failure,) = broken.iter("failure")
    message, text = failure.get("message") or "", failure.text or ""
    assert message.startswith("AssertionError: applier run DIVERGED (exit code 1)"), message

    # the keys the subscriber lost, as the run's own report has them, are named
    reports = sorted(basetemp.rglob("applier-run-1/report.json"))
    by_test = {p.parent.parent.name: json.loads(p.read_text()) for p in reports}
    (report,) = [r for name, r in by_test.items() if name.startswith("test_update_procedure")]
    assert report["verdict"] == "diverged" and report["divergence"]["missing"] > 0
    lost = [f"dbo.kc_rows ({d['key'][0]})" for d in report["divergent"] if d["kind"] == "missing"][:10]
    assert lost
    line = "missing keys: " + ", ".join(lost)
    for where in (message, text, res.stdout):
        assert line in where, where
    assert "inverted pair: lsn " in text and " ran on stream " in text
    assert f"  missing {lost[0]}" in res.stdout

    (good_report,) = [r for name, r in by_test.items() if name.startswith("test_key_chains")]
    assert good_report["verdict"] == "converged" and good_report["conflicts"]["row_not_found"] > 0
    for name in ("config.json", "schedule.jsonl", "outcome.json"):  # the run folders are kept
        assert all((p.parent / name).exists() for p in reports), name
    print(f"throwaway project: {seconds:.0f} s")


# -- applier_run in a user's session (pytester in a subprocess: an in-process run would drop
# the modules it imported from sys.modules, and Spark's pickling of applier's functions after) --
_RUNS = """
from pathlib import Path

from applier.config import parse_config
from applier.pytest_plugin import assert_converged

SWAP = parse_config({"run": {"streams": 2, "commit_batch_size": 5}, "workload": {"kind": "key-swap", "transactions": 12}})


def test_two_runs(applier_run, applier_target, tmp_path):
    a = applier_run(workload="uniform", streams=2, transactions=30, initial_rows=20, commit_batch_size=10)
    b = applier_run(SWAP, streams=3)
    assert_converged(a)
    assert_converged(b)
    assert a.settings["run"]["streams"] == 2 and b.settings["run"]["streams"] == 3
    assert b.settings["workload"]["kind"] == "key-swap"
    assert Path(a.files["json"]) == tmp_path / "applier-run-1" / "report.json"
    assert (tmp_path / "applier-run-2" / "schedule.jsonl").exists()
    Path("{out}").write_text(a.subscriptions[0].target + "\\n" + b.subscriptions[0].target)
"""


@pytest.mark.e2e
@pytest.mark.parametrize("how", ["embedded", "odbc"])
def test_applier_run_gives_each_run_its_database_and_folder(pytester, pg, how, tmp_path):
    out = tmp_path / "targets.txt"
    pytester.makepyfile(_RUNS.replace("{out}", str(out)))
    args = ["-p", "no:cacheprovider"]
    if how == "odbc":  # a database applier cannot create others on: the tables are installed again
        args += ["--applier-target", pg.connection_string()]
    result = pytester.runpytest_subprocess(*args, timeout=900)
    result.assert_outcomes(passed=1)
    a, b = out.read_text().splitlines()
    if how == "embedded":
        assert a != b and "database applier_1_test_two_runs" in a and "database applier_2_test_two_runs" in b
    else:
        assert a == b and "Pwd=***;" in a and f"Pwd={pg.password}" not in a
        result.stdout.fnmatch_lines(["applier target: *Pwd=***;* (--applier-target)"])


_WARM = """
import json
from pathlib import Path

from applier.pytest_plugin import assert_converged

LOG = Path("{out}")


def _log(name, result):
    with LOG.open("a") as f:
        f.write(json.dumps([name, result.subscriptions[0].target]) + "\\n")


def test_1_first(applier_run):
    r = applier_run(streams=2, workload="key-chains", transactions=40, seed=1)
    assert_converged(r)
    _log("first", r)


def test_2_same_articles(applier_run):
    # another stream into the same tables: any row the first test left would be an extra row
    r = applier_run(streams=2, workload="uniform", transactions=30, seed=2)
    assert_converged(r)
    _log("same", r)


def test_3_fresh(applier_run):
    r = applier_run(streams=2, workload="uniform", transactions=10, seed=3, fresh=True)
    assert_converged(r)
    _log("fresh", r)


def test_4_a_table_of_its_own(applier_run):
    r = applier_run(streams=2, workload="uniform", transactions=10, seed=4, custom_sql=["extra.sql"])
    assert_converged(r)
    _log("extra", r)


def test_5_same_custom_sql(applier_run):
    r = applier_run(streams=2, workload="uniform", transactions=10, seed=5, custom_sql=["extra.sql"])
    assert_converged(r)
    _log("extra again", r)
"""


def test_applier_run_reuses_a_database_an_earlier_test_left_with_the_same_tables(pytester, tmp_path):
    """Warm reuse (issue 32): a later test with the same articles empties an earlier test's
    database instead of creating and installing one; ``fresh=True`` and a database holding a
    table of its own (custom SQL's: its rows would outlive the emptying) get a new one."""
    out = tmp_path / "targets.jsonl"
    pytester.makepyfile(_WARM.replace("{out}", str(out)))
    pytester.makefile(".sql", extra="CREATE TABLE extra_state (n int)")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=900)
    result.assert_outcomes(passed=5)
    dbs = {name: target for name, target in (json.loads(line) for line in out.read_text().splitlines())}
    assert dbs["same"] == dbs["first"] and "test_1_first" in dbs["same"]
    assert len({dbs["first"], dbs["fresh"], dbs["extra"], dbs["extra again"]}) == 4, dbs
