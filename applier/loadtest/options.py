"""The load-test options of ``applier run`` (and ``applier capacity``): pace, duration,
thresholds, live metrics and progress lines."""

from __future__ import annotations

import argparse
import dataclasses
import re

from applier.config import Config
from applier.config.files import with_overrides
from applier.config.thresholds import parse as parse_threshold
from applier.errors import ConfigError

_SPAN = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ms|s|m|h)?\s*$")
_SECONDS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def seconds(text: str, option: str = "--duration") -> float:
    """``10m``, ``90s``, ``1.5h``, ``250ms`` or a number of seconds."""
    m = _SPAN.match(text)
    if m is None or float(m[1]) <= 0:
        raise ConfigError(f"{option}: {text!r} is not a duration above 0 (e.g. 90s, 10m, 1h)")
    return float(m[1]) * _SECONDS[m[2]]


def add_load(p: argparse.ArgumentParser, thresholds: bool = True) -> None:
    g = p.add_argument_group("load test (pace, lag, thresholds, live metrics)")
    g.add_argument("--rate", type=float, metavar="TPS", help="apply at this many transactions per second")
    g.add_argument(
        "--pace",
        choices=["source"],
        help="source: replay a capture at its own commit times (scaled by --speed)",
    )
    g.add_argument("--speed", type=float, help="--pace source: how much faster than the capture (default 1)")
    g.add_argument(
        "--duration",
        metavar="SPAN",
        help="a generated workload of this length at --rate (10m, 90s): rate x duration transactions",
    )
    g.add_argument(
        "--batch-interval",
        type=float,
        metavar="SECONDS",
        help="a paced round takes the transactions due within this many seconds (default 0.1)",
    )
    if thresholds:
        g.add_argument(
            "--threshold",
            action="append",
            metavar="EXPR",
            help="fail the run (exit 1) unless this holds: 'lag_p99<2s', 'resets<=3', "
            "'throughput>=0.95*rate' (repeatable; with the config's [thresholds])",
        )
    g.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve Prometheus metrics on this port (127.0.0.1) while the run goes",
    )
    g.add_argument(
        "-P",
        "--progress-every",
        type=float,
        metavar="SECONDS",
        help="print a progress line every SECONDS of the apply (as pgbench -P)",
    )


def with_load(config: Config, a: argparse.Namespace) -> Config:
    """``config`` with the command line's load options over its ``[load]``, checked as a file's
    would be (errors name the option)."""
    ld = config.load
    given = {
        "rate": getattr(a, "rate", None),
        "pace": getattr(a, "pace", None),
        "speed": getattr(a, "speed", None),
        "batch_interval": getattr(a, "batch_interval", None),
    }
    changes = {k: v for k, v in given.items() if v is not None}
    if getattr(a, "duration", None) is not None:
        changes["duration"] = seconds(a.duration)
    if changes.get("rate") is not None and "pace" not in changes:
        changes["pace"] = None  # the command line's rate replaces the file's pace
    for t in getattr(a, "threshold", None) or ():
        parse_threshold(t)  # an error names --threshold and the metrics
    more = tuple(getattr(a, "threshold", None) or ())
    if not changes and not more:
        return config
    load = dataclasses.replace(ld, **changes, thresholds=(*ld.thresholds, *more))
    try:
        return with_overrides(config.replace(load=load), source="command line")
    except ConfigError as e:
        raise ConfigError(
            str(e).replace("command line: load.", "--").replace("command line: load:", "--rate/--pace:")
        ) from None
