"""``applier run``: the configuration and the command line's paths checked before anything
starts, Spark's JVM started while the target does, the run with its live progress, and where
its outputs went."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from applier.cli.options import capture_of, config_of, with_spark
from applier.config import Config
from applier.errors import ApplierError, TargetError
from applier.sources.files import Inputs


def cmd_run(a: argparse.Namespace) -> int:
    import time

    from rich.console import Console

    import applier
    import applier.api.paths
    from applier.report.live import Doing

    a.doing = Doing()  # what the run is doing: the line a stop prints says what it interrupted
    console = Console(stderr=False)
    started = time.time()
    config: Config | None = None
    try:
        config = config_of(a)
        config = with_spark(a, config, console)
        from applier.capture.meta import warnings_of

        for w in warnings_of(a.changes):  # what `applier capture` said of these files (FILE.meta)
            print(f"warning: {w}", file=sys.stderr)
        try:
            target = applier.Target.parse(a.target, keep=a.keep)
        except ApplierError as e:
            if a.target is None:  # $APPLIER_TARGET: the message names it
                raise
            raise type(e)(f"--target: {e}") from None
        if a.listen is not None:
            target = applier.api.listening(target, a.listen)
        # Every path checked before the target starts and anything is applied.
        inputs = applier.api.paths.check_paths(
            a.changes,
            a.snapshot,
            a.custom_sql or [],
            a.report,
            a.work_dir,
            names=_OUTPUT_OPTIONS,
            capture=capture_of(a),
        )
    except BaseException as e:
        # Even a run refused before it starts leaves its reports (verdict unknown, and why).
        applier.api.write_unfinished(e, config, started, None, json=a.report, junit=a.junit, html=a.html)
        raise
    try:
        return _run_on(a, config, target, console, inputs)
    except TargetError as e:
        raise _target_named(a, config, e) from None


def _run_on(a: argparse.Namespace, config: Config, target: Any, console: Any, inputs: Inputs) -> int:
    import applier
    import applier.api.session
    from applier.loadtest.live import live_metrics
    from applier.report.console import print_run, print_whole
    from applier.report.live import LiveProgress

    # Spark's JVM starts while the target does (the target keeps this thread: its signals)
    early = applier.api.session.start_spark(config, a.changes, capture_of(a))
    with target, live_metrics(config, a, console) as metrics:
        print_whole(console, f"target: {target.description}")
        with LiveProgress(console, quiet=a.quiet, doing=a.doing) as live:
            result = applier.run(
                config,
                target,
                changes=a.changes,
                snapshot=a.snapshot,
                custom_sql=a.custom_sql or [],
                report=a.report,
                work_dir=a.work_dir,
                capture=capture_of(a),
                resume=a.resume,
                progress=live.progress,
                on_phase=live.phase,
                out_dir=a.out,
                junit=a.junit,
                html=a.html,
                spark=early,
                observer=metrics,
                inputs=inputs,  # the files scanned above: not opened again
            )
        print_run(result, console, in_all=_since_start(), profile=a.profile)
        print_where(console, result.files, _spark_log_kept(), target)
        return result.exit_code


def print_where(console: Any, files: Mapping[str, Any], log: Path | None, target: Any) -> None:
    """Where a run's outputs are, and how to reach a target it left running: each line whole,
    to copy (report.console.print_whole)."""
    from applier.report.console import print_whole

    for key in ("json", "junit", "html"):
        if key in files:
            print_whole(console, f"{_FILE_NAMES[key]}: {files[key]}")
    if log is not None:
        print_whole(console, f"Spark log: {log}")
    if target.keep:
        reach = getattr(target, "how_to_reach", target.connection_string)()  # --listen: redacted
        print_whole(console, f"{target.description} left running (--keep): {reach}")


def _since_start() -> float | None:
    """Seconds since this process started (the interpreter's start included)."""
    import time

    import psutil

    try:
        return max(0.0, time.time() - float(psutil.Process().create_time()))
    except psutil.Error:
        return None


def _spark_log_kept() -> Path | None:
    from applier.sparkenv.session import spark_log

    log = spark_log()
    return (
        log if log is not None and log.exists() and not log.parent.name.startswith("applier-spark-") else None
    )


def _target_named(a: argparse.Namespace, config: Config, e: TargetError) -> TargetError:
    """A target error of a run whose only target is --target names the option."""
    if a.target is None or any(s.target for s in config.subscriptions) or "--target" in str(e):
        return e
    return TargetError(f"--target: {e}")


_OUTPUT_OPTIONS = {"report": "--report", "work_dir": "--work-dir", "out_dir": "--out"}
_FILE_NAMES = {"json": "report", "junit": "JUnit XML", "html": "HTML report"}
