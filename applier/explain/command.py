"""``applier streams --explain``: the stream map of a run, printed and written (see the package)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def cmd_streams(
    a: argparse.Namespace, config_of: Callable[[argparse.Namespace], Any], capture_of: Any
) -> int:
    from pyspark.sql import functions as F

    from applier.explain import describe_key, stream_map
    from applier.sparkenv.session import spark_session

    config = config_of(a)
    capture = capture_of(a)
    spark = spark_session(2, quick_jit=True)
    sm = stream_map(spark, config, a.changes, capture, a.streams)
    keys = sm.keys
    if a.article:
        keys = keys.where(F.col("article") == a.article)
    if a.key:
        keys = keys.where(F.col("key") == a.key)
    crossing = keys.where(F.size("crossing") > 0)
    total, crossed = keys.count(), crossing.count()
    ordered = sm.strategy == "writeset"
    print(
        f"{sm.commands} row commands, {sm.rounds} rounds, {sm.streams} streams ({sm.strategy}): "
        f"{total} keys, {crossed} on more than one stream within a round"
        + (" (ordered by their dependencies: writeset)" if ordered and crossed else "")
    )
    par = None
    if crossed and not ordered:
        print(
            "  where the publisher's order is not kept: a later command of the key may reach the "
            "subscriber before an earlier one (a key update's new key, 20598)"
        )
        par = sm.parallelism()
        print(par.reason)
        for line in par.advice:
            print(f"  to run in parallel: {line}")
    shown = (crossing if crossed else keys).orderBy("article", "key").take(a.limit)
    for row in shown:
        rounds = "; ".join(f"round {c['round']}: streams {list(c['streams'])}" for c in row["crossing"])
        print(
            f"{row['article']} key {row['key']}: streams {list(row['streams'])}"
            + (f" ({rounds})" if rounds else "")
        )
        for line in describe_key(row)[: a.commands]:
            print(f"    {line}")
    more = (crossed if crossed else total) - len(shown)
    if more > 0:
        print(f"  ... {more} more (--limit, --out)")
    if a.out:
        out = Path(a.out)
        keys.orderBy("article", "key").coalesce(1).write.mode("overwrite").json(str(out))
        summary = {
            "commands": sm.commands,
            "rounds": sm.rounds,
            "streams": sm.streams,
            "partition": sm.strategy,
            "keys": total,
            "crossing": crossed,
            "parallelism": None if par is None else par.to_json(),
        }
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        print(f"every key's streams and commands: {out} (JSON Lines part files, summary.json)")
    return 0


def register(
    subparsers: Any,
    add_settings: Callable[[argparse.ArgumentParser], None],
    add_run: Callable[[argparse.ArgumentParser], None],
    add_capture: Callable[[argparse.ArgumentParser], None],
    config_of: Callable[[argparse.Namespace], Any],
    capture_of: Callable[[argparse.Namespace], Any],
) -> str:
    p = subparsers.add_parser(
        "streams",
        help="which stream each key goes to, and where the publisher's order is not kept (nothing applied)",
        description="Read or generate the stream and cut it as applier run does (rounds, partition "
        "strategy, N streams), apply nothing, and show for each key its commands' rounds and streams: "
        "a key on several streams within one round is where a hazard can fire.",
    )
    add_settings(p)
    add_run(p)
    p.add_argument("--changes", help="a change file or folder (default: generate)")
    add_capture(p)
    p.add_argument("--explain", action="store_true", help="print the keys and their streams (the default)")
    p.add_argument("--article", help="only this article (schema.table)")
    p.add_argument("--key", help="only this key, as JSON: '[5]' or '[1,\"a\"]'")
    p.add_argument("--limit", type=int, default=20, help="keys printed (default 20)")
    p.add_argument("--commands", type=int, default=10, help="commands printed per key (default 10)")
    p.add_argument("--out", help="folder: every key's streams and commands as JSON Lines, and summary.json")
    p.set_defaults(func=lambda a: cmd_streams(a, config_of, capture_of))
    return "streams"
