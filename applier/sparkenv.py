"""The Spark session: ``local[N]`` by default, a given master, whatever spark-submit says when under it.

The master is, first to last: the one given (``--master``, ``[spark] master``, the API's
``master=``), ``$MASTER`` / ``$SPARK_MASTER`` (refused when both are set and differ), a
``--master`` in ``$PYSPARK_SUBMIT_ARGS``, else ``local[max(streams, cores)]``. Under
spark-submit the launcher's master and properties rule and nothing here overrides them.

N streams need N task slots at once (barrier mode runs every task of a stage together), so
:func:`check_slots` counts the slots right after the session starts (``local[K]``: K; a
cluster: what its registered executors offer, after a bounded wait for them to register) and
refuses a run that needs more, in seconds, before anything is generated or installed. Python
workers run this interpreter, which has the project's dependencies (pyarrow, pyodbc).

A local driver JVM maps a class-data archive (Java's AppCDS) of the classes a run loads:
Spark starts in ~2.5 s instead of ~5 s on these machines, and a run's first queries load
their classes pre-parsed. The archive is recorded once per machine and per Java/Spark
build (``make setup`` records it; otherwise the first session records it when its process
exits), kept in ``~/.cache/applier`` (``APPLIER_CACHE``), and published by an atomic rename
only after the recording JVM exited cleanly: a half-written archive would crash the JVM that
maps it. ``APPLIER_SPARK_CDS=0`` turns it off; a Java without dynamic archives (before 13)
or an archive that no longer matches starts Spark as before.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import re
import shlex
import shutil
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark import SparkContext, StorageLevel
from pyspark.sql import DataFrame, SparkSession

# Parquet that Spark writes within a run and reads back (the events, a long schedule's spill)
# is zstd-compressed, on every master. With Spark's default Snappy (or LZ4_RAW), parquet-mr
# decompresses through codecs that hold direct buffers outside the heap, and those grew with
# what was read: 187 MiB reading 450 MB of step texts, 320 MiB reading 900 MB (zstd: 11 and
# 16 MiB): the driver JVM's growth with the stream after the apply, in local mode.
RUN_PARQUET_CODEC = "zstd"


def write_run_parquet(df: DataFrame, path: str | Path) -> None:
    """Write ``df`` as the run's own Parquet (replacing ``path``), in ``RUN_PARQUET_CODEC``."""
    df.write.mode("overwrite").option("compression", RUN_PARQUET_CODEC).parquet(str(path))


ARROW_MAX_BYTES = "spark.sql.execution.arrow.maxBytesPerBatch"
ARROW_MAX_RECORDS = "spark.sql.execution.arrow.maxRecordsPerBatch"
_NO_BYTE_LIMIT = "2147483647"  # Int.MaxValue: Spark does not measure the batch at all


def launch_conf(sc: Any) -> Any:
    """The SparkContext's own configuration (what the launcher, the builder and --conf set):
    the live SparkConf PySpark keeps, read key by key. ``sc.getConf()`` would copy it first,
    one call to the JVM per property (~150 here: ~25 ms each time, five times a run)."""
    return sc._conf  # noqa: SLF001 - PySpark's wrapper of the context's SparkConf


def _bytes_conf(text: str) -> int:
    m = re.fullmatch(r"\s*([0-9]+)\s*([kmgt]?)b?\s*", text.lower())
    if not m:
        return 64 << 20
    return int(m.group(1)) << (10 * " kmgt".index(m.group(2) or " "))


@contextlib.contextmanager
def arrow_batches_by_rows(spark: SparkSession, row_bytes: int | None) -> Iterator[None]:
    """Within it, Arrow batches sent to Python workers are cut by their row count alone when
    that count already keeps a batch of rows of at most ``row_bytes`` bytes under the byte
    limit (None: rows without a bound, nothing changes). Spark 4 measures the batch after every
    row against maxBytesPerBatch (64 MiB), walking all of its column vectors: about 3 us of
    the driver JVM's CPU per command of a stream task (8.2 -> 5.0 us at 1M commands). The
    user's own setting of the limit (the launcher's, --conf) is left alone."""
    conf = launch_conf(spark.sparkContext)
    records = int(spark.conf.get(ARROW_MAX_RECORDS, "10000") or 10000)
    limit = _bytes_conf(str(spark.conf.get(ARROW_MAX_BYTES, "64m") or "64m"))
    if row_bytes is None or records <= 0 or records * row_bytes > limit or conf.contains(ARROW_MAX_BYTES):
        yield
        return
    spark.conf.set(ARROW_MAX_BYTES, _NO_BYTE_LIMIT)
    try:
        yield
    finally:
        spark.conf.unset(ARROW_MAX_BYTES)


