"""The embedded target listening on an address of this machine other than loopback
(``--listen``): reached there only with the generated password over SCRAM-SHA-256, a run's
streams connect there and converge, and the password is in no output of the run (console,
report JSON, JUnit, HTML, the run's folder, Spark's log)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import applier
from applier.errors import TargetError
from applier.targets.connstr import ensure_odbc_env
from applier.targets.embedded import EmbeddedPostgres, host_address
from tests.support.runs import config

pytestmark = pytest.mark.integration


def _address() -> str:
    """A non-loopback address of this machine (the name's, else `hostname -I`'s first)."""
    try:
        return host_address()
    except TargetError as e:
        pytest.skip(f"this machine has no address but loopback to listen on: {e}")


@pytest.fixture(scope="module")
def listening():  # type: ignore[no-untyped-def]
    ip = _address()
    pg = EmbeddedPostgres(listen=ip).start()
    yield pg, ip
    pg.stop()


def _texts(*folders: Path) -> str:
    return "\n".join(
        p.read_text(errors="replace") for f in folders for p in sorted(f.rglob("*")) if p.is_file()
    )


def test_only_the_generated_password_over_scram(listening):
    import pyodbc

    pg, ip = listening
    ensure_odbc_env()
    assert pg.password != "applier" and len(pg.password) >= 24
    assert f"Server={ip};Port={pg.port};" in pg.connection_string()
    base = f"Driver={{PostgreSQL Unicode}};Server={ip};Port={pg.port};Database=applier;Uid=applier;"
    for refused in (base, base + "Pwd=applier;", base + "Pwd=;"):
        with pytest.raises(pyodbc.Error) as e:
            pyodbc.connect(refused, autocommit=True, timeout=5)
        assert "password" in str(e.value).lower(), e.value

    with pyodbc.connect(pg.connection_string(), autocommit=True, timeout=5) as conn:
        one = conn.execute  # noqa: E731 - a short name for the checks below
        assert one("SELECT host(inet_client_addr())").fetchval() == ip  # came in on the address
        assert one("SHOW listen_addresses").fetchval() == f"127.0.0.1,{ip}"
        assert one("SHOW password_encryption").fetchval() == "scram-sha-256"
        stored = one("SELECT rolpassword FROM pg_authid WHERE rolname = 'applier'").fetchval()
        assert stored.startswith("SCRAM-SHA-256$")  # only SCRAM can check it
        rules = one(
            "SELECT type, address, netmask, auth_method FROM pg_hba_file_rules ORDER BY line_number"
        ).fetchall()
    rules = [tuple(r) for r in rules]
    assert ("host", "0.0.0.0", "0.0.0.0", "scram-sha-256") in rules
    assert ("host", "::", "::", "scram-sha-256") in rules
    assert {r[3] for r in rules} == {"scram-sha-256"}  # no trust, peer or md5 line anywhere

    reach = pg.how_to_reach()  # what --keep prints
    assert pg.password not in reach and "Pwd=***" in reach
    assert pg.password_file is not None and pg.password_file.read_text().strip() == pg.password
    assert oct(pg.password_file.stat().st_mode & 0o777) == "0o600"


@pytest.mark.smoke
def test_a_run_on_two_streams_converges_and_never_shows_the_password(spark, listening, tmp_path):
    pg, ip = listening
    out = tmp_path / "run"
    result = applier.run(
        config("listen_rows", streams=2, batch=20, kind="key-chains", transactions=120, initial_rows=40),
        pg,
        spark=spark,
        out_dir=out,
        junit=tmp_path / "junit.xml",
        html=tmp_path / "report.html",
    )
    assert result.verdict is applier.Verdict.CONVERGED
    assert result.subscriptions[0].summary.streams == 2
    assert ip in result.subscriptions[0].target and pg.password not in result.subscriptions[0].target
    everything = _texts(tmp_path)
    assert "listen_rows" in everything and pg.password not in everything


@pytest.mark.smoke
def test_the_cli_run_with_listen(tmp_path):
    """`applier run --listen ADDRESS --streams 2` in its own process: the password it
    generates is caught as it is made (outside the run's folder) and looked for everywhere."""
    ip = _address()
    caught = tmp_path / "caught"
    caught.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    catch = (
        "import secrets, sys\n"
        "made = secrets.token_urlsafe\n"
        "def token_urlsafe(n=None):\n"
        "    v = made(n)\n"
        f"    open({str(caught / 'pw')!r}, 'a').write(v + '\\n')\n"
        "    return v\n"
        "secrets.token_urlsafe = token_urlsafe\n"
        "from applier.cli import main\n"
        "sys.exit(main())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "APPLIER_TARGET"}
    res = subprocess.run(
        [sys.executable, "-c", catch, "run", "--listen", ip, "--streams", "2", "--transactions", "150"]
        + ["--commit-batch-size", "25", "--initial-rows", "50", "--out", "out", "--report", "r.json"]
        + ["--junit", "j.xml"]
        + ["--html", "r.html"],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=400,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    passwords = (caught / "pw").read_text().split()
    assert len(passwords) == 1 and len(passwords[0]) >= 24
    assert f"target: embedded PostgreSQL on {ip}:" in res.stdout and "CONVERGED" in res.stdout
    files = _texts(work)
    assert "CONVERGED" in files.upper() and (work / "out" / "spark.log").exists()
    assert passwords[0] not in res.stdout + res.stderr + files
