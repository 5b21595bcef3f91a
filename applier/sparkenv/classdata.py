"""The class-data archive (Java's AppCDS) a local driver JVM maps.

It holds the classes a run loads: Spark starts in ~2.5 s instead of ~5 s on these machines,
and a run's first queries load their classes pre-parsed. The archive is recorded once per
machine and per Java/Spark build (``make setup`` records it; otherwise the first session
records it when its process exits), kept in ``~/.cache/applier`` (``APPLIER_CACHE``), and
published by an atomic rename only after the recording JVM exited cleanly: a half-written
archive would crash the JVM that maps it. ``APPLIER_SPARK_CDS=0`` turns it off; a Java without
dynamic archives (before 13) or an archive that no longer matches starts Spark as before.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from applier.sparkenv.slots import under_spark_submit

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


def publish_when_done(spark: SparkSession, archive: ClassArchive) -> None:
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
