"""Command line: ``applier run`` (default), ``convert``, ``generate``, ``procs``, ``schema``, ``clean``,
and the commands that live with their stage (``lint``, ``matrix``, ``bench``, ``articles``,
``capture``...). Everything goes through the public API (:mod:`applier.api`). This module holds
the parser and :func:`main`; the shared options are in :mod:`applier.cli.options`, ``run`` in
:mod:`applier.cli.run`, the commands that write files in :mod:`applier.cli.commands`, and the
SIGINT/SIGTERM handling in :mod:`applier.cli.signals`.

Exit codes of run: 0 converged, 1 diverged, 2 unknown or the run failed, 130 stopped by SIGINT
(Ctrl-C), 143 stopped by SIGTERM.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, NoReturn

from applier.articles import PROC_TEMPLATES
from applier.cli.commands import cmd_clean, cmd_convert, cmd_generate, cmd_procs, cmd_schema
from applier.cli.options import add_capture, add_run, add_settings, add_spark, capture_of, config_of
from applier.cli.run import cmd_run
from applier.cli.signals import stopped, stopper
from applier.errors import ApplierError, close_names, did_you_mean, stop_of
from applier.loadtest.options import add_load

_VERBOSE_HELP = "applier's log, Spark's log and tracebacks on the console"


class _UsageError(Exception):
    """A command line argparse refuses: one line naming the option, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line (not the whole usage) and come back to
    :func:`main` (which returns 2) instead of exiting the process."""

    def error(self, message: str) -> NoReturn:
        hint = _suggestion(message, self)
        raise _UsageError(f"{self.prog}: error: {message}{hint}\n(`{self.prog} --help` lists the options)")


def _suggestion(message: str, p: argparse.ArgumentParser) -> str:
    """`; did you mean --streams?` for a misspelt option or choice."""
    import re

    m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if m:
        hint = did_you_mean(m.group(1), re.findall(r"'?([\w.\-]+)'?", m.group(2)))
        return f"; {hint}" if hint else ""
    m = re.search(r"unrecognized arguments: (.*)", message)
    if m:
        own = [o for act in p._actions for o in act.option_strings if o.startswith("--")]
        elsewhere: dict[str, list[str]] = {}  # an option -> the other commands that take it
        named = getattr(p, "named", None)
        for sub in p._subparsers._group_actions if p._subparsers else ():
            for name, cmd in getattr(sub, "choices", {}).items():
                flags = [o for act in cmd._actions for o in act.option_strings if o.startswith("--")]
                if name == (named or "run"):
                    own += flags
                else:
                    for flag in flags:
                        elsewhere.setdefault(flag, []).append(name)
        hints = []
        for word in m.group(1).split():
            flag = word.split("=", 1)[0]
            if not flag.startswith("--") or flag in own:
                continue
            close = close_names(flag, sorted(set(own)))
            if close:
                hints.append(f"did you mean {flag} -> {close[0]}?")
            elif flag in elsewhere:
                takers = ", ".join(f"`applier {c}`" for c in sorted(set(elsewhere[flag])))
                hints.append(f"{flag} is an option of {takers}, not of `applier {named or 'run'}`")
        return f"; {'; '.join(hints)}" if hints else ""
    return ""


EXIT_CODES = """exit codes:
  0    converged: every subscriber holds the publisher's rows
  1    diverged: a subscriber differs (the report names the keys and their commands)
  2    unknown, or the run could not start or finish (bad input, an unreachable target, a
       check that could not decide); the reasons are on stderr and in the report
  130  stopped by SIGINT (Ctrl-C), 143 by SIGTERM: the open transactions rolled back (the
       line says what was interrupted: generating, loading the snapshot, applying round K...)

Spark's own log goes to spark.log in the run's folder (--out, else beside the report); -v
shows it, and applier's own log, on the console."""


def _version() -> str:
    from applier.report.json import versions

    v = versions()
    return f"applier {v['applier']} (Spark {v['spark']}, pyodbc {v['pyodbc']}, Python {v['python']})"


