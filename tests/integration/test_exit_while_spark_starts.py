"""A process that exits while its Spark JVM is still starting (a run refused or stopped in its
first seconds: the CLI starts Spark in the background while it starts the target) leaves no
JVM and no folder: the JVM watches for its parent's end only once its gateway is up, so it
lived on as an orphan and made its ``spark-*`` folder again after the exit had removed it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.integration

# Starts a session in a thread, as api.session.start_spark does, and exits once the launcher or the JVM
# runs (before its gateway is up: ~2.5 s on these machines).
SCRIPT = textwrap.dedent(
    """
    import sys, threading, time
    import psutil
    from applier.sparkenv.session import spark_session
    threading.Thread(target=spark_session, args=(2,), daemon=True).start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if any(p.name() in ("java", "bash") for p in psutil.Process().children(recursive=True)):
            sys.exit(7)
        time.sleep(0.02)
    sys.exit(1)
    """
)


def _by_cmdline(text: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter():
        try:
            if any(text in arg for arg in p.cmdline()):
                out.append(p)
        except psutil.Error:
            continue
    return out


def test_an_exit_while_the_jvm_starts_leaves_no_jvm_and_no_folder() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="spark-start-"))
    try:
        env = {**os.environ, "TMPDIR": str(tmp), "APPLIER_SPARK_CDS": "0"}
        proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, timeout=120, check=False)
        assert proc.returncode == 7, "the JVM was not seen starting"
        time.sleep(3)  # time for a JVM left alive to make its folders again
        left = _by_cmdline(f"java.io.tmpdir={tmp}")
        for p in left:  # the test's own leftovers, whatever the outcome
            p.kill()
        assert not left, "the starting JVM outlived its parent"
        assert not list(tmp.glob("applier-spark-*")), sorted(str(p) for p in tmp.rglob("*"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
