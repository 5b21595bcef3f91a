"""The pytest plugin (applier.pytest_plugin, entry point pytest11) seen from a user's pytest:
its options, its fixtures, the target's choice and skips, and assert_converged's message.
No database and no Spark here (tests/integration/test_pytest_plugin_project.py runs them)."""

from __future__ import annotations

import pytest

# What the runs below import, imported here first: an in-process pytester run drops the
# modules it imported from sys.modules afterwards (later tests would get second copies).
import applier.config
import applier.targets
import applier.targets.containers
import applier.targets.odbc  # noqa: F401
from applier import pytest_plugin
from applier.results import ApplySummary, Check, Divergence, RunResult, SubscriptionResult, Verdict
from applier.testing import assert_converged, describe

pytest_plugins = ["pytester"]

SECRET = "hunter2-Zq9"


def _summary(**kw: object) -> ApplySummary:
    base: dict[str, object] = dict(
        commands=600,
        transactions=300,
        rounds=3,
        rounds_parallel=2,
        resets=1,
        reset_log=(),
        conflicts={"row_not_found": 2, "deadlock": 0},
        outcomes={"applied": 600},
        streams=4,
        stream_stats=(),
        apply_seconds=1.5,
        fatal=False,
    )
    base.update(kw)
    return ApplySummary(**base)  # type: ignore[arg-type]


def _cmd(lsn: int, xact: int, kb: int | None, ka: int, stream: int, rnd: int, outcome: str, **kw: object):  # type: ignore[no-untyped-def]
    op = "I" if kb is None else "U"
    return {
        "lsn": lsn,
        "xact_seqno": xact,
        "op": op,
        "key_before": None if kb is None else [kb],
        "key_after": [ka],
        "stream": stream,
        "round": rnd,
        "outcome": outcome,
        **kw,
    }


def diverged_result(n_extra: int = 0) -> RunResult:
    why = "lsn 300 (xact 30) ran on stream 2 before lsn 200 (xact 20) committed on stream 1"
    lost = Divergence(
        article="dbo.kc_rows",
        key=(408,),
        kind="missing",
        expected={"id": 408, "v": "a", "n": 1},
        found=None,
        columns=(),
        commands=(
            _cmd(200, 20, 24, 344, 1, 2, "applied", via="produced key [344]"),
            _cmd(300, 30, 344, 408, 2, 2, "applied"),
        ),
        inverted={"first": 200, "second": 300, "why": why},
        skipped=(),
    )
    stale = Divergence(
        article="dbo.kc_rows",
        key=(344,),
        kind="extra",
        expected=None,
        found={"id": 344, "v": "a", "n": 1},
        columns=(),
        commands=(_cmd(200, 20, 24, 344, 1, 2, "applied"), _cmd(300, 30, 344, 408, 2, 2, "applied")),
        inverted={"first": 200, "second": 300, "why": why},
        skipped=(),
    )
    changed = Divergence(
        article="dbo.accounts",
        key=(7, "x"),
        kind="different",
        expected={"id": 7, "n": 2},
        found={"id": 7, "n": 1},
        columns=("n",),
        commands=(_cmd(100, 10, 7, 7, 0, 1, "rolled_back (row_not_found) -> reapplied"),),
        inverted=None,
        skipped=(),
    )
    extras = tuple(
        Divergence("dbo.kc_rows", (1000 + i,), "extra", None, {"id": 1000 + i}, (), (), None, ())
        for i in range(n_extra)
    )
    divergent = (stale, *extras, changed, lost)  # the order verify gives: by article and key
    check = Check(
        Verdict.DIVERGED,
        counts={"missing": 1, "extra": 1 + n_extra, "different": 1},
        divergent=divergent,
        rows_expected=240,
        rows_found=240 + n_extra,
    )
    sub = SubscriptionResult(
        "applier", "embedded PostgreSQL on 127.0.0.1:5555, database t1", check, _summary()
    )
    return RunResult((sub,), settings={}, files={"json": "/tmp/run/report.json"})


def converged_result() -> RunResult:
    check = Check(Verdict.CONVERGED, counts={}, rows_expected=10, rows_found=10)
    return RunResult((SubscriptionResult("applier", "embedded", check, _summary()),))


# -- assert_converged -----------------------------------------------------------------------
def test_assert_converged_passes_a_converged_run():
    assert_converged(converged_result())
    assert describe(converged_result()).startswith("applier run CONVERGED (exit code 0)")


