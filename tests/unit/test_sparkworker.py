"""The Python workers' daemon (applier.sparkworker): what it preloads before forking, with
this process's threads checked (a fork with a second thread running can deadlock the
child), and the clock of the imports a task still makes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from applier import sparkworker

_PROBE = (
    "import json, applier.sparkworker as w; loaded, s, why = w.preload(); "
    "print(json.dumps({'loaded': loaded, 'why': why, 'threads': w.threads(), 'seconds': s}))"
)


def _probe(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in ("JE_ARROW_MALLOC_CONF", "OPENBLAS_NUM_THREADS")}
    p = subprocess.run(
        [sys.executable, "-c", _PROBE], env={**clean, **env}, capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_the_daemon_preloads_every_module_and_stays_single_threaded() -> None:
    got = _probe()
    assert got["why"] is None
    assert got["loaded"] == list(sparkworker.PRELOAD)
    assert got["threads"] == 1  # safe to fork


def test_a_module_that_starts_a_thread_stops_the_preload_there() -> None:
    # jemalloc's purging thread, turned back on: pyarrow starts it when it loads
    got = _probe(JE_ARROW_MALLOC_CONF="background_thread:true")
    assert got["why"] == "pyarrow started a thread: nothing more is preloaded"
    assert got["loaded"][-1] == "pyarrow" and "applier.apply.streams" not in got["loaded"]


def test_the_import_clock_counts_only_imports_that_load_something() -> None:
    import builtins

    clock = sparkworker.ImportClock(builtins.__import__)
    clock("os")
    assert clock.seconds == 0.0  # loaded already: not timed
    sys.modules.pop("tabnanny", None)
    clock("tabnanny")
    assert clock.seconds > 0.0 and "tabnanny" in sys.modules
