"""ci/examples/: the GitHub Actions workflow and the GitLab CI file users copy. Parsed with
yaml: the jobs, their service images and APPLIER_TARGET from secrets; every `applier ...`
command they run parses with applier's own parser, and every `pytest ...` command's options
exist (pytest's or the plugin's: pytest itself is asked)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from applier.cli import parser

CI = Path(__file__).resolve().parents[2] / "ci" / "examples"
PG_IMAGE, MSSQL_IMAGE = "postgres:", "mcr.microsoft.com/mssql/server:2022"


def _load(name: str) -> dict:
    return yaml.safe_load((CI / name).read_text(encoding="utf-8"))


def _github() -> dict:
    return _load("github-actions.yml")


def _gitlab() -> dict:
    return _load("gitlab-ci.yml")


def _commands(script: str) -> list[list[str]]:
    """Each shell command of a script as words (continued lines joined, `a && b` split)."""
    out: list[list[str]] = []
    for line in script.replace("\\\n", " ").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        words = shlex.split(line, comments=True)
        cmd: list[str] = []
        for w in [*words, "&&"]:
            if w in ("&&", "||", ";"):
                if cmd:
                    out.append(cmd)
                cmd = []
            else:
                cmd.append(w)
    return out


def _github_scripts() -> dict[str, list[str]]:
    return {name: [s["run"] for s in job["steps"] if "run" in s] for name, job in _github()["jobs"].items()}


def _gitlab_scripts() -> dict[str, list[str]]:
    doc = _gitlab()
    base = doc[".applier"]["before_script"]
    return {n: [*base, *doc[n]["script"]] for n in ("postgres", "sqlserver")}


def _all_commands() -> list[tuple[str, list[str]]]:
    found = []
    for origin, scripts in (("github", _github_scripts()), ("gitlab", _gitlab_scripts())):
        for job, lines in scripts.items():
            for script in lines:
                found += [(f"{origin}:{job}", c) for c in _commands(script)]
    return found


# -- structure --------------------------------------------------------------------------
def test_github_jobs_services_and_target_from_secrets():
    doc = _github()
    assert doc.get(True, doc.get("on")) is not None  # `on:` reads as True in YAML 1.1
    jobs = doc["jobs"]
    assert set(jobs) == {"postgres", "sqlserver"}
    pg, ms = jobs["postgres"], jobs["sqlserver"]
    assert pg["services"]["postgres"]["image"].startswith(PG_IMAGE)
    assert ms["services"]["mssql"]["image"].startswith(MSSQL_IMAGE)
    assert ms["services"]["mssql"]["env"]["ACCEPT_EULA"] == "Y"
    assert "${{ secrets.SUBSCRIBER_MSSQL_PASSWORD }}" in ms["services"]["mssql"]["env"]["MSSQL_SA_PASSWORD"]
    assert (
        "5432:5432" in pg["services"]["postgres"]["ports"] and "1433:1433" in ms["services"]["mssql"]["ports"]
    )
    for job, driver, secret in (
        (pg, "PostgreSQL Unicode", "SUBSCRIBER_PG_PASSWORD"),
        (ms, "ODBC Driver 18 for SQL Server", "SUBSCRIBER_MSSQL_PASSWORD"),
    ):
        target = job["env"]["APPLIER_TARGET"]
        assert f"Driver={{{driver}}}" in target and f"${{{{ secrets.{secret} }}}}" in target
        assert any(s.get("uses", "").startswith("actions/checkout@") for s in job["steps"])
        assert any("pytest " in s.get("run", "") for s in job["steps"])
    msodbc = next(s["run"] for s in ms["steps"] if "msodbcsql18" in s.get("run", ""))
    assert "packages.microsoft.com/config/ubuntu/" in msodbc and "ACCEPT_EULA=Y apt-get install" in msodbc


def test_gitlab_jobs_services_and_target_from_variables():
    doc = _gitlab()
    for name, image, driver, secret in (
        ("postgres", PG_IMAGE, "PostgreSQL Unicode", "SUBSCRIBER_PG_PASSWORD"),
        ("sqlserver", MSSQL_IMAGE, "ODBC Driver 18 for SQL Server", "SUBSCRIBER_MSSQL_PASSWORD"),
    ):
        job = doc[name]
        assert job["extends"] == ".applier" and job.get("stage", doc[".applier"]["stage"]) in doc["stages"]
        (service,) = job["services"]
        assert service["name"].startswith(image) and service["alias"]
        target = job["variables"]["APPLIER_TARGET"]
        assert f"Driver={{{driver}}}" in target and f"${{{secret}}}" in target
        assert f"Server={service['alias']}" in target  # the service is reached by its alias
        assert any(f"${secret}" in str(v) for v in service["variables"].values())
    assert doc["sqlserver"]["services"][0]["variables"]["ACCEPT_EULA"] == "Y"
    script = "\n".join(doc["sqlserver"]["script"])
    assert "packages.microsoft.com/config/debian/" in script and "ACCEPT_EULA=Y apt-get install" in script
    assert doc[".applier"]["artifacts"]["reports"]["junit"] == ["out/junit.xml", "out/applier-junit.xml"]


def test_no_password_is_written_in_the_files():
    for name in ("github-actions.yml", "gitlab-ci.yml"):
        text = (CI / name).read_text()
        for line in text.splitlines():
            if "Pwd=" in line:
                pwd = line.split("Pwd=", 1)[1].split(";", 1)[0]
                assert "secrets." in pwd or pwd.strip("{}").startswith("${"), line


# -- the commands they run ---------------------------------------------------------------
def test_they_run_applier_and_pytest():
    words = {c[0] for _, c in _all_commands()}
    assert {"applier", "pytest"} <= words


@pytest.mark.parametrize(
    ("where", "cmd"),
    [pytest.param(w, c, id=f"{w}:{' '.join(c[:2])}") for w, c in _all_commands() if c[0] == "applier"],
)
def test_every_applier_command_parses(where, cmd):
    try:
        args = parser().parse_args(cmd[1:])
    except SystemExit as e:  # argparse: exit 2 on an unknown command or option
        pytest.fail(f"{where}: {' '.join(cmd)}: not an applier command line (exit {e.code})")
    assert args.command == cmd[1]


def test_every_pytest_command_line_is_accepted_by_pytest_with_the_plugin(tmp_path):
    """pytest itself parses each line (with --collect-only, in an empty project holding the
    test paths they name): an unknown option is a usage error (exit 4)."""
    lines = [(w, c) for w, c in _all_commands() if c[0] == "pytest"]
    assert lines
    for where, cmd in lines:
        args = cmd[1:]
        for i, a in enumerate(args):  # the paths they name, present and empty
            if not a.startswith("-") and (i == 0 or args[i - 1] not in ("-p", "-k", "-m")):
                (tmp_path / a).mkdir(parents=True, exist_ok=True)
        res = subprocess.run(
            [sys.executable, "-m", "pytest", *args, "--collect-only", "-q"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert res.returncode == 5, f"{where}: {' '.join(cmd)}:\n{res.stdout}{res.stderr}"  # 5: no tests


def test_the_plugin_options_parse(tmp_path):
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--applier-target",
            "mssql",
            "--applier-spark-slots",
            "16",
            "--co",
            "-q",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 5, res.stdout + res.stderr
