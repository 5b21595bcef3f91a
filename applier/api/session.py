"""The Spark session a run uses: its settings (the configuration's ``[spark]`` with the
caller's over it, :func:`spark_of`), the task slots it needs, and the session started in the
background while the target starts (:func:`start_spark`), its Python workers warmed up, its JVM
compiling with C1 alone for a small run (:func:`small_run`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from applier.config import Config, check_config
from applier.config.fileformat import spark_settings
from applier.config.model import SparkSettings
from applier.sources.formats import Options
from applier.sparkenv.session import spark_session
from applier.sparkenv.slots import check_local_master, choose_master, under_spark_submit


def spark_of(
    config: Config,
    master: str | None = None,
    spark_conf: Mapping[str, str] | None = None,
    slot_wait: float | None = None,
    source: str = "run()",
) -> SparkSettings:
    """The configuration's [spark] with these over it (``spark_conf`` over its conf), checked
    as a file's would be (errors name ``source``)."""
    if master is None and not spark_conf and slot_wait is None:
        return config.spark
    merged = config.spark.merged(master, spark_conf, slot_wait)
    return spark_settings(merged.to_dict(redact=False), source)


def spark_note(settings: SparkSettings) -> str | None:
    """Under spark-submit, the line that says [spark] / --master / --conf are not applied."""
    if not under_spark_submit() or (settings.master is None and not settings.conf):
        return None
    given = ", ".join(
        [f"master {settings.master}"] * (settings.master is not None) + [f"{k}={v}" for k, v in settings.conf]
    )
    return f"under spark-submit: its --master and --conf rule; not applied: {given}"


def needed_slots(config: Config) -> int:
    """Task slots the run needs at once: its widest subscription's streams."""
    return max([config.run.streams] + [s.streams or 0 for s in config.subscriptions])


class Starting:
    """``start()`` called in a thread of its own (a daemon: it never holds the process up);
    ``result()`` waits for its value or raises what it raised."""

    def __init__(self, start: Callable[[], Any]) -> None:
        import threading

        self._value: Any = None
        self._error: BaseException | None = None

        def run() -> None:
            try:
                self._value = start()
            except BaseException as e:  # noqa: BLE001 - handed to result()
                self._error = e

        self._thread = threading.Thread(target=run, name="applier-spark-start", daemon=True)
        self._thread.start()

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def start_spark(
    config: Config, changes: str | Path | None = None, capture: Options | None = None
) -> Starting | None:
    """The session ``run(config, ...)`` would start, started now in the background (pass the
    result as ``spark=``): the CLI starts it while it starts the target. None where ``run``
    would refuse the configuration or use a session that exists (spark-submit, an active one):
    ``run`` then does what it does without it."""
    if under_spark_submit() or SparkSession.getActiveSession() is not None:
        return None
    try:
        config = check_config(config)
        config = config.replace(spark=spark_of(config, None, None, None))
        slots = needed_slots(config)
        check_local_master(choose_master(config.spark.master, "master"), slots)
    except Exception:  # noqa: BLE001 - run() says what is wrong, with its reports
        return None
    return new_session(config, slots, changes, capture)


def new_session(config: Config, slots: int, changes: str | Path | None, capture: Options | None) -> Starting:
    """The new session of ``config``'s [spark] settings, started in the background (its JVM
    with C1 alone for a small run)."""
    s = config.spark
    quick = small_run(config, changes, capture)

    def start() -> SparkSession:
        spark = spark_session(slots, master=s.master, conf=dict(s.conf), master_as="master", quick_jit=quick)
        warm_workers(spark)
        return spark

    return Starting(start)


def warm_workers(spark: SparkSession) -> None:
    """Start Spark's Python daemon (``applier.sparkworker``: its imports, ~0.6 s) and the JVM's
    path through an Arrow task, in the background, while the driver reads its input and installs
    the target: the run's first job would otherwise wait for both. One task of one row, in a job
    group of its own (not counted in any phase); a session stopped under it ends it."""
    import threading

    def warm() -> None:
        try:
            spark.sparkContext.setJobGroup("applier-warm-up", "start the Python workers", True)
            spark.range(1, numPartitions=1).mapInArrow(lambda batches: batches, "id long").collect()
        except Exception:  # noqa: BLE001,S110 - a warm-up only: the run's own jobs say what is wrong
            pass

    threading.Thread(target=warm, name="applier-warm-up", daemon=True).start()


def small_run(config: Config, changes: str | Path | None, capture: Options | None = None) -> bool:
    """A run small enough for a JVM that compiles with C1 alone (sparkenv.session.QUICK_JIT): a
    generated stream of at most QUICK_JIT_COMMANDS commands, or change files of at most ~100
    bytes a command of that (a capture read from its source database: not known, not small)."""
    from applier.sparkenv.session import QUICK_JIT_COMMANDS

    if capture is not None and capture.source is not None:
        return False
    if changes is None:
        return config.workload.commands <= QUICK_JIT_COMMANDS
    p = Path(changes)
    if not p.exists():
        return False  # not known (a URL, a cluster's path)
    try:
        files = [p] if p.is_file() else [f for f in p.rglob("*") if f.is_file()]
        return sum(f.stat().st_size for f in files) <= QUICK_JIT_COMMANDS * 100
    except OSError:
        return False
