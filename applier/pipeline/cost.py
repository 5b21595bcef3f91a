"""The cost model of a run: per phase, its seconds, the Spark jobs it ran, their stages and
tasks, the seconds Python workers spent starting while it ran, and the CPU seconds each side
used (the driver's Python, the JVM and its JIT compilers among it, the Python workers).

A run's fixed cost is mostly Spark's: every job is scheduled, its stages planned and its tasks
sent, whatever the input's size. ``applier run --profile`` prints this table, the report keeps
it (``cost``), and tests hold the count of jobs of a run to what it is.

Jobs are counted by job group: each phase runs its jobs under a group of its own
(``applier-<id>-<phase>``; the caller's group is put back after). Stages and tasks are those
Spark ran, not the skipped ones whose output was already there. Worker start is what the
Python daemon (:mod:`applier.sparkworker`) and its workers recorded in this process's worker
folder: the daemon's preload and the imports tasks still made. It is known on a local master
only (a cluster's workers write on their own machines): None elsewhere.

CPU is read when each phase begins and ends (:mod:`applier.sparkenv.processes`: psutil, and /proc
for the JIT's threads),
on a local master only: a cluster's executors are other machines' processes. On two cores a
phase whose CPU is twice its seconds waited on nothing but CPU; the JIT's share says how much
of it compiled code rather than ran it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
import uuid
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pyspark.sql import SparkSession

from applier.sparkenv.processes import CpuSample

PHASES = ("prepare", "plan", "apply", "verify", "report")
T = TypeVar("T")


class Clock:
    """The seconds of one ``with`` stretch (perf_counter); ``seconds`` is set when it ends,
    whether it ended by an exception or not."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._t = 0.0

    def __enter__(self) -> Clock:
        self._t = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._t


@dataclass
class PhaseCost:
    seconds: float = 0.0
    jobs: int = 0
    stages: int = 0
    tasks: int = 0
    worker_start: float | None = None  # seconds, None: not measured (a cluster)
    cpu: CpuSample | None = None  # CPU seconds per side, None: not measured (a cluster)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seconds": round(self.seconds, 3),
            "jobs": self.jobs,
            "stages": self.stages,
            "tasks": self.tasks,
            "worker_start_seconds": None if self.worker_start is None else round(self.worker_start, 3),
            "cpu_seconds": None
            if self.cpu is None
            else {k: round(v, 3) for k, v in dataclasses.asdict(self.cpu).items()},
        }


