"""Peak memory of the Spark driver JVM, of its Python workers and of this process, from /proc.

In local mode the driver JVM also hosts the executors; Python workers are its descendant
processes (``pyspark.daemon`` and the workers it forks). A sampler thread reads resident
set sizes every 0.2 s; the JVM's and this process's own peaks (VmHWM) are read at the end.
The JVM's resident set is also split into its anonymous part (heap, direct buffers, thread
stacks, malloc arenas: memory it owns) and its file-backed part (mapped files: jars, shuffle
and cache files Spark reads through mmap, tmpfs files counted as shared memory; the kernel
can drop or page out those pages).
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path


def _status(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem", "PPid"):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(name))
    return kids


def is_python(pid: int) -> bool:
    """Whether ``pid`` runs Python (its command name): a Python worker, not a short-lived child
    the JVM spawns for a shell command, which shares the JVM's memory until it execs and so
    shows the JVM's whole resident set (a 10M run counted one as a 2.6 GB "worker")."""
    try:
        with open(f"/proc/{pid}/comm", encoding="ascii", errors="replace") as f:
            return f.read().strip().startswith("python")
    except OSError:
        return False


def descendants(pid: int) -> list[int]:
    kids = _children_map()
    out, todo = [], list(kids.get(pid, []))
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


@dataclass
class MemorySampler:
    """Peak resident memory (MiB) while running: use as a context manager."""

    jvm_pid: int | None
    interval_s: float = 0.2
    peak_jvm_mib: float = 0.0
    peak_jvm_anon_mib: float = 0.0  # RssAnon: what the JVM itself holds
    peak_jvm_file_mib: float = 0.0  # RssFile + RssShmem: mapped files
    peak_workers_mib: float = 0.0  # all Python workers alive at one instant
    peak_worker_mib: float = 0.0  # the largest single worker
    peak_self_mib: float = 0.0
    progress_file: Path | None = None  # peaks so far, rewritten every few seconds (long runs)
    worker_cpu: dict[int, float] = field(default_factory=dict)  # pid -> own CPU seconds last seen
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def sample(self) -> None:
        me = _status(os.getpid()).get("VmRSS", 0) / 1024
        self.peak_self_mib = max(self.peak_self_mib, me)
        if self.jvm_pid is None:
            return
        jvm = _status(self.jvm_pid)
        self.peak_jvm_mib = max(self.peak_jvm_mib, jvm.get("VmRSS", 0) / 1024)
        self.peak_jvm_anon_mib = max(self.peak_jvm_anon_mib, jvm.get("RssAnon", 0) / 1024)
        self.peak_jvm_file_mib = max(
            self.peak_jvm_file_mib, (jvm.get("RssFile", 0) + jvm.get("RssShmem", 0)) / 1024
        )
        kids = [p for p in descendants(self.jvm_pid) if is_python(p)]
        for p in kids:
            self.worker_cpu[p] = max(self.worker_cpu.get(p, 0.0), own_cpu(p))
        sizes = [_status(p).get("VmRSS", 0) / 1024 for p in kids]
        if sizes:
            self.peak_workers_mib = max(self.peak_workers_mib, sum(sizes))
            self.peak_worker_mib = max(self.peak_worker_mib, max(sizes))

    def _loop(self) -> None:
        t0 = last = time.monotonic()
        while not self._stop.wait(self.interval_s):
            self.sample()
            if self.progress_file is not None and time.monotonic() - last > 5:
                last = time.monotonic()
                doc = {**self.to_json(), "elapsed_s": round(last - t0, 1)}
                self.progress_file.write_text(json.dumps(doc) + "\n", encoding="utf-8")

    def __enter__(self) -> MemorySampler:
        self.sample()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.sample()
        if self.jvm_pid is not None:
            self.peak_jvm_mib = max(self.peak_jvm_mib, _status(self.jvm_pid).get("VmHWM", 0) / 1024)
        self.peak_self_mib = max(self.peak_self_mib, _status(os.getpid()).get("VmHWM", 0) / 1024)

    def workers_cpu_seconds(self) -> float:
        """CPU the JVM's descendant processes used so far, each as last sampled (a worker that
        lives shorter than one sampling interval is missed)."""
        self.sample()
        return sum(self.worker_cpu.values())

    def to_json(self) -> dict[str, float]:
        return {
            "driver_jvm_peak_mib": round(self.peak_jvm_mib, 1),
            "driver_jvm_anon_peak_mib": round(self.peak_jvm_anon_mib, 1),
            "driver_jvm_file_peak_mib": round(self.peak_jvm_file_mib, 1),
            "python_driver_peak_mib": round(self.peak_self_mib, 1),
            "python_workers_peak_mib": round(self.peak_workers_mib, 1),
            "python_worker_max_mib": round(self.peak_worker_mib, 1),
        }


def jvm_pid(spark: object) -> int | None:
    """The pid of the driver JVM behind a SparkSession (Java 9+ ProcessHandle)."""
    try:
        return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - memory figures are best effort
        return None


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_of(pid: int) -> float:
    """utime + stime of the process and of its reaped children, in seconds."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    # fields[0] is the state (field 3); utime, stime, cutime, cstime are fields 14..17.
    return sum(int(x) for x in fields[11:15]) / _TICK


def own_cpu(pid: int) -> float:
    """utime + stime of the process alone, in seconds."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


def tree_cpu_seconds(pid: int | None) -> float:
    """CPU seconds used so far by a process tree: every live member's own time plus that of
    its children already gone (a postmaster reaps its backends, a daemon its workers)."""
    if pid is None:
        return 0.0
    return cpu_of(pid) + sum(cpu_of(p) for p in descendants(pid))


def parent_of(pid: int) -> int | None:
    return _status(pid).get("PPid")
