"""The command line as a new user meets it: help on every option, the exit codes in --help,
--version, -v before or after the command, did-you-mean for typos, secrets never echoed; and
the live progress, which never draws a bar without a total."""

from __future__ import annotations

import argparse
import io
import time

import pytest
from rich.console import Console
from rich.text import Text

from applier import cli
from applier.cli.run import print_where
from applier.errors import TargetError
from applier.report.live import Doing, LiveProgress, _Bar, _Eta
from applier.targets import Target
from applier.targets.connstr import redact


def _parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    out = [("applier", cli.parser())]
    for act in out[0][1]._actions:
        if isinstance(act, argparse._SubParsersAction):
            out += list(act.choices.items())
    return out


def test_every_option_of_every_command_has_help():
    missing = [
        (name, act.option_strings)
        for name, p in _parsers()
        for act in p._actions
        if act.option_strings and not (act.help or "").strip()
    ]
    assert missing == []
    assert len(_parsers()) >= 13  # run, generate, procs, ... replay: the walk saw them all


def test_help_lists_the_exit_codes(capsys):
    for argv in (["--help"], ["run", "--help"]):
        with pytest.raises(SystemExit) as e:
            cli.main(argv)
        assert e.value.code == 0
        out = capsys.readouterr().out
        for code in ("0 ", "1 ", "2 ", "130"):
            assert f"  {code}" in out, (argv, code)
        assert "diverged" in out and "SIGTERM" in out


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("applier ") and "Spark 4." in out and "pyodbc" in out


@pytest.mark.parametrize("argv", [["-v", "run", "--streams", "3"], ["run", "-v", "--streams", "3"]])
def test_verbose_before_or_after_the_command(argv):
    a = cli.parser().parse_args(argv)
    assert a.verbose is True and a.streams == 3 and a.command == "run"


def test_verbose_before_options_without_the_command(monkeypatch):
    seen: list[argparse.Namespace] = []

    def fake_run(a: argparse.Namespace) -> int:
        seen.append(a)
        return 0

    monkeypatch.setattr(cli, "cmd_run", fake_run)
    monkeypatch.setattr(cli, "_NO_SPARK", (*cli._NO_SPARK, "run"))  # no Spark log set-up either
    assert cli.main(["-v", "--streams", "3"]) == 0
    assert len(seen) == 1 and seen[0].verbose is True and seen[0].streams == 3


def test_verbose_is_off_by_default():
    a = cli.parser().parse_args(["run"])
    assert a.verbose is False


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["run", "--partition", "key-hsh"], "did you mean 'key-hash'?"),
        (["run", "--model", "agnet"], "did you mean 'agent'?"),
        (["run", "--targte", "embedded"], "--targte -> --target"),
        (["run", "--custm-sql", "x.sql"], "--custm-sql -> --custom-sql"),
        (["streams", "--explian"], "--explian -> --explain"),
        # an option of another command: said so, never "did you mean --snapshot -> --snapshot"
        (
            ["streams", "--snapshot", "s.jsonl"],
            "--snapshot is an option of `applier convert`, `applier run`, not of `applier streams`",
        ),
    ],
)
def test_typos_get_a_suggestion(argv, hint, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert hint in err and "--help" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["rnu", "--help"], "applier: error: unknown command 'rnu'; did you mean 'run'?"),
        (["-v", "shrnk"], "applier: error: unknown command 'shrnk'; did you mean 'shrink'?"),
        (["frobnicate", "--streams", "2"], "applier: error: unknown command 'frobnicate' ("),
    ],
)
def test_an_unknown_command_is_refused_in_one_line(argv, line, capsys):
    """Once `applier <unknown> --help` printed run's help and exited 0: run takes no positional
    argument, so a first word that is no command is refused, with the closest one if any."""
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(line) and len(err.splitlines()) == 1
    assert "`applier --help` lists the commands" in err


def test_every_command_the_parser_knows_is_a_command_main_accepts():
    sub = next(a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(cli.COMMANDS)


def test_an_unknown_word_gets_no_invented_suggestion(capsys):
    assert cli.main(["run", "--partition", "zzzzzz"]) == 2
    assert "did you mean" not in capsys.readouterr().err
    assert cli.main(["streams", "--snapshot", "s.jsonl"]) == 2
    assert "did you mean" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("given", "meant"),
    [("embeded", "embedded"), ("mssq", "mssql"), ("postgres-contaner", "postgres-container")],
)
def test_a_misspelt_target_suggests_the_name(given, meant):
    with pytest.raises(TargetError, match=f"did you mean '{meant}'"):
        Target.parse(given)