def test_the_failure_message_names_verdict_counts_keys_and_blame():
    with pytest.raises(AssertionError) as e:
        assert_converged(diverged_result())
    text = str(e.value)
    lines = text.splitlines()
    assert (
        lines[0] == "applier run DIVERGED (exit code 1): 3 divergent rows (missing 1, extra 1, different 1)"
    )
    assert "rows expected / found 240 / 240" in text and "conflicts row_not_found 2;" not in text
    assert "conflicts row_not_found 2" in text and "deadlock" not in text  # classes that happened
    assert "report: /tmp/run/report.json" in text
    # the keys next to the verdict: a JUnit message attribute keeps only its first lines
    assert lines[1:4] == [
        "missing keys: dbo.kc_rows (408)",
        "different keys: dbo.accounts (7, 'x')",
        "extra keys: dbo.kc_rows (344)",
    ]
    # the lost key first, then its blame: the inverted pair's why and every command
    first = lines.index("  missing dbo.kc_rows (408)")
    assert first < lines.index("  different dbo.accounts (7, 'x')") < lines.index("  extra dbo.kc_rows (344)")
    assert lines[first + 1] == (
        "      inverted pair: lsn 300 (xact 30) ran on stream 2 before lsn 200 (xact 20) committed on stream 1"
    )
    assert (
        lines[first + 2]
        == "      lsn 200 xact 20 U (24) -> (344) stream 1 round 2: applied [produced key [344]]"
    )
    assert lines[first + 3] == "      lsn 300 xact 30 U (344) -> (408) stream 2 round 2: applied"
    assert "      columns n: expected 2, found 1" in lines
    assert "round 1: rolled_back (row_not_found) -> reapplied" in text


def test_the_message_shows_the_first_ten_keys_lost_ones_first():
    text = describe(diverged_result(n_extra=20))
    assert "divergent keys (the first 10 of 23) and the commands that touched them:" in text
    assert text.index("  missing dbo.kc_rows (408)") < text.index("  extra dbo.kc_rows (344)")
    assert text.count("\n  extra ") == 8  # 10 shown: the missing, the different, 8 extra
    assert "dbo.kc_rows (1019)" not in text


def test_an_unknown_run_says_why():
    sub = SubscriptionResult(
        "applier",
        "embedded",
        Check(Verdict.CONVERGED),
        _summary(stopped="lock timeout outlasted 5 retries"),
        failed="stopped: lock timeout",
    )
    text = describe(RunResult((sub,)))
    assert text.startswith("applier run UNKNOWN (exit code 2)")
    assert "  why: stopped: lock timeout" in text and "  why: lock timeout outlasted 5 retries" in text


# -- applier_run's settings -----------------------------------------------------------------
def test_overrides_map_to_run_and_workload_keys():
    run, workload = pytest_plugin.run_overrides(
        {"streams": 4, "workload": "key-chains", "transactions": 200, "error_policy": "strict", "seed": 3}
    )
    assert run == {"streams": 4, "error_policy": "strict"}
    assert workload == {"kind": "key-chains", "transactions": 200, "seed": 3}


def test_an_unknown_setting_is_refused_with_the_known_ones():
    with pytest.raises(TypeError, match=r"unknown setting 'stream' \(known: .*streams.*transactions"):
        pytest_plugin.run_overrides({"stream": 4})
    with pytest.raises(TypeError, match="unknown setting 'kind'"):  # it is spelt workload=
        pytest_plugin.run_overrides({"kind": "uniform"})


def test_the_plugins_variable_is_the_targets():
    from applier.targets.base import ENV

    assert pytest_plugin.ENV == ENV == "APPLIER_TARGET"


# -- the plugin in a user's pytest (pytester) ------------------------------------------------
def test_the_plugin_is_registered_by_its_entry_point():
    import importlib.metadata as md

    eps = [e for e in md.entry_points(group="pytest11") if e.name == "applier"]
    assert [e.value for e in eps] == ["applier.pytest_plugin"]


def test_options_in_help(pytester):
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*applier (multi-connection apply tests)*", "*--applier-target=TARGET*"])
    result.stdout.fnmatch_lines(["*--applier-spark-slots=N*"])
    assert "APPLIER_TARGET" in result.stdout.str()


def test_fixtures_listed(pytester):
    pytester.makepyfile("def test_nothing(): pass")
    out = pytester.runpytest("--fixtures").stdout.str()
    for name in ("applier_spark [session scope]", "applier_target [session scope]", "applier_run"):
        assert name in out, out
    assert "applier_run(config=None, *, custom_sql=(), changes=None, snapshot=None" in out


_SPEC_TEST = """
from applier.pytest_plugin import target_spec

def test_spec(pytestconfig):
    assert target_spec(pytestconfig) == {want!r}
"""


