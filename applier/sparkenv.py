"""The Spark session: ``local[N]`` by default, whatever spark-submit says when under it.

N streams need N task slots (barrier mode refuses a stage with more tasks than slots), so
the local master gets max(streams, cores) threads. Python workers run this interpreter,
which has the project's dependencies (pyarrow, pyodbc).

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
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import SparkSession


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
    atexit.register(shutil.rmtree, folder, True)
    _LOCAL.append(folder)
    return folder


LOG4J2 = Path(__file__).with_name("log4j2.properties")


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


def spark_session(slots: int = 4, app: str = "applier") -> SparkSession:
    """The active session if there is one (a test's, a notebook's, spark-submit's), else a new
    ``local[max(slots, cores)]`` session (N streams need N task slots)."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from applier.targets.connstr import ensure_odbc_env

    ensure_odbc_env()  # executors inherit the environment in local mode
    builder = SparkSession.builder.appName(app)
    archive = None
    if not under_spark_submit():
        # The JVM's temporary files (Spark's block manager, shuffle and userFiles folders) in a
        # folder this process owns: removed at exit, and by the next run after a kill -9.
        java_options = [f"-Djava.io.tmpdir={_local_dir()}"]
        if (archive := class_archive()) is not None:
            java_options.append(archive.java_options())
            if archive.ready:
                archive.used()
        java_options.append(f"-Dlog4j2.configurationFile={LOG4J2}")
        builder = builder.config("spark.driver.extraJavaOptions", " ".join(java_options))
        n = max(slots, os.cpu_count() or 2, 2)
        builder = (
            builder.master(f"local[{n}]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", str(max(2 * n, 8)))
            .config("spark.driver.memory", os.environ.get("APPLIER_DRIVER_MEMORY", "2g"))
            .config("spark.sql.execution.arrow.maxRecordsPerBatch", "5000")
            .config("spark.python.worker.reuse", "true")
            # Caches are built once and read a few times: uncompressed column batches build
            # ~1.8 s faster for the 1M-command planned stream (7.1 -> 5.3 s plan phase).
            .config("spark.sql.inMemoryColumnarStorage.compressed", "false")
            # HotSpot never JIT-compiles a method over 8,000 bytes of bytecode: whole-stage code
            # above that runs interpreted. Spark's documentation advises 8000 on HotSpot; at 1M
            # commands the plan phase went 11-14 s -> 8.4-11.9 s, verify ~10% faster.
            .config("spark.sql.codegen.hugeMethodLimit", "8000")
            .config("spark.executorEnv.ODBCSYSINI", os.environ.get("ODBCSYSINI", ""))
        )
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