def parser(command: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser. ``command``: the one sub-command the arguments name, where known: the
    commands that live with their stage are then registered only if it is theirs (importing
    them all cost ~0.3 s of every ``applier run``); None: every command (help, an unknown one)."""
    p = _Parser(
        prog="applier",
        description="Multi-connection apply tester for replication subscribers",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-v", "--verbose", action="store_true", help=_VERBOSE_HELP)
    p.add_argument("--version", action="version", version=_version(), help="print the versions and exit")
    p.named = command  # type: ignore[attr-defined]  # the command named, for the hints of _suggestion
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    r = sub.add_parser(
        "run",
        help="apply a change stream with N streams and verify the subscriber (default)",
        description="Apply a change stream with N streams and verify the subscriber.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_settings(r)
    add_run(r)
    add_load(r)
    add_spark(r)
    r.add_argument(
        "--target",
        help="embedded (default) | babelfish | mssql | postgres-container | an ODBC connection string",
    )
    r.add_argument(
        "--changes", help="canonical change file or directory (JSON Lines or Parquet); default: generate"
    )
    r.add_argument("--snapshot", help="initial snapshot (JSON Lines of {article, image}) for --changes")
    r.add_argument(
        "--custom-sql", action="append", help="SQL file of custom procedures to install (repeatable)"
    )
    r.add_argument("--report", help="write the JSON report here")
    r.add_argument("--junit", metavar="FILE", help="write the JUnit XML here (a testsuite per subscription)")
    r.add_argument(
        "--html", metavar="FILE", help="write the HTML report here (one self-contained file: timeline, blame)"
    )
    r.add_argument("--work-dir", help="where intermediate files go (default: a temporary directory)")
    r.add_argument(
        "--out",
        help="the run's folder: configuration, inputs, report, schedule.jsonl and outcome.json "
        "(for applier replay, shrink and export)",
    )
    r.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run of the same stream on --target from its progress table",
    )
    r.add_argument(
        "--keep", action="store_true", help="leave the embedded PostgreSQL running and print how to reach it"
    )
    r.add_argument(
        "--listen",
        metavar="ADDRESS",
        help="the embedded PostgreSQL also listens on ADDRESS (an IP of this host, or 0.0.0.0) for "
        "executors on other hosts: SCRAM-SHA-256 with a generated password, never shown",
    )
    r.add_argument("--quiet", "-q", action="store_true", help="no progress, only the summary")
    r.add_argument(
        "--profile",
        action="store_true",
        help="print where the run's time went: per phase its seconds, Spark jobs, stages, tasks and "
        "the seconds Python workers spent starting (the report's cost)",
    )
    r.set_defaults(func=cmd_run)
    add_capture(r)
    cv = sub.add_parser(
        "convert",
        help="read captured traffic (Debezium, wal2json, SQL Server CDC...) and write canonical change files",
        description="Read captured change traffic as a run would (every record validated, nothing "
        "written when one is bad) and write canonical JSON Lines change files, each command with "
        "its source position.",
    )
    cv.add_argument(
        "--config", "--articles", dest="config", help="the articles' configuration (default: the demo's)"
    )
    cv.add_argument("--changes", help="the capture: a file or a folder of them")
    cv.add_argument("--out", required=True, help="folder for the canonical changes and the snapshot")
    cv.add_argument(
        "--snapshot",
        help="the tables at the capture's start (applier capture --snapshot): written to the folder, and "
        "where an update's unchanged TOASTed values come from when no earlier change has the row",
    )
    add_capture(cv)
    cv.set_defaults(func=cmd_convert)
    g = sub.add_parser("generate", help="write a generated change stream as canonical files")
    add_settings(g)
    g.add_argument("--out", required=True, help="folder for the changes and the snapshot")
    g.add_argument(
        "--format", choices=["jsonl", "parquet"], default="jsonl", help="file format (default jsonl)"
    )
    g.set_defaults(func=cmd_generate)
    pr = sub.add_parser("procs", help="print or write the apply procedure scripts")
    pr.add_argument(
        "--dialect",
        choices=["tsql", "postgres", "babelfish"],
        default="tsql",
        help="T-SQL as SQL Server writes it (default), PL/pgSQL, or T-SQL as Babelfish takes it",
    )
    pr.add_argument(
        "--config", "--articles", dest="config", help="the articles' configuration (default: the demo's)"
    )
    pr.add_argument("--out", help="folder: one script per article")
    pr.add_argument(
        "--template",
        choices=list(PROC_TEMPLATES),
        help="procedure text: 2016 (as SQL Server 2016+ generates it; default) or legacy (the documented older form)",
    )
    pr.add_argument(
        "--proc-schema",
        help="schema of the procedures (default: the subscriber's default schema, as SQL Server creates them)",
    )
    pr.set_defaults(func=cmd_procs)
    sc = sub.add_parser("schema", help="print (or write) the configuration file's JSON Schema")
    sc.add_argument("--out", help="write it to this file")
    sc.set_defaults(func=cmd_schema)
    cl = sub.add_parser("clean", help="remove the clusters and folders that killed runs left behind")
    cl.add_argument("--dir", help="where to look (default: the temporary directory)")
    cl.set_defaults(func=cmd_clean)
    _register_extra(sub, command)
    for each in sub.choices.values():  # `applier run -v` as well as `applier -v run`
        if not any("-v" in act.option_strings for act in each._actions):
            each.add_argument(
                "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=_VERBOSE_HELP
            )
    return p


# the commands that live with their stage, by the module that registers them
_EXTRA = {
    "applier.lint.command": ("lint",),
    "applier.matrix.command": ("matrix",),
    "applier.bench.command": ("bench",),
    "applier.catalog.command": ("articles",),
    "applier.capture.command": ("capture",),
    "applier.explain.command": ("streams",),
    "applier.repro.command": ("explore", "shrink", "export", "replay"),
    "applier.loadtest.command": ("compare", "capacity"),
}


def _register_extra(sub: Any, command: str | None = None) -> list[str]:
    """The commands that live with their stage: each has register(subparsers) adding its
    sub-command with set_defaults(func=...); only ``command``'s where it is given."""
    import importlib

    names: list[str] = []
    for module, commands in _EXTRA.items():
        if command is not None and command not in commands:
            continue
        m = importlib.import_module(module)
        if module == "applier.explain.command":
            names.append(m.register(sub, add_settings, add_run, add_capture, config_of, capture_of))
        elif module in ("applier.repro.command", "applier.loadtest.command"):
            names += m.register(sub, add_settings, add_run, config_of)
        else:
            names.append(m.register(sub))
    return names


_NO_SPARK = (
    "procs",
    "schema",
    "clean",
    "lint",
    "articles",
    "capture",
    "compare",
)  # commands that never start Spark
_REPRO = ("explore", "shrink", "export", "replay")  # applier.repro
COMMANDS = (
    "run",
    "convert",
    "streams",
    "articles",
    "capture",
    "generate",
    "procs",
    "schema",
    "clean",
    "lint",
    "matrix",
    "bench",
    *_REPRO,
    "compare",
    "capacity",
)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    lead = 0  # `applier -v --streams 4` is `applier -v run --streams 4`
    while lead < len(argv) and argv[lead] in ("-v", "--verbose"):
        lead += 1
    rest = argv[lead:]
    if rest and not rest[0].startswith("-") and rest[0] not in COMMANDS:
        # `run` takes no positional argument: a first word is a command, unknown or misspelt
        hint = did_you_mean(rest[0], COMMANDS)
        print(
            f"applier: error: unknown command {rest[0]!r}{'; ' + hint if hint else ''} "
            "(`applier --help` lists the commands)",
            file=sys.stderr,
        )
        return 2
    if not rest or rest[0] not in (*COMMANDS, "-h", "--help", "--version"):
        argv = [*argv[:lead], "run", *rest]
    named = argv[lead] if lead < len(argv) and argv[lead] in COMMANDS else None
    try:
        a = parser(named).parse_args(argv)
        if a.command is None:
            a = parser("run").parse_args(["run", *argv])
    except _UsageError as e:
        print(e, file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO if a.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if a.command not in _NO_SPARK:
        from applier.sparkenv.session import configure_log

        configure_log(a.verbose, _log_to(a))
    received: list[int] = []
    previous = {}
    if threading.current_thread() is threading.main_thread():  # only there may handlers be set
        previous = {sig: signal.signal(sig, stopper(received)) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = int(a.func(a))
    except BaseException as e:
        stop = stop_of(e)
        if stop is None and not received:
            if isinstance(e, ApplierError):
                # a command without --errors prints every line, as it has nothing to ask it with
                for line in error_lines(e, getattr(a, "errors", "all") == "all"):
                    print(line, file=sys.stderr)
                return 2
            if a.verbose or not isinstance(e, Exception):
                raise
            first = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), "")
            print(f"error: {type(e).__name__}: {first[:500]}", file=sys.stderr)
            print("(an unexpected error: run with -v for the traceback)", file=sys.stderr)
            return 2
        if a.verbose:
            traceback.print_exc()
        return stopped(stop.signum if stop else received[0], a)
    finally:
        for sig, h in previous.items():  # main() may run inside another program (a test)
            signal.signal(sig, h)
    # A signal that a step caught on its way (inside a C call it arrives as a SystemError)
    # still stops the run: its result is not the run's.
    return stopped(received[0], a) if received else code


def error_lines(e: ApplierError, every: bool = False) -> list[str]:
    """What the console shows of an error: at most two lines (the first problem, and how many
    more), or with ``every`` (``--errors all``) every bad record, one a line."""
    lines = f"error: {e}".splitlines() or ["error:"]
    if every:
        return [lines[0], *(f"  {d}" for d in e.details[1:])] if e.details else lines
    if len(lines) <= 2:
        return lines
    more = len(lines) - 1  # a configuration's problems: one a line
    return [lines[0], f"  and {more} more line{'s' if more > 1 else ''} (--errors all prints every one)"]


def _log_to(a: argparse.Namespace) -> Path | None:
    """Where a quiet run keeps Spark's log: its --out folder, else beside its first report
    file; None: nowhere kept (a temporary file)."""
    if getattr(a, "out", None) and a.command == "run":
        return Path(a.out) / "spark.log"
    for key in ("report", "junit", "html"):
        if getattr(a, key, None):
            return Path(getattr(a, key)).absolute().parent / "spark.log"
    return None


if __name__ == "__main__":
    sys.exit(main())