@pytest.mark.parametrize(
    ("args", "env", "want"),
    [
        ((), None, (None, "default")),
        ((), "postgres-container", ("postgres-container", "$APPLIER_TARGET")),
        (("--applier-target", "mssql"), "postgres-container", ("mssql", "--applier-target")),
        (("--applier-target=embedded",), None, ("embedded", "--applier-target")),
    ],
)
def test_the_target_is_the_option_else_the_variable_else_embedded(pytester, monkeypatch, args, env, want):
    if env is None:
        monkeypatch.delenv("APPLIER_TARGET", raising=False)
    else:
        monkeypatch.setenv("APPLIER_TARGET", env)
    pytester.makepyfile(_SPEC_TEST.format(want=want))
    pytester.runpytest(*args).assert_outcomes(passed=1)


def test_the_header_shows_the_target_redacted(pytester, monkeypatch):
    monkeypatch.setenv("APPLIER_TARGET", f"Driver={{PostgreSQL Unicode}};Server=db;Uid=u;Pwd={SECRET};")
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        ["applier target: Driver={PostgreSQL Unicode};Server=db;Uid=u;Pwd=***; ($APPLIER_TARGET)"]
    )
    assert SECRET not in result.stdout.str()
    monkeypatch.delenv("APPLIER_TARGET")
    pytester.runpytest().stdout.fnmatch_lines(["applier target: embedded (default)"])


_TARGET_TEST = """
def test_uses_the_target(applier_target):
    raise AssertionError("never reached")

def test_another(applier_target):
    raise AssertionError("never reached")
"""


@pytest.mark.parametrize("how", ["option", "env"])
@pytest.mark.parametrize("name", ["mssql", "postgres-container"])
def test_a_container_target_skips_without_docker(pytester, monkeypatch, name, how):
    from applier.targets import containers

    monkeypatch.setattr(containers, "docker_available", lambda: (False, "no Docker engine reachable (test)"))
    monkeypatch.delenv("APPLIER_TARGET", raising=False)
    args: tuple[str, ...] = ()
    if how == "env":
        monkeypatch.setenv("APPLIER_TARGET", name)
    else:
        args = ("--applier-target", name)
    pytester.makepyfile(_TARGET_TEST)
    result = pytester.runpytest("-rs", *args)
    result.assert_outcomes(skipped=2)
    source = "$APPLIER_TARGET" if how == "env" else "--applier-target"
    result.stdout.fnmatch_lines(
        [
            f"SKIPPED [[]1[]] *applier target '{name}' ({source}) needs a Docker engine: no Docker engine reachable (test)"
        ]
        * 2
    )


def test_an_unreachable_target_errors_once_clearly_without_its_password(pytester, monkeypatch):
    monkeypatch.delenv("APPLIER_TARGET", raising=False)
    pytester.makepyfile(_TARGET_TEST)
    cs = f"Driver={{PostgreSQL Unicode}};Server=127.0.0.1;Port=1;Database=x;Uid=u;Pwd={SECRET};"
    result = pytester.runpytest("--applier-target", cs)
    result.assert_outcomes(errors=2)
    out = result.stdout.str()
    assert "applier target (--applier-target): cannot reach the target" in out and "Pwd=***" in out
    assert SECRET not in out


def test_a_bad_connection_string_in_the_variable_names_it(pytester, monkeypatch):
    monkeypatch.setenv("APPLIER_TARGET", f"Driver={{PostgreSQL Unicode}};Pwd={SECRET};{{oops")
    pytester.makepyfile(_TARGET_TEST)
    result = pytester.runpytest()
    result.assert_outcomes(errors=2)
    out = result.stdout.str()
    assert "applier target ($APPLIER_TARGET): $APPLIER_TARGET: bad ODBC connection string" in out
    assert SECRET not in out


def test_assert_converged_in_a_users_test(pytester):
    """What a CI log shows: the message, no traceback into applier."""
    pytester.makepyfile(
        """
        from applier.pytest_plugin import assert_converged
        from tests_synthetic import diverged_result

        def test_run():
            assert_converged(diverged_result())
        """
    )
    pytester.makepyfile(tests_synthetic=_synthetic_module())
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: applier run DIVERGED (exit code 1): 3 divergent rows (missing 1, extra 1, different 1)",
            "E       missing keys: dbo.kc_rows (408)",
            "E *inverted pair: lsn 300 (xact 30) ran on stream 2 before lsn 200 (xact 20) committed on stream 1",
        ]
    )
    assert "applier/testing.py" not in result.stdout.str()  # __tracebackhide__


def _synthetic_module() -> str:
    """This module's builders, importable from a pytester project (by path)."""
    import inspect
    import sys

    here = inspect.getsourcefile(sys.modules[__name__])
    return f"import importlib.util\nspec = importlib.util.spec_from_file_location('synthetic', {here!r})\nm = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(m)\ndiverged_result = m.diverged_result\n"