def test_a_misspelt_target_on_the_command_line(capsys):
    assert cli.main(["run", "--target", "embeded"]) == 2
    err = capsys.readouterr().err
    assert "--target" in err and "did you mean 'embedded'?" in err


def test_a_url_target_never_echoes_its_password(capsys):
    assert cli.main(["run", "--target", "postgres://app:S3cret-pw@db.example/app"]) == 2
    err = capsys.readouterr().err
    assert "S3cret-pw" not in err and "***" in err


def test_redact_url_and_connection_string_passwords():
    assert redact("Driver={x};Server=h;PWD=abc;") == "Driver={x};Server=h;PWD=***;"
    assert redact("postgresql://u:p4ss@h:5432/db") == "postgresql://u:***@h:5432/db"
    assert "p4ss" not in redact("Server=h;Url=postgresql://u:p4ss@h/db;")


def test_a_refused_run_still_writes_its_reports(tmp_path, capsys):
    """Refused before it starts (a bad option value): the JSON and the JUnit say unknown, and why."""
    import json
    import xml.etree.ElementTree as ET

    rep, junit = tmp_path / "r.json", tmp_path / "j.xml"
    assert cli.main(["run", "--streams", "0", "--report", str(rep), "--junit", str(junit)]) == 2
    doc = json.loads(rep.read_text())
    assert doc["verdict"] == "unknown" and "--streams" in doc["reason"] and doc["schema_version"] == 2
    assert doc["versions"]["applier"] and doc["started_at"]
    err = ET.parse(junit).getroot().find("testsuite/testcase/error")
    assert err is not None and "--streams" in err.get("message")
    assert "--streams" in capsys.readouterr().err


# -- live progress ---------------------------------------------------------------------------


def _console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=True, width=120), buf


def test_no_bar_and_no_eta_without_a_total():
    console, _ = _console()
    live = LiveProgress(console, tasks=lambda: None)
    with live:
        live.phase("generating")
        task = live.bar.tasks[-1]
        assert task.total is None
        assert _Bar().render(task).plain == ""
        assert _Eta().render(task).plain == ""


def test_spark_tasks_then_rounds_with_rate_and_eta():
    console, buf = _console()
    counts = iter([(1, 8), (4, 8), (8, 8)] + [None] * 100)
    live = LiveProgress(console, tasks=lambda: next(counts), poll_s=0.01)
    with live:
        live.phase("generating")
        for _ in range(200):
            if live.bar.tasks[-1].completed == 8:
                break
            time.sleep(0.01)
        assert (live.bar.tasks[-1].completed, live.bar.tasks[-1].total) == (8, 8)
        live.phase("applying 100 commands in 10 rounds on 4 streams")
        live.progress("apply", 3, 10)
        task = live.bar.tasks[-1]
        assert (task.completed, task.total, task.fields["unit"]) == (3, 10, "rounds")
        assert not isinstance(_Bar().render(task), Text)  # a bar is drawn once the total is known
        assert _Eta().render(task).plain == "" or _Eta().render(task).plain.startswith("ETA")
        live.progress("apply", 10, 10)
    out = buf.getvalue()
    assert out.count("- generating") == 1 and out.count("- applying 100 commands") == 1


def test_quiet_prints_nothing():
    console, buf = _console()
    with LiveProgress(console, quiet=True, tasks=lambda: (1, 2)) as live:
        live.phase("generating")
        live.progress("apply", 1, 2)
    assert buf.getvalue() == ""


