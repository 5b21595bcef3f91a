"""The reproduction commands: ``applier explore``, ``shrink``, ``export`` and ``replay``.

``explore`` takes the run's settings and inputs as ``applier run`` does; the CLI hands this
module its option builders (``register``), so both read them the same way.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

COMMANDS = ("explore", "shrink", "export", "replay")
Builder = Callable[[argparse.ArgumentParser], None]


def register(
    sub: Any, add_settings: Builder, add_run: Builder, make_config: Callable[[argparse.Namespace], Any]
) -> list[str]:
    e = sub.add_parser(
        "explore",
        help="run K seeded controlled schedules of one stream; stop at the first that fails and keep its run folder",
    )
    add_settings(e)
    add_run(e)
    g = e.add_argument_group("exploration")
    g.add_argument("--budget", type=int, default=200, help="schedules to try (default 200)")
    g.add_argument(
        "--strategy",
        choices=["pct", "random"],
        default="pct",
        help="how each schedule picks the next stream: pct (probabilistic concurrency testing, default) or random",
    )
    g.add_argument("--first-seed", type=int, default=0, help="seed of the first try (then +1 each)")
    _inputs(e)
    e.add_argument(
        "--out", default="out/explore", help="where the failing try's run folder goes (default out/explore)"
    )
    e.add_argument("--quiet", "-q", action="store_true", help="only the outcome, no line per run")
    e.set_defaults(func=lambda a: cmd_explore(a, make_config))

    s = sub.add_parser(
        "shrink", help="delta-debug a failing run folder down to a minimal case (a run folder)"
    )
    s.add_argument("run_dir", metavar="RUN_DIR")
    s.add_argument("--out", help="the minimal case's run folder (default RUN_DIR-shrunk)")
    s.add_argument(
        "--target",
        help="embedded (default) | babelfish | mssql | postgres-container | an ODBC connection string",
    )
    s.add_argument(
        "--no-serial-check",
        action="store_true",
        help="keep a cut that fails under the schedule even if it also fails on one stream in commit order",
    )
    s.add_argument("--quiet", "-q", action="store_true", help="only the outcome, no line per run")
    s.set_defaults(func=cmd_shrink)

    x = sub.add_parser(
        "export", help="write a self-contained reproducer of a run folder (SQL, files, a pytest test)"
    )
    x.add_argument("run_dir", metavar="RUN_DIR")
    x.add_argument("--out", required=True, help="the reproducer's folder")
    x.add_argument("--dialect", choices=["postgres", "tsql"], default="postgres", help="of the SQL scripts")
    x.set_defaults(func=cmd_export)

    r = sub.add_parser(
        "replay",
        help="rerun a run folder's stream and schedule on a fresh subscriber; exit 0 same outcome, 1 not",
    )
    r.add_argument("run_dir", metavar="RUN_DIR")
    r.add_argument(
        "--target",
        help="embedded (default) | babelfish | mssql | postgres-container | an ODBC connection string",
    )
    r.add_argument("--out", help="keep the replay's own run folder here")
    r.set_defaults(func=cmd_replay)
    return list(COMMANDS)


def _inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--target",
        help="embedded (default) | babelfish | mssql | postgres-container | an ODBC connection string",
    )
    p.add_argument("--changes", help="canonical change file or directory; default: generate")
    p.add_argument("--snapshot", help="initial snapshot (JSON Lines of {article, image}) for --changes")
    p.add_argument(
        "--custom-sql", action="append", help="SQL file to install (repeatable): procedures, triggers"
    )


def _spark(streams: int) -> Any:
    from applier.sparkenv.session import spark_session

    return spark_session(max(streams, 2), quick_jit=True)


def _target(spec: str | None) -> Any:
    import applier
    from applier.errors import ApplierError

    try:
        return applier.Target.parse(spec)
    except ApplierError as e:
        raise type(e)(f"--target: {e}") from None


def cmd_explore(a: argparse.Namespace, make_config: Callable[[argparse.Namespace], Any]) -> int:
    import applier.api.paths
    from applier.errors import ConfigError
    from applier.repro.explore import Try, explore

    if a.schedule_file or a.schedule_strategy == "recorded":
        raise ConfigError(
            "--schedule-file: explore runs schedules of its own (--strategy, --first-seed); "
            "applier replay RUN_DIR follows a recorded one"
        )
    if a.budget < 1:
        raise ConfigError(f"--budget: at least 1 try, got {a.budget}")
    config = make_config(a)
    applier.api.paths.check_paths(
        a.changes,
        a.snapshot,
        a.custom_sql or [],
        None,
        a.out,
        names={"report": "--report", "work_dir": "--out"},
    )
    target = _target(a.target)
    say = (lambda _: None) if a.quiet else print
    rs = config.run
    print(
        f"explore: up to {a.budget} {a.strategy} schedules, {rs.streams} streams, model {rs.model}, "
        f"partition {rs.partition}, policy {rs.error_policy}"
    )

    def show(t: Try) -> None:
        extra = f", {t.divergent} divergent, {t.conflicts} conflicts" if t.verdict != "converged" else ""
        say(
            f"  try {t.index + 1} seed {t.seed}: {t.verdict}{extra} ({t.seconds:.1f} s)"
            + (f": {t.error}" if t.error else "")
        )

    with target:
        ex = explore(
            config,
            target,
            budget=a.budget,
            out=a.out,
            strategy=a.strategy,
            first_seed=a.first_seed,
            changes=a.changes,
            snapshot=a.snapshot,
            custom_sql=a.custom_sql or [],
            spark=_spark(rs.streams),
            on_try=show,
        )
    if ex.found is None:
        print(
            f"no failing schedule in {len(ex.tries)} tries ({ex.seconds:.0f} s); {Path(a.out) / 'explore.json'}"
        )
        return 0
    f = ex.found
    print(
        f"found after {len(ex.tries)} tries ({ex.seconds:.0f} s): seed {f.seed} ({a.strategy}) {f.verdict}"
        + (f": {f.error}" if f.error else f", {f.divergent} divergent rows, {f.conflicts} conflicts")
    )
    print(f"run folder: {ex.run_dir}  (applier replay / shrink / export {ex.run_dir})")
    return 1


def cmd_shrink(a: argparse.Namespace) -> int:
    from applier.repro.case import describe, read_run_dir
    from applier.repro.shrink import shrink

    folder = read_run_dir(a.run_dir)
    target = _target(a.target)
    say = (lambda _: None) if a.quiet else print
    with target:
        s = shrink(
            a.run_dir,
            target,
            out=a.out,
            spark=_spark(folder.config.run.streams),
            serial_check=not a.no_serial_check,
            say=say,
        )
    o, m = s.original, s.minimal
    print(
        f"minimal case: {m['transactions']} transaction(s), {m['commands']} command(s), "
        f"{m['snapshot_rows']} snapshot row(s), {m['streams']} streams "
        f"(from {o['transactions']} / {o['commands']} / {o['snapshot_rows']} / {o['streams']}); "
        f"{s.runs} runs in {s.seconds:.0f} s"
    )
    for line in describe(s.config, s.case):
        print(f"  {line}")
    out = s.outcome or {}
    print(
        f"outcome: {out.get('verdict')}; divergent {json.dumps(out.get('divergent') or [])}; conflicts {json.dumps(out.get('conflicts') or [])}"
    )
    print(f"run folder: {s.run_dir}")
    if not s.reproduced:
        print("the minimal case did not fail the same way on its last run: the failure is not deterministic")
        return 2
    return 0


def cmd_export(a: argparse.Namespace) -> int:
    from applier.repro.export import export

    x = export(a.run_dir, a.out, dialect=a.dialect)
    print(
        f"wrote {len(x.files)} files to {x.out}: {x.transactions} transaction(s), {x.commands} command(s), "
        f"{x.steps} schedule steps; run `pytest {x.out / 'test_repro.py'}`"
    )
    return 0


def cmd_replay(a: argparse.Namespace) -> int:
    from applier.repro.case import read_run_dir
    from applier.repro.replay import replay

    folder = read_run_dir(a.run_dir)
    with _target(a.target) as target:
        r = replay(a.run_dir, target, out=a.out, spark=_spark(folder.config.run.streams))
    got = r.attempt.outcome
    print(
        f"replay of {a.run_dir}: {got['verdict']}, {len(got.get('conflicts') or [])} conflicts, "
        f"{len(got.get('divergent') or [])} divergent keys ({r.attempt.seconds:.1f} s)"
    )
    if r.same:
        print("same outcome as recorded")
        return 0
    print("different outcome:")
    for d in r.differences:
        print(f"  {d}")
    return 1
