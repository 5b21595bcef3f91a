"""applier on a real Spark standalone cluster: a master and two workers of 2 cores each started
here from pyspark's own ``bin/spark-class``, a 4-stream apply whose stream tasks land on both
workers and converge; a run needing more task slots than the cluster (or a local master) has
is refused in seconds, before anything is set up.

The cluster's processes are started in their own process groups and stopped by their own PIDs
at teardown; their work and log folders are in the test's temporary folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyspark
import pytest

CLUSTER = pytest.mark.e2e  # the cluster's start-up (three JVMs) and a driver on it

SPARK_HOME = Path(pyspark.__file__).parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
APPLIER = [sys.executable, "-m", "applier.cli"]
UP_WITHIN = 120.0  # seconds for the master and both workers to be up (JVMs on a busy 2-core machine)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Standalone:
    """A standalone cluster on this host: its master URL, its workers' work folders."""

    url: str
    ui: str
    workers: dict[str, Path]
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def state(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.ui}/json/", timeout=2) as r:
            return json.loads(r.read())  # type: ignore[no-any-return]

    def worker_of(self, executor: str) -> str | None:
        """The worker whose work folder holds this executor's sandbox (``app-*/<id>``)."""
        ident = executor.split("@", 1)[0]
        for name, folder in self.workers.items():
            if any(p.name == ident for p in folder.glob("app-*/*")):
                return name
        return None


def _wait(what: str, ready: Any, procs: list[subprocess.Popen[bytes]], logs: Path) -> None:
    deadline = time.monotonic() + UP_WITHIN
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if ready():
                return
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            break
        time.sleep(0.5)
    tails = "\n".join(f"--- {f.name}\n{f.read_text()[-2000:]}" for f in sorted(logs.glob("*.out")))
    raise AssertionError(f"the standalone cluster's {what} did not come up in {UP_WITHIN:.0f} s\n{tails}")


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    if not SPARK_CLASS.exists():
        pytest.skip(f"no {SPARK_CLASS} in this pyspark")
    base = tmp_path_factory.mktemp("standalone")
    logs = base / "logs"
    logs.mkdir()
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOG_DIR": str(logs),
        "SPARK_NO_DAEMONIZE": "1",
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    for k in ("MASTER", "SPARK_MASTER", "PYSPARK_SUBMIT_ARGS", "PYSPARK_GATEWAY_PORT"):
        env.pop(k, None)
    port, ui_port = _free_port(), _free_port()
    cluster = Standalone(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}", {})

    def start(name: str, *args: str) -> None:
        out = (logs / f"{name}.out").open("wb")
        cluster.procs.append(
            subprocess.Popen(
                [str(SPARK_CLASS), *args],
                env=env,
                cwd=base,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: its executors are stopped with it
            )
        )

    try:
        t0 = time.monotonic()
        master = ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port)]
        start("master", "org.apache.spark.deploy.master.Master", *master)
        _wait("master", lambda: cluster.state()["status"] == "ALIVE", cluster.procs, logs)
        for i in (1, 2):
            folder = base / f"worker{i}"
            folder.mkdir()
            cluster.workers[f"worker{i}"] = folder
            start(
                f"worker{i}",
                "org.apache.spark.deploy.worker.Worker",
                cluster.url,
                "--cores",
                "2",
                "--memory",
                "1g",
                "--host",
                "127.0.0.1",
                "--webui-port",
                str(_free_port()),
                "--work-dir",
                str(folder),
            )
        alive = lambda: sum(w["state"] == "ALIVE" for w in cluster.state()["workers"]) == 2  # noqa: E731
        _wait("two workers", alive, cluster.procs, logs)
        print(f"\nstandalone cluster {cluster.url} up in {time.monotonic() - t0:.1f} s: 2 workers x 2 cores")
        yield cluster
    finally:
        for p in reversed(cluster.procs):  # workers first: each stops its executors
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)  # its own group (start_new_session): pgid == pid
        for p in reversed(cluster.procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)


def _applier(*args: str, timeout: float) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {k: v for k, v in os.environ.items() if k not in ("MASTER", "SPARK_MASTER", "PYSPARK_SUBMIT_ARGS")}
    t = time.monotonic()
    done = subprocess.run([*APPLIER, *args], capture_output=True, text=True, timeout=timeout, env=env)
    return done, time.monotonic() - t


@CLUSTER
def test_four_streams_run_on_both_workers_and_converge(standalone: Standalone, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    done, seconds = _applier(
        "run",
        "--master",
        standalone.url,
        "--streams",
        "4",
        "--transactions",
        "400",
        "--quiet",
        "--report",
        str(report),
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"spark: {standalone.url} (--master)" in done.stdout
    doc = json.loads(report.read_text())
    assert doc["verdict"] == "converged" and doc["rows_expected"] == doc["rows_found"]
    streams = doc["streams"]
    assert [s["stream"] for s in streams] == [0, 1, 2, 3]
    placed = {s["stream"]: (s["executor"], standalone.worker_of(s["executor"])) for s in streams}
    print(f"\napplier run on {standalone.url}: {seconds:.1f} s, verdict {doc['verdict']}")
    for stream, (executor, worker) in placed.items():
        print(f"  stream {stream}: executor {executor} on {worker}")
    workers = {w for _, w in placed.values()}
    assert None not in workers, placed  # every stream ran in one of the cluster's executors
    assert workers == {"worker1", "worker2"}, placed  # 4 tasks, 2 slots a worker: both needed


@CLUSTER
def test_more_streams_than_the_cluster_has_slots_are_refused_in_seconds(
    standalone: Standalone, tmp_path: Path
) -> None:
    done, seconds = _applier(
        "run", "--master", standalone.url, "--streams", "6", "--slot-wait", "20", "--quiet", timeout=300
    )
    print(f"\nrefused on {standalone.url} in {seconds:.1f} s: {done.stderr.strip()}")
    assert done.returncode == 2, done.stdout + done.stderr
    # 4 slots once both executors registered (fewer if this busy machine started them late).
    assert re.search(rf"6 streams need 6 free task slots .* {standalone.url} has [0-4] \(", done.stderr)
    assert "after waiting 2" in done.stderr and "spark.cores.max=6" in done.stderr
    assert "installing" not in done.stdout  # refused before anything was set up


@pytest.mark.integration
def test_an_explicit_local_master_with_fewer_threads_than_streams_is_refused_in_seconds(
    tmp_path: Path,
) -> None:
    report = tmp_path / "report.json"
    done, seconds = _applier(
        "run", "--master", "local[2]", "--streams", "4", "--report", str(report), timeout=120
    )
    print(f"\nlocal[2] with 4 streams refused in {seconds:.1f} s")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "4 streams need 4 free task slots" in done.stderr and "local[2] has 2" in done.stderr
    assert "target:" not in done.stdout  # refused before the embedded PostgreSQL started
    assert json.loads(report.read_text())["verdict"] == "unknown"
    assert seconds < 30