AQE = "spark.sql.adaptive.enabled"


SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
OWN_SHUFFLE_PARTITIONS = "spark.applier.shufflePartitions"  # the value applier set (not the user)
ROWS_PER_SHUFFLE_PARTITION = 100_000  # below it a shuffle's partitions cost more than they share


@contextlib.contextmanager
def without_aqe(spark: SparkSession, rows: int | None = None) -> Iterator[None]:
    """Within it, queries run without adaptive execution: one Spark job a query, its shuffles
    stages of it, where AQE submits each shuffle's map stage as a job of its own (the plan
    phase's layout: 3 jobs -> 1; verify's comparison: 3 -> 1; ~0.15 s of a warm 1,000-command
    run). For queries whose shuffles AQE has nothing to adapt: a repartition to a given
    number of partitions (the streams), a group-by with no join to choose a strategy for.
    ``rows``: about how many rows the queries shuffle; their group-bys then take one partition
    a ``ROWS_PER_SHUFFLE_PARTITION`` rows, at most the session's (what AQE would have
    coalesced them to). The user's own settings (the launcher's, --conf) are left alone."""
    conf = launch_conf(spark.sparkContext)
    want: dict[str, str] = {}
    if not conf.contains(AQE):
        want[AQE] = "false"
    own = conf.get(OWN_SHUFFLE_PARTITIONS, None)
    if rows is not None and (not conf.contains(SHUFFLE_PARTITIONS) or conf.get(SHUFFLE_PARTITIONS) == own):
        have = int(spark.conf.get(SHUFFLE_PARTITIONS, "200") or 200)
        want[SHUFFLE_PARTITIONS] = str(max(1, min(have, -(-rows // ROWS_PER_SHUFFLE_PARTITION))))
    before: dict[str, str | None] = {k: spark.conf.get(k, None) for k in want}
    for k, v in want.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, old in before.items():
            if old is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, old)


def under_spark_submit() -> bool:
    return "PYSPARK_GATEWAY_PORT" in os.environ


CDS_ENV = "APPLIER_SPARK_CDS"
UNUSED_DAYS = 14
_QUIET = "-Xlog:cds*=off"  # a stale archive is skipped silently (its warning went to stdout)


@dataclass(frozen=True)
class ClassArchive:
    """Where this Java and Spark build's class-data archive lives (``path``) and where this
    process's JVM records it when it is not there yet (``partial``, moved to ``path`` once
    the JVM has exited cleanly)."""

    path: Path
    partial: Path

    @property
    def ready(self) -> bool:
        return self.path.is_file()

    def java_options(self) -> str:
        if self.ready:
            return f"-XX:SharedArchiveFile={self.path} {_QUIET}"
        return f"-XX:ArchiveClassesAtExit={self.partial} {_QUIET}"

    def clear_stale(self) -> None:
        """Remove recordings left by processes that died before publishing (~180 MB each)."""
        for f in self.path.parent.glob("spark-cds-*.partial"):
            try:
                pid = int(f.name.split(".")[-2])
                os.kill(pid, 0)  # alive: still recording
            except ProcessLookupError:
                f.unlink(missing_ok=True)
            except (ValueError, IndexError, PermissionError):
                continue

    def used(self) -> None:
        """Mark the archive used now (its mtime): other builds' archives unused for
        UNUSED_DAYS are removed when one is published, in-use ones stay (two checkouts)."""
        with contextlib.suppress(OSError):
            os.utime(self.path)

    def publish(self, jvm_exit_code: int | None) -> bool:
        """Move the recorded archive into place if the JVM that wrote it exited with 0 (a
        JVM that fails to write removes the file and exits non-zero); drop other builds'
        archives unused for UNUSED_DAYS."""
        try:
            if jvm_exit_code == 0 and self.partial.is_file() and self.partial.stat().st_size > 0:
                os.replace(self.partial, self.path)
                cutoff = time.time() - UNUSED_DAYS * 86400
                for old in self.path.parent.glob("spark-cds-*.jsa"):
                    with contextlib.suppress(OSError):
                        if old != self.path and old.stat().st_mtime < cutoff:
                            old.unlink()
                return True
            return False
        finally:
            self.partial.unlink(missing_ok=True)


def _java_home() -> Path | None:
    """The Java spark-submit runs (JAVA_HOME, else java on PATH), as its real home."""
    jh = os.environ.get("JAVA_HOME")
    java = Path(jh) / "bin" / "java" if jh else (Path(w) if (w := shutil.which("java")) else None)
    if java is None or not java.exists():
        return None
    return java.resolve().parent.parent


def _java_release(home: Path) -> dict[str, str]:
    try:
        lines = (home / "release").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return {}
    return {k: v.strip().strip('"') for k, _, v in (ln.partition("=") for ln in lines) if v}


def class_archive(cache: Path | None = None) -> ClassArchive | None:
    """The class-data archive for the Java and Spark this process would start, or None (turned
    off, under spark-submit, or a Java without dynamic archives)."""
    if os.environ.get(CDS_ENV, "1").strip().lower() in ("0", "off", "no", "false") or under_spark_submit():
        return None
    home = _java_home()
    release = _java_release(home) if home else {}
    try:
        major = int(release.get("JAVA_VERSION", "0").split(".")[0])
    except ValueError:
        return None
    if home is None or major < 13:
        return None
    import pyspark

    spark_home = Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)
    jars = sorted(
        (j.name, j.stat().st_size) for j in (spark_home / "jars").glob("*.jar")
    )  # the classpath the archive was recorded with must be the one it is used with
    key = hashlib.sha256(
        repr(
            (str(home), release.get("JAVA_RUNTIME_VERSION"), pyspark.__version__, str(spark_home), jars)
        ).encode()
    ).hexdigest()[:16]
    folder = cache or Path(os.environ.get("APPLIER_CACHE") or Path.home() / ".cache" / "applier")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return ClassArchive(folder / f"spark-cds-{key}.jsa", folder / f"spark-cds-{key}.{os.getpid()}.partial")


def _publish_when_done(spark: SparkSession, archive: ClassArchive) -> None:
    """At interpreter exit: stop Spark, let the JVM exit (its stdin closes), wait for it to
    write the archive, publish it."""
    proc: Any = getattr(spark.sparkContext._gateway, "proc", None)
    if proc is None:
        return

    def done() -> None:
        code = None
        try:
            spark.stop()
            if proc.stdin:
                proc.stdin.close()
            code = proc.wait(timeout=180)
        except Exception:  # noqa: BLE001 - never fail an exit over a cache
            pass
        archive.publish(code)

    atexit.register(done)


_LOCAL: list[Path] = []


def _local_dir() -> Path:
    """The JVM's temporary folder for this process (Spark's block manager, shuffle files)."""
    from applier import leftovers

    if _LOCAL:
        return _LOCAL[0]

    leftovers.clean()
    folder = leftovers.owned_dir("applier-spark-")

    # Removed at exit without a word to Spark: after a signal its gateway may be mid-call. The
    # JVM exits when this process does (its stdin closes) and finds nothing left to delete.
    # Spark's folders under SPARK_LOCAL_DIRS go with it (:func:`_own_local_dirs`).
    atexit.register(_remove_at_exit, folder)
    _LOCAL.append(folder)
    return folder


def _remove_at_exit(folder: Path) -> None:
    """Remove this process's Spark folders, after stopping a JVM of theirs still starting.

    A run that fails or is stopped in its first seconds exits while its JVM starts in the
    background (``api.start_spark``): that JVM watches its stdin for this process's end only
    once its gateway is up, so it lived on (an orphan, found 30 minutes on), and made its
    ``spark-*`` folder again in a folder whose owner file was gone, which ``applier clean``
    leaves alone. Such a JVM (its command line names ``folder``; no gateway reached in this
    process) is killed first. A JVM whose gateway is up exits as before."""
    from applier import leftovers

    if SparkContext._gateway is None:
        import psutil

        mark = f"java.io.tmpdir={folder}"  # the launcher's arguments and the JVM's both say it
        starting = []
        with contextlib.suppress(psutil.Error):
            for p in psutil.Process().children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    if any(mark in arg for arg in p.cmdline()):
                        p.kill()
                        starting.append(p)
        psutil.wait_procs(starting, timeout=5)
    leftovers.remove(folder)


LOCAL_DIRS_ENV = "SPARK_LOCAL_DIRS"
LOCAL_DIR_CONF = "spark.local.dir"


def _own_local_dirs(given: str) -> str:
    """Folders of this process's own in each of Spark's local directories ``given`` (a comma
    list, as SPARK_LOCAL_DIRS and spark.local.dir take it), as the same list.

    Spark puts its block manager's ``blockmgr-*`` and its ``spark-*`` folders there, and only
    its JVM's shutdown hook removes them: a JVM killed by a signal (the CLI kills it, so that
    the stream tasks stop mid-call) or a kill -9 would leave them. In an ``applier-spark-*``
    folder owned by this process and recorded in :func:`_local_dir`'s, they go at exit, and
    after a kill -9 with ``applier clean``; they stay on the disks the user chose. A folder
    that cannot be made is given to Spark as it was (it will say what is wrong with it)."""
    from applier import leftovers

    if given in _OWN_LOCAL.values():  # this process's own already (a second session)
        return given
    if given not in _OWN_LOCAL:
        record = _local_dir()
        own = []
        for d in (x.strip() for x in given.split(",")):
            if not d:
                continue
            try:
                Path(d).mkdir(parents=True, exist_ok=True)
                sub = leftovers.owned_dir("applier-spark-", d)
            except OSError:
                own.append(d)
                continue
            leftovers.record_elsewhere(record, sub)
            own.append(str(sub))
        _OWN_LOCAL[given] = ",".join(own)
    return _OWN_LOCAL[given]


_OWN_LOCAL: dict[str, str] = {}  # the local directories given -> this process's own in them


LOG4J2 = Path(__file__).with_name("log4j2.properties")
# HotSpot keeps its performance counters (what jps and jstat read) in a file of
# /tmp/hsperfdata_<user>/<pid>, always /tmp on Linux, whatever java.io.tmpdir says; only a JVM
# that exits removes it, and the JVM a signal or a kill -9 stops never does. Kept in memory
# instead, nothing is left; jcmd <pid> still attaches by its pid.
# https://docs.oracle.com/en/java/javase/17/docs/specs/man/java.html (-XX:+PerfDisableSharedMem)
NO_PERF_FILE = "-XX:+PerfDisableSharedMem"
# A local driver JVM for small runs compiles with C1 alone: on 2 cores, C2's compiler threads
# compete with the run they would speed up. The demo (10,000 commands) went 15.6 -> 12.5 s
# and Spark's start 3.0 -> 2.3 s; a warm 1M-command set-based run's plan and verify took
# 6.3 -> 9.9 s and 4.6 -> 6.1 s, so a large run keeps both compilers.
QUICK_JIT = "-XX:TieredStopAtLevel=1"
JIT_ENV = "APPLIER_JIT"  # quick | full: over the run's own choice
QUICK_JIT_COMMANDS = 200_000  # runs of up to this many commands start their JVM quick


def quick_jit_chosen(asked: bool | None) -> bool:
    """Whether a new local JVM compiles with C1 alone: ``$APPLIER_JIT`` (quick, full) rules,
    then what the caller asked (None: full)."""
    env = os.environ.get(JIT_ENV, "").strip().lower()
    if env in ("quick", "full"):
        return env == "quick"
    return bool(asked)


PRELOAD_ENV = "APPLIER_WORKER_PRELOAD"  # 0: PySpark's own daemon, workers import at their first task
WORKER_LOG_ENV = "APPLIER_WORKER_LOG"  # as applier.sparkworker.LOG_ENV (not imported: it sets env)


def started_worker_log() -> Path | None:
    """The worker folder of the local Spark this process started with the preloading daemon
    (None: none started here, or under spark-submit, or the daemon turned off)."""
    return _WORKER_LOG[0] if _WORKER_LOG else None


_WORKER_LOG: list[Path] = []


def worker_log_dir() -> Path:
    """Where this process's local Python workers record what they spent starting."""
    folder = _local_dir() / "workers"
    folder.mkdir(exist_ok=True)
    if not _WORKER_LOG:
        _WORKER_LOG.append(folder)
    return folder


@dataclass
class _Log:
    verbose: bool = False
    file: Path | None = None


_log = _Log()


def configure_log(verbose: bool, log_file: str | Path | None = None) -> None:
    """How the local Spark that :func:`spark_session` starts talks: quiet (the default) sends
    everything its JVM prints (the JVM's own start-up warnings, Spark's log, the Python
    workers' output) to ``log_file`` (default: ``spark.log`` in this process's Spark
    folder, removed at exit); ``verbose`` leaves it on the console. Set before the session
    starts (the JVM's output is fixed when it is launched)."""
    _log.verbose = verbose
    _log.file = Path(log_file) if log_file is not None else None


def spark_log() -> Path | None:
    """Where the local Spark's output goes (None: the console, or not started by applier)."""
    return _log.file


def _launch_gateway(builder: Any) -> None:
    """Start the local JVM with its stdout and stderr in the log file (unless verbose): the
    JVM prints its start-up warnings (``Using incubator modules``) before any log
    configuration applies, so only its output streams can keep them off the console."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if _log.verbose or SparkContext._gateway is not None:
        return
    path = spark_log()
    if path is None:
        path = _local_dir() / "spark.log"
        _log.file = path
    path.parent.mkdir(parents=True, exist_ok=True)
    conf = SparkConf(loadDefaults=False)
    conf.setAll(list(builder._options.items()))
    with SparkContext._lock, path.open("ab") as out:
        if SparkContext._gateway is None:
            gateway = launch_gateway(conf, popen_kwargs={"stdout": out, "stderr": out})  # type: ignore[no-untyped-call]
            SparkContext._gateway = gateway
            SparkContext._jvm = gateway.jvm


# -- the master, the task slots ---------------------------------------------------------


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


def spark_session(
    slots: int = 4,
    app: str = "applier",
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    master_as: str = "master",
    quick_jit: bool | None = None,
) -> SparkSession:
    """The active session if there is one (a test's, a notebook's, spark-submit's), else a new
    one on the chosen master (:func:`choose_master`; the default ``local[max(slots, cores)]``:
    N streams need N task slots) with ``conf`` set on it last. Under spark-submit ``master``
    and ``conf`` are not applied (the launcher's settings rule)."""
    from applier.errors import ConfigError

    active = SparkSession.getActiveSession()
    if active is not None:
        have = str(active.sparkContext.master)
        if master is not None and master.strip() != have and not under_spark_submit():
            raise ConfigError(
                f"{master_as} {master}: a Spark session on {have} is already running in this process "
                "(stop it first, or leave the master out to use it)"
            )
        return active
    chosen = Master(None, "spark-submit") if under_spark_submit() else choose_master(master, master_as)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from applier.targets.connstr import ensure_odbc_env

    ensure_odbc_env()  # executors inherit the environment in local mode
    builder = SparkSession.builder.appName(app)
    archive = None
    if not under_spark_submit():
        # The JVM's temporary files (Spark's block manager, shuffle and userFiles folders) in a
        # folder this process owns: removed at exit, and by the next run after a kill -9.
        java_options = [f"-Djava.io.tmpdir={_local_dir()}", NO_PERF_FILE]
        if (archive := class_archive()) is not None:
            java_options.append(archive.java_options())
            if archive.ready:
                archive.used()
        java_options.append(f"-Dlog4j2.configurationFile={LOG4J2}")
        if quick_jit_chosen(quick_jit):
            java_options.append(QUICK_JIT)
        builder = builder.config("spark.driver.extraJavaOptions", " ".join(java_options))
        n = max(slots, os.cpu_count() or 2, 2)
        url = chosen.url or f"local[{n}]"
        if chosen.url is not None:
            n = local_slots(chosen.url, os.cpu_count() or 2) or max(slots, 2)
        builder = (
            builder.master(url)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config(SHUFFLE_PARTITIONS, str(max(2 * n, 8)))
            .config(OWN_SHUFFLE_PARTITIONS, str(max(2 * n, 8)))
            .config("spark.driver.memory", os.environ.get("APPLIER_DRIVER_MEMORY", "2g"))
            .config("spark.sql.execution.arrow.maxRecordsPerBatch", "5000")
            # Rows read from Parquet per batch (4096 by default): a step event holds the lsns
            # of a whole share (~35 KB), and 4 tasks x 4096 of them ran a 2 GiB heap out.
            .config("spark.sql.parquet.columnarReaderBatchSize", "1024")
            .config("spark.python.worker.reuse", "true")
            # Caches are built once and read a few times: uncompressed column batches build
            # ~1.8 s faster for the 1M-command planned stream (7.1 -> 5.3 s plan phase).
            .config("spark.sql.inMemoryColumnarStorage.compressed", "false")
            # HotSpot never JIT-compiles a method over 8,000 bytes of bytecode: whole-stage code
            # above that runs interpreted. Spark's documentation advises 8000 on HotSpot; at 1M
            # commands the plan phase went 11-14 s -> 8.4-11.9 s, verify ~10% faster.
            .config("spark.sql.codegen.hugeMethodLimit", "8000")
            # Every spill of a sort keeps its 1 MiB write buffer on the heap until the sort ends:
            # a stream partition of 25M rows sorted by lsn (100M commands, N = 4) spilled often
            # enough to run a 2 GiB heap out (OutOfMemoryError in UnsafeSorterSpillWriter).
            .config("spark.shuffle.spill.diskWriteBufferSize", "64k")
            # ... and merging the spills reads each through two 1 MiB heap buffers (read-ahead);
            # without read-ahead each reader has one direct (off-heap) buffer instead.
            .config("spark.unsafe.sorter.spill.read.ahead.enabled", "false")
            .config("spark.executorEnv.ODBCSYSINI", os.environ.get("ODBCSYSINI", ""))
        )
        if os.environ.get(PRELOAD_ENV, "1") != "0":
            # Workers forked from a daemon that already loaded what they import
            # (applier.sparkworker), and the seconds they still spend starting, for the cost
            # model. On a cluster, executors need applier installed anyway (the tasks are its
            # functions); there the launcher's settings rule.
            builder = builder.config("spark.python.daemon.module", "applier.sparkworker").config(
                f"spark.executorEnv.{WORKER_LOG_ENV}", str(worker_log_dir())
            )
        for key, value in (conf or {}).items():  # the user's properties over these
            builder = builder.config(key, _own_local_dirs(value) if key == LOCAL_DIR_CONF else value)
        if os.environ.get(LOCAL_DIRS_ENV, "").strip() and SparkContext._gateway is None:
            # Spark takes SPARK_LOCAL_DIRS over spark.local.dir; the JVM launched below reads it
            # from this process's environment (PySpark passes it on whole).
            os.environ[LOCAL_DIRS_ENV] = _own_local_dirs(os.environ[LOCAL_DIRS_ENV])
    handler = signal.getsignal(signal.SIGINT)
    if not under_spark_submit():
        _launch_gateway(builder)
    spark = builder.getOrCreate()
    if handler not in (signal.default_int_handler, signal.SIG_DFL, signal.SIG_IGN, None) and (
        threading.current_thread() is threading.main_thread()
    ):
        # PySpark replaces the SIGINT handler with one that cancels the jobs; a caller that
        # handles signals itself (the CLI) keeps its own.
        signal.signal(signal.SIGINT, handler)
    # A local run's log goes to its file (or, with -v, the console) at WARN; under spark-submit
    # the cluster's log configuration rules and the driver says only errors.
    spark.sparkContext.setLogLevel("ERROR" if under_spark_submit() else "WARN")
    if archive is not None and not archive.ready:
        archive.clear_stale()
        _publish_when_done(spark, archive)
    return spark


def record_class_archive(trainer: list[str]) -> str:
    """Record the class-data archive now by running ``trainer`` (a command whose Spark work
    loads the classes of a run: ``python -m applier.archive --train``) in a child process: the
    archive is written when its JVM exits, which is when it exits."""
    archive = class_archive()
    if archive is None:
        return "class-data archive: off (APPLIER_SPARK_CDS=0, spark-submit, or Java < 13)"
    if archive.ready:
        return f"class-data archive: {archive.path}"
    import subprocess

    code = subprocess.call(trainer)
    if code != 0 or not archive.ready:
        return f"class-data archive: not recorded (exit {code}); Spark starts without it"
    return f"class-data archive: recorded {archive.path} ({archive.path.stat().st_size >> 20} MiB)"


DISK_ONLY_ABOVE = 2_000_000  # rows


def cache_level(rows: int | None) -> StorageLevel:
    """How to persist a DataFrame of about ``rows`` rows (None: unknown). Large ones go to
    disk only: in local[N] the cache lives in the driver JVM, and building in-memory blocks of
    ~600k wide rows per task ran the 2 GiB heap out at 10M commands; DISK_ONLY streams each
    block to disk as it is built."""
    if rows is not None and rows > DISK_ONLY_ABOVE:
        return StorageLevel.DISK_ONLY
    return StorageLevel.MEMORY_AND_DISK
