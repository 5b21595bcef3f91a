"""Process facts of a local Spark run, through psutil: the driver JVM's pid, the CPU seconds of
a process, of a process tree, and of the JVM's JIT compiler threads.

In local mode the driver JVM also hosts the executors; the Python workers are its descendant
processes (the daemon and the workers it forks, reaped by it). These are read by the bench
(:mod:`applier.bench.memory`) and by the cost model of a run (:mod:`applier.pipeline.cost`).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

import psutil

# HotSpot's compiler threads as Linux names them (comm: the first 15 bytes of "C1 CompilerThread0").
JIT_THREADS = ("C1 CompilerThre", "C2 CompilerThre")


def is_python(pid: int) -> bool:
    """Whether ``pid`` runs Python (its command name): a Python worker, not a short-lived child
    the JVM spawns for a shell command, which shares the JVM's memory until it execs and so
    shows the JVM's whole resident set (a 10M run counted one as a 2.6 GB "worker")."""
    try:
        return str(psutil.Process(pid).name()).startswith("python")
    except psutil.Error:
        return False


def descendants(pid: int) -> list[int]:
    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def jvm_pid(spark: object) -> int | None:
    """The pid of the driver JVM behind a SparkSession (Java 9+ ProcessHandle)."""
    try:
        return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - process figures are best effort
        return None


def cpu_of(pid: int) -> float:
    """utime + stime of the process and of its reaped children, in seconds."""
    try:
        t = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0
    return float(t.user + t.system + t.children_user + t.children_system)


def own_cpu(pid: int) -> float:
    """utime + stime of the process alone, in seconds."""
    try:
        t = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0
    return float(t.user + t.system)


def tree_cpu_seconds(pid: int | None) -> float:
    """CPU seconds used so far by a process tree: every live member's own time plus that of
    its children already gone (a postmaster reaps its backends, a daemon its workers)."""
    if pid is None:
        return 0.0
    return cpu_of(pid) + sum(cpu_of(p) for p in descendants(pid))


def parent_of(pid: int) -> int | None:
    try:
        return int(psutil.Process(pid).ppid())
    except psutil.Error:
        return None


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_IS_JIT: dict[tuple[int, int], bool] = {}  # (pid, tid) -> a compiler thread: names are read once


def _thread_cpu(pid: int, tid: int) -> float:
    """utime + stime of one thread, from /proc (psutil reads every thread's, or none)."""
    with open(f"/proc/{pid}/task/{tid}/stat", encoding="ascii", errors="replace") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime: the stat's 14th and 15th fields


def jit_cpu(pid: int) -> float:
    """CPU seconds the JVM's live JIT compiler threads used so far. psutil gives a thread's
    times but not its name, so the threads are listed and named from /proc, each name read once
    (a thread still called "java" has not been named yet: read again next time). A compiler
    thread HotSpot has retired (it adds and removes them with the load) is no longer counted:
    a lower bound."""
    total = 0.0
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return 0.0
    for tid in tids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            jit = _IS_JIT.get((pid, tid))
            if jit is None:
                name = Path(f"/proc/{pid}/task/{tid}/comm").read_text(encoding="utf-8").strip()
                jit = name.startswith(JIT_THREADS)
                if name != "java":
                    _IS_JIT[(pid, tid)] = jit
            if jit:
                total += _thread_cpu(pid, tid)
    return total


@dataclass(frozen=True)
class CpuSample:
    """CPU seconds used so far: this process (the driver's Python), the JVM (the JIT's
    compiler threads among it), and the JVM's descendants (the Python workers)."""

    driver: float
    jvm: float
    jit: float
    workers: float

    @classmethod
    def now(cls, jvm: int) -> CpuSample:
        own = own_cpu(jvm)
        return cls(own_cpu(os.getpid()), own, jit_cpu(jvm), max(0.0, tree_cpu_seconds(jvm) - own))

    def since(self, earlier: CpuSample) -> CpuSample:
        return CpuSample(
            self.driver - earlier.driver,
            self.jvm - earlier.jvm,
            max(0.0, self.jit - earlier.jit),
            max(0.0, self.workers - earlier.workers),
        )

    def plus(self, other: CpuSample) -> CpuSample:
        return CpuSample(
            self.driver + other.driver,
            self.jvm + other.jvm,
            self.jit + other.jit,
            self.workers + other.workers,
        )
