"""The embedded Babelfish's life: started by applier as the embedded PostgreSQL is, gone after an
exit, a SIGTERM or a kill -9 (then the next start, or ``applier clean``, stops it and removes its
folder); a missing build is a clear error naming ``$APPLIER_BABELFISH``; a Babelfish reached by
an ODBC string is known as Babelfish by its own answer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyodbc
import pytest

from applier.targets import Target

pytestmark = pytest.mark.tsql

HOLD = """
import sys, time
from applier.targets.babelfish import EmbeddedBabelfish
b = EmbeddedBabelfish().start()
print(b._root, b._proc.pid, flush=True)
time.sleep(600)
"""


def _hold(tmp: Path) -> tuple[subprocess.Popen[str], Path, int]:
    """A process holding a started Babelfish: its folder and the server's pid."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    assert line, "the holder did not start Babelfish"
    return proc, Path(line[0]), int(line[1])


@pytest.fixture
def scratch():  # type: ignore[no-untyped-def]
    """A temporary folder the server's unprivileged account can reach (pytest's own are 0700)."""
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="applier-test-life-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _gone(pid: int, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


def test_a_sigterm_stops_the_server_and_removes_its_folder(babelfish, scratch) -> None:  # noqa: ARG001 - the build, found
    proc, folder, server = _hold(scratch)
    assert folder.is_dir() and _alive(server)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    assert _gone(server) and not folder.exists()


def test_after_a_kill_9_applier_clean_stops_the_server_and_removes_its_folder(babelfish, scratch) -> None:  # noqa: ARG001
    proc, folder, server = _hold(scratch)
    proc.kill()
    proc.wait(timeout=30)
    assert folder.is_dir() and _alive(server)  # nobody could clean up
    from applier.cli import main

    assert main(["clean", "--dir", str(scratch)]) == 0
    assert _gone(server) and not folder.exists()


def test_a_missing_build_is_refused_naming_the_variable(tmp_path) -> None:
    env = {**os.environ, "APPLIER_BABELFISH": str(tmp_path / "no-such-build")}
    res = subprocess.run(
        [
            str(Path(sys.executable).parent / "applier"),
            "run",
            "--target",
            "babelfish",
            "--transactions",
            "10",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert res.returncode == 2, res.stderr[-2000:]
    out = res.stdout + res.stderr
    assert "$APPLIER_BABELFISH=" in out and "no-such-build" in out and "Traceback" not in out


def test_a_babelfish_by_odbc_string_is_known_by_its_answer(babelfish) -> None:
    target = Target.odbc(babelfish.connection_string())
    endpoint = target.endpoint()
    assert endpoint.dialect_name == "babelfish" and endpoint.dialect.language == "tsql"
    assert "PWD=***" in endpoint.description  # the generated password never shows
    conn = pyodbc.connect(endpoint.connection_string, autocommit=True)
    try:
        rows = (
            conn.cursor()
            .execute("SELECT CAST(SERVERPROPERTY('Babelfish') AS nvarchar(10)), DB_NAME()")
            .fetchall()
        )
    finally:
        conn.close()
    assert tuple(rows[0]) == ("1", "applier")


def test_each_subscriber_gets_a_database_of_its_own(babelfish) -> None:
    a, b = babelfish.endpoint(), babelfish.subscriber("second_sub")
    names = []
    for e in (a, b):
        conn = pyodbc.connect(e.connection_string, autocommit=True)
        try:
            names.append(conn.cursor().execute("SELECT DB_NAME()").fetchall()[0][0])
        finally:
            conn.close()
    assert names == ["applier", "second_sub"]
