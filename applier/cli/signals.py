"""SIGINT and SIGTERM: the handler that stops Spark's work and unwinds the command, and the
line and exit code (128 + the signal) of a command so stopped."""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
from collections.abc import Callable

from applier.errors import Stopped


def stopped(signum: int, a: argparse.Namespace) -> int:
    """Unwound through every `with` and `finally`: the open transactions rolled back with their
    connections, the embedded cluster and the temporary folders removed. A run says what was
    interrupted (``stopped by SIGTERM while applying round 12 of 40: ...``)."""
    name = signal.Signals(signum).name
    doing = f" {a.doing.interrupted()}" if getattr(a, "doing", None) is not None else ""
    print(f"stopped by {name}{doing}", file=sys.stderr)
    return 128 + signum


def stopper(received: list[int]) -> Callable[[int, object], None]:
    """The SIGINT/SIGTERM handler: stop Spark's work, then unwind. A local Spark's JVM (this
    process's child) is killed: its stream tasks stop mid-call, their connections close and the
    subscriber rolls the open round back, and no task prints its cancellation. Under
    spark-submit the jobs are cancelled."""

    def stop(signum: int, frame: object) -> None:
        received.append(signum)
        logging.disable(logging.CRITICAL)  # py4j logs the dead gateway's errors; stopped says it
        if "pyspark" in sys.modules:
            from pyspark import SparkContext

            sc = SparkContext._active_spark_context
            proc = getattr(getattr(sc, "_gateway", None), "proc", None)
            with contextlib.suppress(Exception):
                if proc is not None:
                    from applier.sparkenv.session import stopping_jvm

                    stopping_jvm()  # the JVM's log goes at exit: this is no crash
                    # PySpark's accumulator server would print the dead JVM's EOF as a traceback.
                    server = getattr(sc, "_accumulatorServer", None)
                    if server is not None:
                        server.handle_error = lambda request, address: None
                    proc.kill()
                elif sc is not None:
                    sc.cancelAllJobs()
        if len(received) == 1:
            raise Stopped(signum, signal.Signals(signum).name)

    return stop
