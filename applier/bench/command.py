"""``applier bench``: ceiling, applier (apply phase and end to end) and native logical apply.

In one run, on one generated stream of single-row updates (default 1,000,000 in
transactions of 100 over a 200,000-row table), for each synchronous_commit setting (on, off)
and each N (1, 2, 4, 8):

1. the ceiling: the same calls sent by a minimal pyodbc loop (:mod:`applier.bench.ceiling`);
2. applier end to end (generate, install, load, partition, apply, verify: a warm run's wall
   time, after one untimed run of a small stream in each mode; Spark's start is reported
   apart) and its apply phase alone (the run's "apply" phase, through ``applier.run``); the
   fixed cost is the difference, everything but the apply;
3. PostgreSQL's own logical replication applying the same changes (:mod:`applier.bench.native`;
   one apply worker, so one figure per setting).

Prints the table with ratios, writes ``bench.json`` and ``bench.png`` to ``--out``. A
benchmark records figures; it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from applier.bench.report import SYNCS, Measure, PerN, SyncRun, report_json, table_lines
from applier.bench.stream import BenchStream

PARTS = ("ceiling", "applier", "set", "native")


def _ints(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None
    if not out or any(n < 1 or n > 64 for n in out):
        raise argparse.ArgumentTypeError(f"stream counts must be 1..64, got {text!r}")
    return out


def _choices(allowed: tuple[str, ...]) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        out = [x.strip() for x in text.split(",") if x.strip()]
        bad = [x for x in out if x not in allowed]
        if bad or not out:
            raise argparse.ArgumentTypeError(f"expected some of {', '.join(allowed)}, got {text!r}")
        return out

    return parse


def register(subparsers: Any) -> str:
    p = subparsers.add_parser(
        "bench",
        help="measure applier against the target's ceiling and PostgreSQL's native logical apply",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    p.add_argument("--commands", type=int, default=1_000_000, help="single-row updates (default 1,000,000)")
    p.add_argument("--rows", type=int, default=200_000, help="rows in the table (default 200,000)")
    p.add_argument("--transaction-size", type=int, default=100, help="commands per transaction (default 100)")
    p.add_argument(
        "--commit-batch-size", type=int, default=100, help="transactions per round/commit (default 100)"
    )
    p.add_argument(
        "--streams", "-n", type=_ints, default=[1, 2, 4, 8], help="stream counts (default 1,2,4,8)"
    )
    p.add_argument(
        "--sync",
        type=_choices(SYNCS),
        default=list(SYNCS),
        help="synchronous_commit settings (default on,off)",
    )
    p.add_argument(
        "--only",
        type=_choices(PARTS),
        default=list(PARTS),
        help="what to measure: ceiling, applier (procedure calls), set (applier with set-based apply), "
        "native (default: all)",
    )
    p.add_argument("--seed", type=int, default=42, help="seed of the generated updates (default 42)")
    p.add_argument(
        "--out", default="out/bench", help="folder for bench.json and bench.png (default out/bench)"
    )
    p.add_argument(
        "--html",
        metavar="FILE",
        help="also write the table, the goals and the plots as one self-contained HTML file (inline SVG)",
    )
    p.add_argument(
        "--target",
        choices=("embedded", "babelfish"),
        default="embedded",
        help="the engine applier starts for each sync setting: the embedded PostgreSQL (default) or the "
        "embedded Babelfish (T-SQL over TDS: calls and set-based apply against the raw pyodbc ceiling; "
        "there is no native apply to compare with)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines, only the table")
    p.set_defaults(func=cmd_bench)
    return "bench"


def _checkpoint(cs: str) -> float:
    import pyodbc

    t = time.perf_counter()
    conn = pyodbc.connect(cs, autocommit=True, timeout=30)
    try:
        conn.cursor().execute("CHECKPOINT")
    finally:
        conn.close()
    return time.perf_counter() - t


def _postmaster(cs: str, backend_id_sql: str) -> int | None:
    """The server's postmaster pid (parent of our backend: PostgreSQL's and Babelfish's both),
    for CPU accounting."""
    import pyodbc

    from applier.sparkenv.processes import parent_of

    conn = pyodbc.connect(cs, autocommit=True, timeout=30)
    try:
        return parent_of(int(conn.cursor().execute(backend_id_sql).fetchall()[0][0]))
    finally:
        conn.close()


def _us(seconds: float, commands: int) -> float:
    return round(seconds / commands * 1e6, 2) if commands else 0.0


def cmd_bench(a: argparse.Namespace) -> int:
    from applier.errors import ConfigError

    if a.commands < a.transaction_size or a.transaction_size < 1 or a.rows < 16:
        raise ConfigError("bench needs --commands >= --transaction-size >= 1 and --rows >= 16")
    if a.html:
        import applier.api.paths

        # refused before the bench starts, not after it
        applier.api.paths.check_paths(
            None, None, (), a.html, None, names={"report": "--html", "work_dir": "--out"}
        )
    say: Callable[[str], None] = (lambda _: None) if a.quiet else (lambda m: print(f"- {m}", flush=True))
    bs = BenchStream.of(a.commands, a.rows, a.transaction_size, a.commit_batch_size, a.seed)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    only = a.only
    if a.target == "babelfish" and "native" in only:
        only = [x for x in only if x != "native"]
        say("no native apply on Babelfish: measuring the ceiling, calls and set-based apply")
    doc = run_bench(bs, a.streams, a.sync, only, say, out, engine=a.target)
    (out / "bench.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    for line in table_lines(doc):
        print(line)
    print(f"json: {out / 'bench.json'}")
    from applier.bench.plot import plot

    png = plot(doc, out / "bench.png")
    print(f"plot: {png}" if png else "plot: skipped (matplotlib missing: pip install 'applier[bench]')")
    if a.html:
        from applier.report.files import write_text
        from applier.report.html import render_bench

        print(f"html: {write_text(render_bench(doc), a.html)}")
    failed = [
        f"{sync} N={n}: {p['verdict']}"
        for sync, run in doc["runs"].items()
        for n, p in run["per_n"].items()
        for v in (p["verdict"], p.get("set_verdict"))
        if v not in (None, "converged")
    ]
    if failed:
        print("applier did not converge: " + ", ".join(failed))
        return 2
    return 0


def run_bench(
    bs: BenchStream,
    streams: list[int],
    syncs: list[str],
    only: list[str],
    say: Callable[[str], None] = lambda _: None,
    out: Path | None = None,
    engine: str = "embedded",
) -> dict[str, Any]:
    from applier.apply.install import install
    from applier.bench.ceiling import chunks_per_stream, load_rows, plan_stream, run_ceiling
    from applier.bench.stream import changes, snapshot
    from applier.bench.stream import write as write_stream
    from applier.dialects import DIALECTS
    from applier.sparkenv.processes import tree_cpu_seconds
    from applier.targets.babelfish import EmbeddedBabelfish
    from applier.targets.embedded import EmbeddedPostgres
    from applier.targets.endpoint import preflight

    server_class: Any = EmbeddedBabelfish if engine == "babelfish" else EmbeddedPostgres

    cfg = bs.config()
    w = bs.workload
    meta: dict[str, Any] = {
        "commands": w.commands,
        "transactions": w.transactions,
        "transaction_size": w.commands_per_transaction,
        "commit_batch_size": bs.commit_batch_size,
        "rows": w.initial_rows,
        "seed": w.seed,
        "streams": streams,
        "synchronous_commit": syncs,
        "measured": only,
        "target": engine,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "node": platform.node()},
    }
    from applier.sparkenv.session import spark_session

    # Spark generates the stream (sources.columnar), so every part needs it once; its start is
    # reported apart (spark_start_seconds), not in applier's end to end (a warm run's).
    say("starting Spark")
    t = time.perf_counter()
    spark = spark_session(max(streams), app="applier-bench")
    spark_start = time.perf_counter() - t
    meta["spark_start_seconds"] = round(spark_start, 3)
    source: Path | None = None
    work = None
    if "ceiling" in only or "native" in only:
        import tempfile

        # removed below, or by its finalizer if a part fails
        work = tempfile.TemporaryDirectory(prefix="applier-bench-")
        say(
            f"generating the stream for the ceiling and the native apply (untimed): {meta['commands']} commands"
        )
        source = write_stream(spark, cfg, Path(work.name))
    planned: list[Any] = []
    runs: dict[str, SyncRun] = {}
    warm: set[str] = set()
    for sync in syncs:
        run = SyncRun(sync)
        runs[sync] = run
        if "ceiling" in only or "applier" in only or "set" in only:
            with server_class(synchronous_commit=sync == "on") as pg:
                target = preflight(pg.connection_string(), f"{pg.description} (sync {sync})")
                dialect = DIALECTS[target.dialect_name]()
                if "ceiling" in only and not planned:
                    say(f"planning {meta['commands']} calls for the ceiling (untimed)")
                    planned = plan_stream(cfg, target.dialect_name, changes(cfg, source))
                postmaster = _postmaster(target.connection_string, dialect.backend_id_sql() or "SELECT 0")
                for n in streams:
                    p = PerN()
                    run.per_n[n] = p
                    if "ceiling" in only:
                        say(f"sync {sync}, N={n}: ceiling")
                        install(target, cfg.articles, f"ceiling-{n}")
                        load_rows(target.connection_string, target.dialect_name, cfg, snapshot(cfg, source))
                        per_stream = chunks_per_stream(planned, n, dialect.MAX_PARAMS_PER_BATCH)
                        _checkpoint(target.connection_string)
                        server0 = tree_cpu_seconds(postmaster)
                        c = run_ceiling(target.connection_string, target.dialect_name, per_stream)
                        server = tree_cpu_seconds(postmaster) - server0
                        p.ceiling = Measure(len(planned), c.seconds)
                        p.extra["ceiling_round_trips"] = c.round_trips
                        p.extra["ceiling_stream_seconds"] = list(c.stream_seconds)
                        p.extra["ceiling_cpu_us_per_command"] = {
                            "client": _us(c.client_cpu_seconds, len(planned)),
                            "server": _us(server, len(planned)),
                        }
                    for mode, set_apply in (("applier", False), ("set", True)):
                        if mode not in only:
                            continue
                        if mode not in warm:
                            # Both modes are measured warm: one untimed run of a smaller stream
                            # first (the JVM's compiled code, Spark's generated classes, the
                            # Python workers), as a CI session or a load test's later runs.
                            say(f"warming up {mode} (untimed): {warm_up_commands(w.commands)} commands")
                            _warm_up(spark, bs, n, target, set_apply)
                            warm.add(mode)
                        say(f"sync {sync}, N={n}: applier" + (", set-based apply" if set_apply else ""))
                        _applier(
                            spark, bs, n, sync, target, postmaster, p, spark_start, out, set_apply=set_apply
                        )
        if "native" in only:
            from applier.bench.native import run_native

            say(f"sync {sync}: PostgreSQL native logical replication")
            nr = run_native(cfg, sync == "on", say, source)
            run.native = Measure(nr.commands, nr.seconds)
            run.native_extra = {
                "worker_start_seconds": round(nr.worker_start_seconds, 3),
                "transactions": nr.transactions,
                "converged": nr.converged,
            }
    if work is not None:
        work.cleanup()
    return report_json(meta, runs, n_goal=4 if 4 in streams else max(streams))


# The warm-up's size: the measured stream's, up to a million commands. A fifth of it (20,000 to
# 200,000 commands) left the first measured 1M-command run's fixed cost 2.5-3 s above the same
# run's next one in that process (set-based: 12.2-12.8 s, then 9.3-9.7 s; JIT and heap still
# settling), so the bench measured the warm-up's end rather than a warm run. Above 1M the
# warm-up stays at 1M: what warms the JVM is the shape of the work, not its length.
WARM_UP_MAX = 1_000_000


def warm_up_commands(commands: int) -> int:
    """The commands of the untimed warm-up before a measured run of ``commands``."""
    return min(commands, WARM_UP_MAX)


def _warm_up(spark: Any, bs: BenchStream, n: int, target: Any, set_apply: bool) -> None:
    """One untimed run of the same stream (up to :data:`WARM_UP_MAX` commands), in its own subscription."""
    import applier

    w = bs.workload
    small = BenchStream.of(
        warm_up_commands(w.commands),
        min(w.initial_rows, warm_up_commands(w.commands)),
        w.commands_per_transaction,
        bs.commit_batch_size,
        w.seed,
    )
    applier.run(small.config(n, f"warm-up-{n}{'-set' if set_apply else ''}", set_apply), target, spark=spark)


def _applier(
    spark: Any,
    bs: BenchStream,
    n: int,
    sync: str,
    target: Any,
    postmaster: int | None,
    p: PerN,
    spark_start: float,
    out: Path | None = None,
    set_apply: bool = False,
) -> None:
    """One run through the public API; its apply phase, its wall time, memory peaks and the CPU
    that each side spent per command during the apply phase (JVM, Python workers, PostgreSQL)."""
    import applier
    from applier.bench.memory import MemorySampler
    from applier.sparkenv.processes import jvm_pid, own_cpu, tree_cpu_seconds

    config = bs.config(n, f"bench-{sync}-{n}{'-set' if set_apply else ''}", set_apply)
    checkpoint_s = 0.0
    jvm = jvm_pid(spark)
    marks: dict[str, tuple[float, float, float]] = {}

    tag = f"{sync}-{n}{'-set' if set_apply else ''}"
    mem = MemorySampler(jvm, progress_file=out / f"memory-{tag}.partial.json" if out else None)

    def cpu() -> tuple[float, float, float]:
        workers = mem.workers_cpu_seconds() if jvm else 0.0
        return (own_cpu(jvm) if jvm else 0.0), workers, tree_cpu_seconds(postmaster)

    def phase(text: str) -> None:
        nonlocal checkpoint_s
        if text.startswith("applying"):
            # Same start as the ceiling: the snapshot checkpointed (its time is not counted).
            checkpoint_s += _checkpoint(target.connection_string)
            marks["start"] = cpu()

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "apply" and done >= total and "start" in marks:
            marks["end"] = cpu()  # the last call comes right after the apply phase returns

    with mem:
        t = time.perf_counter()
        result = applier.run(config, target, spark=spark, on_phase=phase, progress=progress)
        wall = time.perf_counter() - t - checkpoint_s
    (sub,) = result.subscriptions
    commands = sub.summary.commands
    phases = {
        "spark_start": spark_start,
        **result.phases,
        "run_wall": wall,
        "checkpoint_excluded": checkpoint_s,
    }
    x = "set_" if set_apply else ""
    if set_apply:
        p.set_apply = Measure(commands, result.phases["apply"])
        p.set_end_to_end = Measure(commands, wall)
        p.set_phases = phases
        p.set_verdict = result.verdict.value
        p.extra["set_memory_mib"] = mem.to_json()
    else:
        p.apply = Measure(commands, result.phases["apply"])
        p.end_to_end = Measure(commands, wall)
        p.phases = phases
        p.verdict = result.verdict.value
        p.memory = mem.to_json()
    if "start" in marks and "end" in marks:
        d = [b - a for a, b in zip(marks["start"], marks["end"], strict=True)]
        p.extra[f"{x}apply_cpu_us_per_command"] = {
            "jvm": _us(d[0], commands),
            "python_workers": _us(d[1], commands),
            "server": _us(d[2], commands),
        }
    p.extra[f"{x}stream_stats"] = [dict(s) for s in sub.summary.stream_stats]
    p.extra[f"{x}resets"] = sub.summary.resets