@dataclass
class CostMeter:
    """Counts the jobs each phase runs in ``spark`` (the calling thread's jobs)."""

    spark: SparkSession
    worker_log: Path | None = None
    jvm: int | None = None  # the local driver JVM's pid: CPU is measured (None: a cluster)
    token: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    windows: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, CpuSample] = field(default_factory=dict)

    def group(self, phase: str) -> str:
        return f"applier-{self.token}-{phase}"

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[Clock]:
        sc = self.spark.sparkContext
        before = {
            k: sc.getLocalProperty(k)
            for k in ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")
        }
        sc.setJobGroup(self.group(name), f"applier {name}")
        jvm = self.jvm
        cpu = None if jvm is None else CpuSample.now(jvm)
        # The phase's seconds are its own work's: the clock starts after the first CPU sample
        # and stops before the last (a few ms each on a busy machine), so the run's report,
        # which takes its phases' seconds from the same clock (tally), says the same figure.
        clock = Clock()
        wall = time.time()
        try:
            with clock:
                yield clock
        finally:
            if jvm is not None and cpu is not None:
                used = CpuSample.now(jvm).since(cpu)
                had = self.cpu.get(name)
                self.cpu[name] = used if had is None else had.plus(used)
            self.seconds[name] = self.seconds.get(name, 0.0) + clock.seconds
            self.windows.setdefault(name, []).append((wall, time.time()))
            for k, v in before.items():
                sc.setLocalProperty(k, v)  # type: ignore[arg-type]  # None clears it

    def costs(self) -> dict[str, PhaseCost]:
        tracker = self.spark.sparkContext.statusTracker()
        starts = self._worker_starts()
        loose = self._ungrouped()
        out: dict[str, PhaseCost] = {}
        for name in self.seconds:
            c = PhaseCost(seconds=self.seconds[name], cpu=self.cpu.get(name))
            mine = [j for j, t in loose if any(lo <= t <= hi for lo, hi in self.windows[name])]
            for job in [*tracker.getJobIdsForGroup(self.group(name)), *mine]:
                info = tracker.getJobInfo(job)
                if info is None:
                    continue
                c.jobs += 1
                for sid in info.stageIds:
                    stage = tracker.getStageInfo(sid)
                    ran = 0 if stage is None else stage.numCompletedTasks + stage.numFailedTasks
                    if not ran:
                        continue  # skipped: its output was there already
                    c.stages += 1
                    c.tasks += ran
            if starts is not None:
                c.worker_start = sum(
                    s for t, s in starts if any(lo <= t <= hi for lo, hi in self.windows[name])
                )
            out[name] = c
        return out

    def _ungrouped(self) -> list[tuple[int, float]]:
        """(job, submitted at) of the jobs without a job group submitted since the first phase
        began: a broadcast or a subquery Spark runs from a thread of its own, which does not
        carry the caller's group. Each is counted in the phase it was submitted in."""
        if not self.windows:
            return []
        since = min(lo for w in self.windows.values() for lo, _ in w)
        store = self.spark.sparkContext._jsc.sc().statusStore()
        out = []
        for job in sorted(self.spark.sparkContext.statusTracker().getJobIdsForGroup(None), reverse=True):
            try:
                submitted = store.job(job).submissionTime()
            except Exception:  # noqa: BLE001 - a job no longer retained
                continue
            if not submitted.isDefined():
                continue
            t = submitted.get().getTime() / 1000
            if t < since:
                break  # job ids rise with time: the rest are older
            out.append((job, t))
        return out

    def _worker_starts(self) -> list[tuple[float, float]] | None:
        if self.worker_log is None or not self.worker_log.is_dir():
            return None
        out = []
        for f in self.worker_log.glob("workers-*.jsonl"):
            with contextlib.suppress(OSError):
                for line in f.read_text(encoding="utf-8").splitlines():
                    with contextlib.suppress(ValueError, KeyError, TypeError):
                        r = json.loads(line)
                        out.append((float(r["t"]), float(r["seconds"])))
        return out


_METER: ContextVar[CostMeter | None] = ContextVar("applier_cost_meter", default=None)
_TALLY: ContextVar[dict[str, float] | None] = ContextVar("applier_phase_tally", default=None)


def meter_for(spark: SparkSession) -> CostMeter:
    """A meter for one run in ``spark``; worker start is read where this process started a
    local Spark (its worker folder), None otherwise (a cluster's workers write on their hosts)."""
    from applier.sparkenv.processes import jvm_pid
    from applier.sparkenv.session import started_worker_log

    local = str(spark.sparkContext.master).startswith("local")
    return CostMeter(spark, started_worker_log() if local else None, jvm_pid(spark) if local else None)


@contextlib.contextmanager
def _bound(var: ContextVar[T | None], value: T) -> Iterator[T]:
    token = var.set(value)
    try:
        yield value
    finally:
        var.reset(token)


def metering(meter: CostMeter) -> contextlib.AbstractContextManager[CostMeter]:
    """Within it, :func:`phase` counts into ``meter``."""
    return _bound(_METER, meter)


def tally(phases: dict[str, float]) -> contextlib.AbstractContextManager[dict[str, float]]:
    """Within it, every :func:`phase` also adds its seconds to ``phases[name]``: a
    subscription's own figures, from the same clock as the meter's."""
    return _bound(_TALLY, phases)


@contextlib.contextmanager
def phase(name: str) -> Iterator[Clock]:
    """Count what runs within into the current meter's ``name``, and into the current tally's;
    yields the clock of this stretch (its ``seconds`` are set when it ends)."""
    meter, phases = _METER.get(), _TALLY.get()
    clock: Clock | None = None
    try:
        with Clock() if meter is None else meter.phase(name) as clock:
            yield clock
    finally:
        if phases is not None and clock is not None:
            phases[name] = phases.get(name, 0.0) + clock.seconds
