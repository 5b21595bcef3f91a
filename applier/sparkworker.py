"""The Python workers' daemon (``spark.python.daemon.module``): PySpark's own daemon, which
loads the modules applier's tasks use once, before it forks its workers.

Without it every worker imports them at its first task: pyarrow, pandas, pyodbc, pydantic and
applier's own stages, 0.5-1 s of CPU each, four or more workers at once on two cores, in the
first Python stage of a session and again in the first stage of each kind. Forked from a
daemon that holds them, a worker starts in milliseconds.

A process that forks must have one thread only (a lock held by another thread stays held in
the child, forever). pyarrow's jemalloc starts a purging thread when it loads and numpy's
OpenBLAS a thread pool: both are turned off here before they load (``JE_ARROW_MALLOC_CONF``,
``OPENBLAS_NUM_THREADS``, unless the environment says otherwise). If anything still started a
thread, the daemon preloads nothing more, and says so in the log it keeps.

The cost model (:mod:`applier.pipeline.cost`) reads what the daemon and its workers spent
starting: where ``APPLIER_WORKER_LOG`` names a folder (the driver's, on a local master), the
daemon writes there the seconds it spent preloading and each worker the seconds its tasks
still spent importing, one JSON line per event. Tasks that import nothing write nothing.
"""

from __future__ import annotations

import os

# Before anything that may load pyarrow or numpy.
os.environ.setdefault("JE_ARROW_MALLOC_CONF", "background_thread:false")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import builtins  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

LOG_ENV = "APPLIER_WORKER_LOG"
# What the stream, load, read, generation and verification tasks import, heaviest first.
PRELOAD = (
    "pyspark.worker",
    "pyarrow",
    "pyarrow.compute",
    # not pyarrow.dataset (~0.18 s): no task uses it (the events' digest groups in numpy, where
    # pyarrow's Table.group_by imported it through Acero); pandas is PySpark's, for Arrow tasks
    "pandas",
    "pyodbc",
    "pydantic",
    "applier.apply.streams",
    "applier.apply.digest",
    "applier.apply.install",
    "applier.apply.job",
    "applier.apply.agent",
    "applier.apply.independent",
    "applier.distribute.routing",
    "applier.partition.strategies",
    "applier.sources.dataset",
    "applier.sources.columnar",
    "applier.sources.hazards",
    "applier.sources.reading",
    "applier.sources.positions",
    "applier.sources.formats.convert",
    "applier.verify.target",
)


def threads() -> int:
    """This process's threads, native ones included (psutil: imported here, before the fork,
    so that the workers have it loaded; it starts no thread)."""
    import psutil

    return int(psutil.Process().num_threads())


def _log(record: dict[str, Any]) -> None:
    folder = os.environ.get(LOG_ENV)
    if not folder:
        return
    try:
        with open(os.path.join(folder, f"workers-{os.getpid()}.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
    except OSError:
        pass  # the driver's folder is gone (the run ended): nothing to record for


def preload(modules: tuple[str, ...] = PRELOAD) -> tuple[list[str], float, str | None]:
    """Import ``modules`` while this process has a single thread; returns what was loaded, the
    seconds it took, and why it stopped early (None when it did not)."""
    t = time.perf_counter()
    loaded: list[str] = []
    why = None
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - a missing optional module: the task imports it
            why = f"{name}: {type(e).__name__}: {e}"
            continue
        loaded.append(name)
        if threads() > 1:
            why = f"{name} started a thread: nothing more is preloaded"
            break
    return loaded, time.perf_counter() - t, why


class ImportClock:
    """Seconds spent in imports that loaded something, outermost import statements only."""

    def __init__(self, original: Callable[..., Any]) -> None:
        self.original = original
        self.seconds = 0.0
        self.depth = 0
        self.names: list[str] = []  # what was imported, outermost, in order

    def __call__(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self.depth or name in sys.modules:
            return self.original(name, *args, **kwargs)
        self.depth += 1
        t = time.perf_counter()
        try:
            return self.original(name, *args, **kwargs)
        finally:
            self.depth -= 1
            self.seconds += time.perf_counter() - t
            self.names.append(name)


def main() -> None:
    from pyspark import daemon

    loaded, seconds, why = preload()
    _log({"event": "preload", "t": time.time(), "seconds": seconds, "modules": len(loaded), "why": why})
    forked = daemon.worker

    def worker(*args: Any, **kwargs: Any) -> int:
        # In the forked child, once per task (reused workers run several).
        clock = builtins.__import__
        if not isinstance(clock, ImportClock):
            clock = builtins.__import__ = ImportClock(clock)
        before, names = clock.seconds, len(clock.names)
        try:
            return forked(*args, **kwargs)
        finally:
            spent = clock.seconds - before
            if spent > 0.001:
                _log(
                    {
                        "event": "imports",
                        "t": time.time(),
                        "seconds": spent,
                        "modules": clock.names[names:][:20],
                    }
                )

    daemon.worker = worker
    daemon.manager()


if __name__ == "__main__":
    main()
