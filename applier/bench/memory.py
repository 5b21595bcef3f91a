"""Peak memory of the Spark driver JVM, of its Python workers and of this process, through psutil.

In local mode the driver JVM also hosts the executors; Python workers are its descendant
processes (``pyspark.daemon`` and the workers it forks). A sampler thread reads resident
set sizes every 0.2 s; this process's own peak is the kernel's (``getrusage``'s maximum resident
set) at the end. The JVM's peak is the largest sample: psutil has no peak resident set on Linux,
and a JVM's resident set does not shrink in a run (a Spark session running jobs for 30 s: largest
sample 1213.6 MiB, the kernel's VmHWM 1213.6 MiB). The JVM's resident set is also split into its
anonymous part (heap, direct buffers, thread stacks, malloc arenas: memory it owns) and its
file-backed part (psutil's ``shared``: mapped files, as jars, shuffle and cache files Spark reads
through mmap, and tmpfs files counted as shared memory; the kernel can drop or page out those pages).
"""

from __future__ import annotations

import json
import os
import resource
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from applier.sparkenv.processes import descendants, is_python, own_cpu

MIB = 1024 * 1024


def _memory(pid: int) -> tuple[float, float]:
    """(resident, file-backed) MiB of ``pid``; zeros when it is gone."""
    try:
        m = psutil.Process(pid).memory_info()
    except psutil.Error:
        return 0.0, 0.0
    return m.rss / MIB, m.shared / MIB


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
        self.peak_self_mib = max(self.peak_self_mib, _memory(os.getpid())[0])
        if self.jvm_pid is None:
            return
        rss, shared = _memory(self.jvm_pid)
        self.peak_jvm_mib = max(self.peak_jvm_mib, rss)
        self.peak_jvm_anon_mib = max(self.peak_jvm_anon_mib, rss - shared)
        self.peak_jvm_file_mib = max(self.peak_jvm_file_mib, shared)
        kids = [p for p in descendants(self.jvm_pid) if is_python(p)]
        for p in kids:
            self.worker_cpu[p] = max(self.worker_cpu.get(p, 0.0), own_cpu(p))
        sizes = [_memory(p)[0] for p in kids]
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
        peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        self.peak_self_mib = max(self.peak_self_mib, peak_kib / 1024)

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
