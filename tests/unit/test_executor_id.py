"""Which executor a stream ran in (``sparkenv.slots.executor_id``), as the reports name it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from applier.sparkenv.slots import executor_id


def test_the_executor_is_named_by_the_executor_process_above_the_worker() -> None:
    """A Python worker finds its executor's id in the command line of a process above it (the
    executor JVM's ``--executor-id``); with none above, it is the driver's."""
    env = {k: v for k, v in os.environ.items() if k != "SPARK_EXECUTOR_ID"}
    worker = "from applier.sparkenv.slots import executor_id; print(executor_id())"
    executor = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {worker!r}])"
    out = subprocess.run(
        [sys.executable, "-c", executor, "--executor-id", "7"], env=env, capture_output=True, text=True
    )
    assert out.stdout.strip() == f"7@{socket.gethostname()}", out.stderr
    if "SPARK_EXECUTOR_ID" not in os.environ:
        assert executor_id() == f"driver@{socket.gethostname()}"
