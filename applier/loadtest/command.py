"""``applier compare`` (a CI performance gate between two runs) and ``applier capacity`` (the
highest rate a subscriber holds at each number of streams)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

Builder = Callable[[argparse.ArgumentParser], None]


def register(
    sub: Any, add_settings: Builder, add_run: Builder, make_config: Callable[[argparse.Namespace], Any]
) -> list[str]:
    c = sub.add_parser(
        "compare",
        help="compare two runs (throughput, lag percentiles, resets, phase times); exit 1 on a regression",
        description="Compare a candidate run with a baseline run of the same stream: throughput, the "
        "apply lag's percentiles, the share of rounds reset and the phases' seconds. Exit 1 when a "
        "figure is worse by more than the tolerance: a CI performance gate.",
    )
    c.add_argument("baseline", metavar="BASELINE", help="a run folder (applier run --out) or its report.json")
    c.add_argument("candidate", metavar="CANDIDATE", help="the run to judge, the same way")
    c.add_argument("--tolerance", default="10%", help="how much worse a figure may be (default 10%%)")
    c.add_argument(
        "--lag-floor",
        type=float,
        default=0.1,
        metavar="S",
        help="lag differences under S seconds never count (0.1)",
    )
    c.add_argument(
        "--phase-floor",
        type=float,
        default=5.0,
        metavar="S",
        help="phase differences under S seconds never count (5)",
    )
    c.add_argument("--json", metavar="FILE", help="write the comparison here as JSON")
    c.set_defaults(func=cmd_compare)

    k = sub.add_parser(
        "capacity",
        help="raise the rate step by step until a threshold breaks: the highest rate held at each N",
        description="For each number of streams: one run as fast as it goes, then paced runs from "
        "--start x its throughput, raised by --step until a threshold breaks. Prints the highest rate "
        "that held at each N.",
    )
    add_settings(k)
    add_run(k)
    k.add_argument("--target", help="embedded (default) | babelfish | an ODBC connection string ...")
    g = k.add_argument_group("capacity search")
    g.add_argument("--streams-list", default="1,2,4", help="the stream counts to search (default 1,2,4)")
    g.add_argument(
        "--duration", dest="run_duration", default="20s", help="each paced run's length (default 20s)"
    )
    g.add_argument(
        "--threshold",
        dest="must_hold",
        action="append",
        metavar="EXPR",
        help="what a rate must hold (repeatable; default 'lag_p99<1s' and 'throughput>=0.95*rate')",
    )
    g.add_argument(
        "--start", type=float, default=0.5, help="the first rate, times the unpaced throughput (0.5)"
    )
    g.add_argument("--step", type=float, default=1.25, help="each next rate, times the last (1.25)")
    g.add_argument("--max-steps", type=int, default=8, help="paced runs per N at most (8)")
    g.add_argument("--out", default="out/capacity", help="folder for capacity.json (default out/capacity)")
    k.set_defaults(func=lambda a: cmd_capacity(a, make_config))
    return ["compare", "capacity"]


def cmd_compare(a: argparse.Namespace) -> int:
    from applier.loadtest.compare import compare, table_lines, tolerance_of

    c = compare(
        a.baseline, a.candidate, tolerance_of(a.tolerance), lag_floor=a.lag_floor, phase_floor=a.phase_floor
    )
    print(f"baseline:  {c.baseline}")
    print(f"candidate: {c.candidate}")
    print(
        f"tolerance: {c.tolerance:.0%} (worse by more: a regression; never under {a.lag_floor:g} s of lag "
        f"or {a.phase_floor:g} s of a phase)"
    )
    for line in table_lines(c):
        print(line)
    if a.json:
        Path(a.json).write_text(json.dumps(c.to_json(), indent=2) + "\n", encoding="utf-8")
    if c.regressions:
        names = ", ".join(f"{d.metric} ({d.subscription})" for d in c.regressions)
        print(f"REGRESSION: {names}")
    else:
        print("no regression")
    return c.exit_code


def cmd_capacity(a: argparse.Namespace, make_config: Callable[[argparse.Namespace], Any]) -> int:
    import applier
    import applier.api
    from applier.errors import ConfigError
    from applier.loadtest.capacity import DEFAULT_THRESHOLDS, search, table_lines
    from applier.loadtest.options import seconds
    from applier.sparkenv.session import spark_session

    try:
        streams = [int(x) for x in a.streams_list.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--streams-list: {a.streams_list!r} is not a list of numbers (1,2,4)") from None
    if not streams or min(streams) < 1:
        raise ConfigError(f"--streams-list: {a.streams_list!r}: give stream counts of 1 or more")
    duration = seconds(a.run_duration)
    thresholds = tuple(a.must_hold or DEFAULT_THRESHOLDS)
    from applier.config.thresholds import parse

    for t in thresholds:
        parse(t)
    config = make_config(a)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    target = applier.Target.parse(a.target)
    spark = spark_session(max(max(streams), 2), quick_jit=True)
    with target:

        def one(cfg: Any) -> Any:
            return applier.api.run(cfg, target, spark=spark, explain_resets=False)

        found = search(
            config,
            one,
            streams,
            duration=duration,
            thresholds=thresholds,
            start=a.start,
            step=a.step,
            max_steps=a.max_steps,
            say=lambda m: print(f"- {m}", flush=True),
        )
    for line in table_lines(found):
        print(line)
    doc = {
        "thresholds": list(thresholds),
        "duration_seconds": duration,
        "capacity": [c.to_json() for c in found],
    }
    (out / "capacity.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(f"json: {out / 'capacity.json'}")
    return 0