# What a stop interrupted, from the lines the run said (and the rounds the progress table
# showed committed): what `stopped by SIGTERM ...` goes on to say.
STOPS = [
    ([], None, "while starting: this run applied nothing"),
    (["generating uniform workload"], None, "while generating the workload: this run applied nothing"),
    (["reading changes"], None, "while reading the changes: this run applied nothing"),
    (["generating uniform workload", "installing tables and procedures"], None, "while installing tables"),
    (
        ["installing tables and procedures", "loading the snapshot"],
        None,
        "while loading the snapshot: the key ranges committed stay",
    ),
    # a subscription's phases carry its name; a note of the run or of a subscription is no phase
    (
        [
            "s1: distributing",
            "s1: set-based apply is off: the stream changes the schema (applying row by row)",
        ],
        None,
        "while distributing",
    ),
    (["set-based apply is not available for tsql: applying row by row"], None, "while starting"),
    (["planning rounds and streams"], None, "while planning the rounds: no round was open"),
    (["applying 100 commands in 40 rounds on 4 streams"], None, "while applying round 1 of 40: its open"),
    (["applying"], None, "while applying round 1: its open"),  # no total said, none read yet
    (["applying 100 commands in 40 rounds on 4 streams"], (0, 40), "while applying round 1 of 40: its open"),
    (
        ["applying 100 commands in 40 rounds on 4 streams"],
        (12, 40),
        "while applying round 13 of 40: its open",
    ),
    (["applying 100 commands in 40 rounds on 4 streams"], (40, 40), "while applying round 40 of 40"),
    (
        [
            "applying 1 commands in 1 rounds on 4 streams",
            "s1: schema change of dbo.t to version 2 (1 statements)",
        ],
        (1, 1),
        "while applying round 1 of 1",
    ),
    (
        ["applying 100 commands in 40 rounds on 4 streams", "s1: verifying"],
        (40, 40),
        "while verifying: every round was applied",
    ),
    # a new phase forgets the rounds of the last apply (the next segment counts its own)
    (
        [
            "applying 50 commands in 5 rounds on 2 streams",
            "planning rounds and streams (segment 1)",
            "applying 9 commands in 9 rounds on 2 streams (segment 1)",
        ],
        None,
        "while applying round 1 of 9:",
    ),
]


@pytest.mark.parametrize(("said", "rounds", "begins"), STOPS)
def test_a_stop_names_what_it_interrupted(said, rounds, begins):
    doing = Doing()
    for text in said:
        doing.said(text)
    if rounds is not None:
        doing.committed(*rounds)
    assert doing.interrupted().startswith(begins), doing.interrupted()


def test_the_live_progress_keeps_what_the_run_is_doing():
    console, _ = _console()
    doing = Doing()
    with LiveProgress(console, quiet=True, tasks=lambda: None, doing=doing) as live:
        live.phase("applying 100 commands in 10 rounds on 4 streams")
        live.progress("apply", 3, 10)
    assert doing.interrupted().startswith("while applying round 4 of 10")


def test_a_bad_applier_target_is_named_as_the_variable(monkeypatch, capsys):
    monkeypatch.setenv("APPLIER_TARGET", "embeded")
    assert cli.main(["run"]) == 2
    err = capsys.readouterr().err
    assert "$APPLIER_TARGET" in err and "--target" not in err and "did you mean 'embedded'?" in err


def test_the_profile_table_lists_each_phase_and_their_sum() -> None:
    from applier.report.console import print_cost

    cost = {
        "prepare": {
            "seconds": 1.25,
            "jobs": 1,
            "stages": 1,
            "tasks": 4,
            "worker_start_seconds": 0.6,
            "cpu_seconds": {"driver": 0.5, "jvm": 1.5, "jit": 0.75, "workers": 0.25},
        },
        "plan": {
            "seconds": 2.0,
            "jobs": 11,
            "stages": 12,
            "tasks": 53,
            "worker_start_seconds": 0.0,
            "cpu_seconds": {"driver": 0.25, "jvm": 3.0, "jit": 0.5, "workers": 1.0},
        },
        "verify": {"seconds": 0.5, "jobs": 3, "stages": 3, "tasks": 9, "worker_start_seconds": None},
    }
    out = io.StringIO()
    print_cost(cost, Console(file=out, width=80))
    lines = out.getvalue().splitlines()
    row = {
        ln.split()[0]: ln.split()[1:] for ln in lines if ln.split()[:1] in (["prepare"], ["verify"], ["all"])
    }
    assert row["prepare"] == ["1.25", "1", "1", "4", "0.60", "0.50", "1.50", "0.75", "0.25"]
    assert row["verify"][4:] == ["-"] * 5  # not measured: a cluster's processes
    assert row["all"] == ["3.75", "15", "16", "66", "0.60", "0.75", "4.50", "1.25", "1.25"]
    assert max(len(ln) for ln in lines[:8]) <= 80, lines  # the table in a terminal's 80 columns


