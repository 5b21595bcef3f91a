"""A password expanded from the environment into a configuration file reaches the subscriber
and nothing else: not the RunResult's settings or target, not the report, not the run's
folder, not the errors of a wrong password (API and CLI, from the file or $APPLIER_TARGET)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import applier
from applier.errors import TargetError
from tests.support.subscriber import rows

pytestmark = pytest.mark.integration

SECRET = "Xq7-sekrit-Vb9"
ROLE = "ci_secret_user"

_TOML = """\
[run]
streams = 2
commit_batch_size = 20

[workload]
kind = "uniform"
transactions = 40
initial_rows = 20
seed = 5

[[articles]]
name = "dbo.sec_rows"
columns = [
    { name = "id", type = "int", key = true },
    { name = "v", type = "nvarchar(40)" },
]

[[subscriptions]]
name = "ci"
target = "Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=${SUB_PORT};Database=${SUB_DB:-secrets_sub};Uid=ci_secret_user;Pwd=${SUB_PASSWORD};"
"""


@pytest.fixture(scope="module")
def role(pg, target):
    """The session's embedded cluster with a role of another password, and its database."""
    if not rows(target, "SELECT 1 FROM pg_roles WHERE rolname = ?", ROLE):
        import pyodbc

        with pyodbc.connect(target.connection_string, autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {ROLE} LOGIN SUPERUSER PASSWORD '{SECRET}'")
    pg.create_database("secrets_sub")
    return pg


def _texts(folder: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in sorted(folder.rglob("*")) if p.is_file())


def test_an_expanded_password_connects_and_is_never_shown(spark, role, tmp_path, monkeypatch):
    monkeypatch.setenv("SUB_PORT", str(role.port))
    monkeypatch.setenv("SUB_PASSWORD", SECRET)
    monkeypatch.delenv("SUB_DB", raising=False)
    f = tmp_path / "ci.toml"
    f.write_text(_TOML)
    cfg = applier.load_config(f)
    out = tmp_path / "run"
    result = applier.run(cfg, role, spark=spark, out_dir=out)
    assert result.verdict is applier.Verdict.CONVERGED  # the password worked
    assert SECRET not in json.dumps(result.settings, default=str)
    assert SECRET not in result.subscriptions[0].target
    assert SECRET not in Path(result.files["json"]).read_text()
    everything = _texts(out)
    assert "sec_rows" in everything and SECRET not in everything

    # a wrong password: the error names the target redacted
    monkeypatch.setenv("SUB_PASSWORD", SECRET + "-wrong")
    with pytest.raises(TargetError) as e:
        applier.run(applier.load_config(f), role, spark=spark)
    assert "cannot reach the target" in str(e.value) and "Pwd=***" in str(e.value)
    assert SECRET not in str(e.value)


def _cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env}
    return subprocess.run(
        [sys.executable, "-m", "applier.cli", *args],
        capture_output=True,
        text=True,
        env=full,
        cwd=cwd,
        timeout=300,
    )


def test_the_cli_shows_no_password_from_the_file_or_the_variable(role, tmp_path):
    f = tmp_path / "ci.toml"
    f.write_text(_TOML)
    wrong = {"SUB_PORT": str(role.port), "SUB_PASSWORD": SECRET + "-wrong"}
    res = _cli("run", "--config", str(f), "--report", str(tmp_path / "r.json"), env=wrong, cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    shown = res.stdout + res.stderr + (tmp_path / "r.json").read_text()
    assert "Pwd=***" in shown and SECRET not in shown

    cs = f"Driver={{PostgreSQL Unicode}};Server=127.0.0.1;Port={role.port};Database=applier;Uid={ROLE};Pwd={SECRET}-wrong;"
    res = _cli("run", "--transactions", "10", env={"APPLIER_TARGET": cs}, cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert "cannot reach the target" in res.stdout + res.stderr
    assert SECRET not in res.stdout + res.stderr
