"""The master a new session gets and the task slots it offers.

The master is, first to last: the one given (``--master``, ``[spark] master``, the API's
``master=``), ``$MASTER`` / ``$SPARK_MASTER`` (refused when both are set and differ), a
``--master`` in ``$PYSPARK_SUBMIT_ARGS``, else ``local[max(streams, cores)]``. Under
spark-submit the launcher's master and properties rule and nothing here overrides them.

N streams need N task slots at once (barrier mode runs every task of a stage together), so
:func:`check_slots` counts the slots right after the session starts (``local[K]``: K; a
cluster: what its registered executors offer, after a bounded wait for them to register) and
refuses a run that needs more, in seconds, before anything is generated or installed.
:func:`executor_id` names the executor a stream task runs in.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from applier.sparkenv import launch_conf


def under_spark_submit() -> bool:
    return "PYSPARK_GATEWAY_PORT" in os.environ


@dataclass(frozen=True)
class Master:
    """The master a new session gets (``url`` None: ``local[max(streams, cores)]``) and where
    it was chosen (``--master``, ``$MASTER``...: what the console and the errors name)."""

    url: str | None
    source: str


_LOCAL_MASTER = re.compile(r"local(?:\[(\*|[0-9]+)(?:,\s*[0-9]+)?\])?")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[([0-9]+),\s*([0-9]+),\s*[0-9]+\]")


def choose_master(
    given: str | None = None, given_as: str = "master", env: Mapping[str, str] | None = None
) -> Master:
    """The master of a new session: ``given`` (named ``given_as`` in messages), else
    ``$MASTER`` / ``$SPARK_MASTER`` (both set and different: refused, it is not for applier to
    guess), else a ``--master`` in ``$PYSPARK_SUBMIT_ARGS``, else None (the default local)."""
    from applier.errors import ConfigError

    env = os.environ if env is None else env
    if given is not None and given.strip():
        return Master(given.strip(), given_as)
    found = {k: env[k].strip() for k in ("MASTER", "SPARK_MASTER") if env.get(k, "").strip()}
    if len(set(found.values())) > 1:
        raise ConfigError(
            f"$MASTER={found['MASTER']} and $SPARK_MASTER={found['SPARK_MASTER']} differ: unset one, "
            "or give --master"
        )
    if found:
        name = next(iter(found))
        return Master(found[name], f"${name}")
    words = shlex.split(env.get("PYSPARK_SUBMIT_ARGS", ""))
    for i, w in enumerate(words):
        if w == "--master" and i + 1 < len(words):
            return Master(words[i + 1], "$PYSPARK_SUBMIT_ARGS")
        if w.startswith("--master="):
            return Master(w.split("=", 1)[1], "$PYSPARK_SUBMIT_ARGS")
    return Master(None, "default")


def local_slots(master: str, cpus: int) -> int | None:
    """The task slots of a local master (``local``: 1, ``local[K]``: K, ``local[*]``: the
    cores, ``local-cluster[N, C, M]``: N x C); None for a cluster's master."""
    m = _LOCAL_MASTER.fullmatch(master.strip())
    if m:
        k = m.group(1)
        return 1 if k is None else max(cpus, 1) if k == "*" else int(k)
    m = _LOCAL_CLUSTER.fullmatch(master.strip())
    return int(m.group(1)) * int(m.group(2)) if m else None


