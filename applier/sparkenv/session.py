"""The Spark session: ``local[N]`` by default, a given master (:mod:`applier.sparkenv.slots`
chooses it), whatever spark-submit says when under it.

A local session's JVM keeps its temporary files in folders this process owns (removed at exit,
and by ``applier clean`` after a kill -9), sends its output to a log file unless verbose, maps
the class-data archive (:mod:`applier.sparkenv.classdata`), and compiles with C1 alone for
small runs. Python workers run this interpreter, which has the project's dependencies (pyarrow,
pyodbc), forked from a daemon that preloads them (``applier.sparkworker``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark import SparkContext
from pyspark.sql import SparkSession

from applier.sparkenv import OWN_SHUFFLE_PARTITIONS, SHUFFLE_PARTITIONS
from applier.sparkenv.classdata import class_archive, publish_when_done
from applier.sparkenv.slots import Master, choose_master, local_slots, under_spark_submit

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
    background (``api.session.start_spark``): that JVM watches its stdin for this process's end only
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
    else:
        _keep_log_of_dead_jvm(folder)
    leftovers.remove(folder)


# Spark's exit code when a JVM thread runs out of memory (SparkExitCode.OOM)
_EXIT_OOM = 52


def stopping_jvm() -> None:
    """Say the local JVM is about to be killed on purpose (SIGINT/SIGTERM): its log goes at
    exit as usual."""
    _log.stopping = True


# How long a JVM whose gateway has closed may take to run its shutdown hooks and exit (0.05 s
# measured after an error reached Python 0.5 s into System.exit; Spark's hooks stop its context)
JVM_DYING_SECONDS = 10.0


def _gateway_closed(gateway: Any) -> bool:
    """Whether the local JVM's Py4J server refuses a connection: a JVM that is exiting (its
    shutdown hooks still run, so it has no exit code yet) closed it first. A running JVM, even
    one too busy to answer, accepts at once (the kernel does): this never waits on the JVM."""
    import socket

    params = getattr(gateway, "gateway_parameters", None)
    if params is None:
        return False
    try:
        socket.create_connection((params.address, params.port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    except OSError:
        return False  # a timeout or another failure says nothing
    return False


def _exit_code_within(proc: Any, seconds: float) -> int | None:
    import subprocess

    try:
        return int(proc.wait(timeout=seconds))
    except subprocess.TimeoutExpired:
        return None


def _keep_log_of_dead_jvm(folder: Path) -> None:
    """Keep the log of a local JVM that exited before this process did, unasked (an
    ``OutOfMemoryError``, a crash, the kernel's OOM killer): it lives in ``folder``, which is
    removed at exit, and it is the only record of why. Moved to the temporary directory as
    ``applier-jvm-<pid>.log``, named on stderr. A JVM still running (it exits with this
    process), killed by a signal's handler, or logging to a file the user chose: nothing kept."""
    import shutil
    import tempfile

    proc = getattr(SparkContext._gateway, "proc", None)
    code = proc.poll() if proc is not None else None
    log = _log.file
    if _log.stopping or log is None or folder not in log.parents or not log.exists():
        return
    if code is None and proc is not None and _gateway_closed(SparkContext._gateway):
        code = _exit_code_within(proc, JVM_DYING_SECONDS)
    if code is None:
        return
    kept = Path(tempfile.gettempdir()) / f"applier-jvm-{os.getpid()}.log"
    with contextlib.suppress(OSError):
        shutil.move(str(log), kept)
        why = (
            " (Spark's code for an OutOfMemoryError: raise APPLIER_DRIVER_MEMORY)"
            if code == _EXIT_OOM
            else ""
        )
        print(
            f"applier: Spark's JVM exited with code {code}{why} before this process; its log is kept: {kept}",
            file=sys.stderr,
        )


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
    stopping: bool = False  # the JVM is killed on purpose (a signal's handler)


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
        publish_when_done(spark, archive)
    return spark
