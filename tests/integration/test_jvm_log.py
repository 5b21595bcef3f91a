"""A local JVM that dies on its own (an ``OutOfMemoryError``: Spark exits with code 52) takes
its log with it: the log lives in this process's Spark folder, removed at exit. The log is
kept then, in the temporary directory, and stderr names it, also when the process ends while
the JVM still runs its shutdown hooks; a process whose JVM outlived it keeps nothing and says
nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.faults]

SCRIPT = """
import sys
from applier.sparkenv.session import configure_log, spark_session
configure_log(False)
spark = spark_session(1, app="jvm-log")
assert spark.range(3).count() == 3
if sys.argv[1].startswith("die"):
    try:
        spark._jvm.java.lang.System.exit(52)  # as Spark's handler of an OutOfMemoryError does
    except Exception:
        pass
    from pyspark import SparkContext
    if sys.argv[1] == "die-then-wait":  # gone, as when the error took a while to reach the end
        SparkContext._gateway.proc.wait(60)
    else:  # the error ends the process at once: the JVM still runs its shutdown hooks
        assert SparkContext._gateway.proc.poll() is None
    sys.exit(3)
"""


def _run(tmp_path: Path, how: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    env.pop("SPARK_LOCAL_DIRS", None)
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, how], env=env, capture_output=True, text=True, timeout=180, check=False
    )


@pytest.mark.parametrize("how", ["die-then-wait", "die-at-once"])
def test_the_log_of_a_jvm_that_died_is_kept_and_named(tmp_path: Path, how: str) -> None:
    got = _run(tmp_path, how)
    assert got.returncode == 3, got.stderr
    kept = tmp_path / f"applier-jvm-{_pid(got.stderr)}.log"
    assert "Spark's JVM exited with code 52 (Spark's code for an OutOfMemoryError" in got.stderr
    assert f"its log is kept: {kept}" in got.stderr
    assert kept.stat().st_size > 0  # the JVM's own output: its start-up lines at least
    assert not list(tmp_path.glob("applier-spark-*")), "the Spark folder is still removed"


def test_a_jvm_that_outlives_the_process_leaves_no_log(tmp_path: Path) -> None:
    got = _run(tmp_path, "live")
    assert got.returncode == 0, got.stderr
    assert "log is kept" not in got.stderr
    assert not list(tmp_path.glob("applier-jvm-*.log"))
    assert not list(tmp_path.glob("applier-spark-*"))


def _pid(stderr: str) -> str:
    marker = "applier-jvm-"
    assert marker in stderr, stderr
    return stderr.split(marker, 1)[1].split(".log", 1)[0]