def test_an_error_takes_two_console_lines_unless_every_one_is_asked_for(tmp_path, capsys):
    from applier.errors import ConfigError, InputError

    three = ConfigError("f.toml: run.streams: bad\nf.toml: run.model: bad\nf.toml: workload.kind: bad")
    assert cli.error_lines(three) == [
        "error: f.toml: run.streams: bad",
        "  and 2 more lines (--errors all prints every one)",
    ]
    assert cli.error_lines(three, every=True) == [f"error: {three}".splitlines()[i] for i in range(3)]
    records = ["ch.jsonl:2: lsn 9: column 'v': bad", "ch.jsonl:5: lsn 12: column 'n': bad"]
    bad = InputError(
        f"invalid change file, nothing applied: {records[0]}\n  and 1 more bad record (...)", records
    )
    assert cli.error_lines(bad) == [f"error: {bad}".splitlines()[0], "  and 1 more bad record (...)"]
    assert cli.error_lines(bad, every=True) == [f"error: {bad}".splitlines()[0], f"  {records[1]}"]
    # through main: a run's configuration with three problems, two lines; --errors all, three
    cfg = tmp_path / "c.toml"
    cfg.write_text('[run]\nstreams = 0\nmodel = "agnet"\n[workload]\nkind = "zipf"\n')
    for extra, lines in (([], 2), (["--errors", "all"], 3)):
        assert cli.main(["run", "--config", str(cfg), *extra]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == lines and err[0].startswith(f"error: {cfg}: "), err
    # a command without --errors prints every line, having nothing to ask for them with
    assert cli.main(["generate", "--config", str(cfg), "--out", str(tmp_path / "g")]) == 2
    assert len(capsys.readouterr().err.splitlines()) == 3


def test_connection_strings_and_paths_are_printed_whole_on_an_80_column_console(tmp_path):
    from applier.targets.embedded import EmbeddedPostgres

    deep = tmp_path / ("run-folder-" + "x" * 60) / "report with [brackets] and spaces.json"
    files = {"json": deep, "junit": tmp_path / "junit.xml", "html": tmp_path / ("h" * 90 + ".html")}
    log = tmp_path / ("spark-log-" + "y" * 80) / "spark.log"
    kept = EmbeddedPostgres(port=54321, keep=True)  # not started: its connection string is all --keep needs
    out = io.StringIO()
    print_where(Console(file=out, width=80), files, log, kept)
    lines = out.getvalue().splitlines()
    reach = kept.connection_string()
    assert len(reach) > 80  # rich wrapped it over two lines before
    wanted = [
        f"report: {deep}",
        f"JUnit XML: {tmp_path / 'junit.xml'}",
        f"HTML report: {files['html']}",
        f"Spark log: {log}",
        f"embedded PostgreSQL on 127.0.0.1:54321 left running (--keep): {reach}",
    ]
    assert lines == wanted  # each whole, on its own line, [brackets] kept (not read as markup)
    # listening beyond loopback: the generated password stays redacted, the line still whole
    listening = EmbeddedPostgres(
        port=54321, keep=True, listen="192.0.2.10", _password="s3cret-generated", _server="192.0.2.10"
    )
    out = io.StringIO()
    print_where(Console(file=out, width=80), {}, None, listening)
    (line,) = out.getvalue().splitlines()
    assert "s3cret-generated" not in line and "Pwd=***" in line and "Port=54321;" in line and len(line) > 80


def test_the_target_and_spark_lines_are_whole_too(monkeypatch):
    """applier run's first lines (the target's description, the Spark master) go through the
    same printer: a long Spark master URL stays on one line."""
    from applier.report.console import print_whole

    out = io.StringIO()
    url = "spark://" + "spark-master-" + "z" * 70 + ".cluster.example:7077"
    print_whole(Console(file=out, width=80), f"spark: {url} (--master)")
    assert out.getvalue().splitlines() == [f"spark: {url} (--master)"]