def cluster_slots(executor_cores: list[int], task_cpus: int = 1) -> int:
    """The task slots executors offer: each executor's cores // spark.task.cpus, summed."""
    return sum(c // max(task_cpus, 1) for c in executor_cores)


@dataclass(frozen=True)
class Slots:
    """Task slots a session offers now (``found``), how they were counted (``how``), and
    whether more may come (a cluster's executors register after the session starts)."""

    found: int
    how: str
    growing: bool = False


def count_slots(sc: Any, cpus: int | None = None) -> Slots:
    """The task slots of a live SparkContext: a local master's threads; a cluster's, what
    its registered executors offer (Spark's own count for barrier stages,
    ``maxNumConcurrentTasks``; else executors x spark.executor.cores; else the default
    parallelism, which is the executors' cores)."""
    from applier.errors import ConfigError

    master = str(sc.master)
    conf = launch_conf(sc)
    task_cpus = int(conf.get("spark.task.cpus", "1") or 1)
    k = local_slots(master, cpus if cpus is not None else os.cpu_count() or 1)
    if k is not None:
        per = f", {task_cpus} cpus per task" if task_cpus > 1 else ""
        return Slots(k // max(task_cpus, 1), f"{_threads(k)}{per}")
    if str(conf.get("spark.dynamicAllocation.enabled", "false")).strip().lower() == "true":
        raise ConfigError(
            "spark.dynamicAllocation.enabled=true: Spark runs no barrier stage under dynamic "
            "allocation (SPARK-24942), and the N streams are one; set --conf "
            "spark.dynamicAllocation.enabled=false and give the application fixed executors "
            "(spark.cores.max, spark.executor.instances)"
        )
    jsc = sc._jsc.sc()
    try:
        executors = max(int(jsc.getExecutorMemoryStatus().size()) - 1, 0)  # the driver is listed too
    except Exception:  # noqa: BLE001 - a JVM without it: counted below
        executors = -1
    who = f"{executors} executor(s)" if executors >= 0 else "its executors"
    try:
        rp = jsc.resourceProfileManager().defaultResourceProfile()
        n = int(jsc.maxNumConcurrentTasks(rp))
        return Slots(n, f"{who} registered", growing=True)
    except Exception:  # noqa: BLE001 - Spark's private API moved: count from the configuration
        pass
    cores = conf.get("spark.executor.cores", None)
    if cores and executors >= 0:
        n = cluster_slots([int(cores)] * executors, task_cpus)
        return Slots(n, f"{who} x {cores} cores", growing=True)
    return Slots(int(sc.defaultParallelism) // max(task_cpus, 1), f"{who}, default parallelism", growing=True)


def wait_for_slots(
    count: Callable[[], Slots],
    needed: int,
    wait: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    poll: float = 0.25,
) -> tuple[Slots, float]:
    """Count until ``needed`` slots are there, or ``wait`` seconds have passed, or no more can
    come (a local master): (the last count, seconds waited)."""
    start = clock()
    while True:
        slots = count()
        waited = clock() - start
        if slots.found >= needed or not slots.growing or waited >= wait:
            return slots, waited
        sleep(min(poll, max(wait - waited, 0.0)))


def slot_refusal(streams: int, slots: Slots, master: str, waited: float = 0.0) -> str:
    """Why a run of ``streams`` streams cannot start on this session, and how to make it."""
    head = (
        f"{streams} streams need {streams} free task slots at once (the streams are one barrier "
        f"stage), and {master} has {slots.found} ({slots.how}"
    )
    most = f"fewer --streams (at most {slots.found})" if slots.found >= 1 else "fewer --streams"
    if local_slots(master, os.cpu_count() or 1) is not None:
        if under_spark_submit():
            return f"{head}): submit with --master local[{streams}], or {most}"
        return f"{head}): use --master local[{streams}] (or leave --master out), or {most}"
    after = f", after waiting {waited:.0f} s for executors" if waited >= 1 else ""
    return (
        f"{head}{after}): give the application {streams} cores (--conf spark.cores.max={streams} on a "
        f"standalone cluster, --conf spark.executor.instances=... with spark.executor.cores on "
        f"YARN or Kubernetes, or add workers), or {most}; --slot-wait S waits longer for executors"
    )


def check_slots(spark: SparkSession, streams: int, wait: float = 30.0) -> Slots:
    """Refuse (ConfigError), in seconds, a run of ``streams`` streams on a session that cannot
    run them at once; a cluster's executors get up to ``wait`` seconds to register first."""
    from applier.errors import ConfigError

    sc = spark.sparkContext
    slots, waited = wait_for_slots(lambda: count_slots(sc), streams, wait)
    if slots.found < streams:
        raise ConfigError(slot_refusal(streams, slots, str(sc.master), waited))
    return slots


def check_local_master(master: Master, streams: int) -> None:
    """Refuse before any JVM starts a local master given with fewer threads than streams."""
    from applier.errors import ConfigError

    if master.url is None or under_spark_submit() or SparkSession.getActiveSession() is not None:
        return
    k = local_slots(master.url, os.cpu_count() or 1)
    if k is not None and k < streams:
        slots = Slots(k, f"{_threads(k)}; {master.source}")
        raise ConfigError(slot_refusal(streams, slots, master.url))


def _threads(k: int) -> str:
    return f"{k} local thread{'s' if k != 1 else ''}"


def executor_id() -> str:
    """Which executor this task runs in, as Spark names it: ``$SPARK_EXECUTOR_ID``
    (Kubernetes), the ``--executor-id`` of the executor process above this Python worker
    (standalone, YARN), else ``driver`` (local mode); with the host: ``1@host``."""
    import psutil

    ident = os.environ.get("SPARK_EXECUTOR_ID")
    pid = os.getpid()
    for _ in range(6):  # worker -> daemon -> executor JVM
        if ident:
            break
        try:
            p = psutil.Process(pid)
            args = p.cmdline()
            if "--executor-id" in args:
                ident = args[args.index("--executor-id") + 1]
                break
            pid = p.ppid()
        except (psutil.Error, IndexError):
            break
        if pid <= 1:
            break
    return f"{ident or 'driver'}@{socket.gethostname()}"
