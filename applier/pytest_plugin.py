"""The pytest plugin shipped with applier (entry point ``pytest11``: loaded wherever applier is
installed). Fixtures:

- ``applier_spark`` (session): a local Spark session (:func:`applier.sparkenv.session.spark_session`);
- ``applier_target`` (session): the subscriber server, started once and stopped at the end:
  ``--applier-target`` if given, else the ``APPLIER_TARGET`` environment variable, else the
  embedded PostgreSQL. ``mssql`` / ``postgres-container`` need a Docker engine, ``babelfish``
  (the embedded T-SQL engine) a Babelfish build (``$APPLIER_BABELFISH``): without one the
  tests that use the target are skipped, with the reason;
- ``applier_run`` (function): ``applier_run(config=None, *, custom_sql=(), changes=None,
  snapshot=None, fresh=False, **overrides) -> RunResult``: one run in a database of its own
  on the session's target, its folder (report.json, schedule.jsonl, outcome.json...) under
  the test's ``tmp_path``. Warm: a database an earlier test left with the same articles,
  procedures and custom SQL is emptied and used again, not created and installed again
  (where it holds nothing else: ``apply.install.reusable``); ``fresh=True`` asks for a new one.

and :func:`assert_converged` (from :mod:`applier.testing`), whose failure message names the
divergent keys with their blame::

    from applier.pytest_plugin import assert_converged

    def test_key_chains_converge(applier_run):
        assert_converged(applier_run(streams=4, workload="key-chains", transactions=200))
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from applier.testing import assert_converged, describe

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from applier.api import Config, RunResult, Target
    from applier.loadtest.compare import Comparison

__all__ = ["ENV", "assert_converged", "describe", "run_overrides"]

ENV = "APPLIER_TARGET"  # applier.targets.base.ENV (not imported here: pytest starts fast)
CONTAINERS = ("mssql", "postgres-container")
DEFAULT_SLOTS = 8

# applier_run(**overrides): names of [run] keys, and of [workload] keys ("workload" is its kind)
_WORKLOAD_NAMES = {"workload": "kind"}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("applier", "applier (multi-connection apply tests)")
    group.addoption(
        "--applier-target",
        dest="applier_target",
        default=None,
        metavar="TARGET",
        help=f"subscriber of the applier_target fixture: embedded (default), babelfish, mssql, "
        f"postgres-container or an ODBC connection string (default: ${ENV} if set, else embedded)",
    )
    group.addoption(
        "--applier-spark-slots",
        dest="applier_spark_slots",
        type=int,
        default=DEFAULT_SLOTS,
        metavar="N",
        help=f"task slots of the applier_spark session: at least the most streams a test runs "
        f"(default {DEFAULT_SLOTS})",
    )


def target_spec(config: pytest.Config) -> tuple[str | None, str]:
    """What the tests run against and who said so: the option, else $APPLIER_TARGET, else
    (None, "default"): the embedded PostgreSQL."""
    opt: str | None = config.getoption("applier_target", None)
    if opt is not None and opt.strip():
        return opt.strip(), "--applier-target"
    env = os.environ.get(ENV, "").strip()
    return (env, f"${ENV}") if env else (None, "default")


def pytest_report_header(config: pytest.Config) -> str:
    from applier.targets.connstr import redact

    spec, source = target_spec(config)
    return f"applier target: {'embedded' if spec is None else redact(spec)} ({source})"


@pytest.fixture(scope="session")
def applier_spark(pytestconfig: pytest.Config) -> Iterator[SparkSession]:
    """A local Spark session for the whole test session (the active one if there is one)."""
    from pyspark.sql import SparkSession

    from applier.sparkenv.session import spark_session

    had = SparkSession.getActiveSession() is not None
    spark = spark_session(int(pytestconfig.getoption("applier_spark_slots", DEFAULT_SLOTS)), quick_jit=True)
    yield spark
    if not had:
        spark.stop()


@pytest.fixture(scope="session")
def applier_target(pytestconfig: pytest.Config) -> Iterator[Target]:
    """The subscriber server, started once per session and stopped at its end."""
    from applier.errors import TargetError
    from applier.targets import Target

    spec, source = target_spec(pytestconfig)
    if spec in CONTAINERS:
        from applier.targets.containers import docker_available

        ok, why = docker_available()
        if not ok:
            pytest.skip(f"applier target {spec!r} ({source}) needs a Docker engine: {why}")
    if spec == "babelfish":
        from applier.targets.babelfish import available

        ok, why = available()
        if not ok:
            pytest.skip(f"applier target {spec!r} ({source}) needs a Babelfish build: {why}")
    try:
        # None: Target.parse reads $APPLIER_TARGET itself (its errors name the variable)
        target = Target.parse(spec if source == "--applier-target" else None).start()
        if target.started:
            target.endpoint()  # reachable: one clear error here rather than one per run
    except TargetError as e:
        pytest.fail(f"applier target ({source}): {e}", pytrace=False)
    try:
        yield target
    finally:
        target.stop()


_counter = itertools.count(1)


@pytest.fixture(scope="session")
def _applier_warm() -> dict[str, list[Any]]:
    """install key -> databases (Endpoints) earlier tests left, free to be emptied and reused."""
    return {}


def _database_name(test: str) -> str:
    """A database name of its own per run: letters, digits and _, at most 63 characters."""
    slug = re.sub(r"[^a-z0-9_]+", "_", test.lower()).strip("_")[:40] or "test"
    return f"applier_{next(_counter)}_{slug}"


def run_overrides(overrides: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``streams=4, workload="key-chains", transactions=200`` -> ([run] keys, [workload] keys);
    TypeError naming an unknown one."""
    from applier.config.fileformat import RunSection, WorkloadSection

    run_keys, workload_keys = set(RunSection.model_fields), set(WorkloadSection.model_fields)
    run: dict[str, Any] = {}
    workload: dict[str, Any] = {}
    for name, value in overrides.items():
        key = _WORKLOAD_NAMES.get(name, name)
        if key in run_keys:
            run[key] = value
        elif (key in workload_keys and key != "kind") or name == "workload":
            workload[key] = value
        else:
            known = sorted(run_keys | (workload_keys - {"kind"}) | {"workload"})
            raise TypeError(f"applier_run() got an unknown setting {name!r} (known: {', '.join(known)})")
    return run, workload


def _path(p: str | Path, base: Path) -> Path:
    """A relative path beside the test file if it is there, else from the current folder."""
    p = Path(p)
    if p.is_absolute() or not (base / p).exists():
        return p
    return base / p


def _config(config: Config | str | Path | None, base: Path) -> Config:
    from applier.config import demo_config, load_config

    if config is None:
        return demo_config()
    if isinstance(config, (str, Path)):
        return load_config(_path(config, base))
    return config


RunFixture = Callable[..., "RunResult"]


@pytest.fixture
def applier_run(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    applier_spark: SparkSession,
    applier_target: Target,
    _applier_warm: dict[str, list[Any]],
) -> Iterator[RunFixture]:
    """``applier_run(config=None, *, custom_sql=(), changes=None, snapshot=None, **overrides)``:
    one run on the session's target, in a database of its own, returning the RunResult.

    ``config``: a Config, a configuration file (relative paths: beside the test file first) or
    None for the demo's articles. ``overrides``: [run] and [workload] settings by name
    (``streams=4, workload="key-chains", transactions=200, error_policy="strict"``). The run's
    folder (``out_dir``: config, inputs, report.json, schedule.jsonl, outcome.json) is
    ``tmp_path/applier-run-<i>``; ``result.files`` names what it holds."""
    import applier
    from applier.apply.install import install_key, reusable
    from applier.config import with_overrides
    from applier.sources.hazards import effective_config
    from applier.targets.odbc import OdbcTarget

    base = request.path.parent
    calls = itertools.count(1)
    # this test's databases, free for later tests once it ends (never within it: it may still
    # read an earlier result's subscriber)
    used: list[tuple[str, Any, Any]] = []

    def run(
        config: Config | str | Path | None = None,
        *,
        custom_sql: Sequence[str | Path] = (),
        changes: str | Path | None = None,
        snapshot: str | Path | None = None,
        fresh: bool = False,
        **overrides: Any,
    ) -> RunResult:
        cfg = _config(config, base)
        run_keys, workload_keys = run_overrides(overrides)
        if run_keys or workload_keys:
            cfg = with_overrides(cfg, run=run_keys, workload=workload_keys, source="applier_run()")
        _check_slots(cfg, applier_spark)
        out_dir = tmp_path / f"applier-run-{next(calls)}"
        where: Any = applier_target
        name = _database_name(request.node.name)
        # an ODBC target is one database: every run drops and installs its tables again
        one_database = isinstance(applier_target, OdbcTarget)
        if not one_database and cfg.subscriptions:  # each subscriber a database of its own, new for this run
            subs = tuple(
                s if s.target is not None else replace(s, database=f"{name}_{i}")
                for i, s in enumerate(cfg.subscriptions)
            )
            cfg = cfg.replace(subscriptions=subs)
        sql = [_path(p, base) for p in custom_sql]
        key = None
        if not one_database:  # a database of its own: warm if one is free
            installed = effective_config(cfg) if changes is None else cfg
            key = install_key(installed.articles, sql, cfg.run.set_apply)
            free = [] if fresh or key is None else _applier_warm.get(key, [])
            where = replace(free.pop(), reuse_tables=True) if free else applier_target.subscriber(name)
        result = applier.run(
            cfg,
            where,
            changes=None if changes is None else _path(changes, base),
            snapshot=None if snapshot is None else _path(snapshot, base),
            custom_sql=sql,
            spark=applier_spark,
            out_dir=out_dir,
        )
        if key is not None and not any(s.schema_changes for s in result.subscriptions):
            used.append((key, replace(where, reuse_tables=False), installed.articles))
        return result

    yield run
    for key, endpoint, articles in used:
        if reusable(endpoint, articles):
            _applier_warm.setdefault(key, []).append(endpoint)


def _check_slots(cfg: Config, spark: SparkSession) -> None:
    streams = max([cfg.run.streams] + [s.streams or 0 for s in cfg.subscriptions])
    slots = spark.sparkContext.defaultParallelism
    if streams > slots:
        pytest.fail(
            f"applier_run: {streams} streams need {streams} Spark task slots, the session has {slots}: "
            f"run pytest with --applier-spark-slots {streams}",
            pytrace=False,
        )


CompareFixture = Callable[..., "Comparison"]


@pytest.fixture
def applier_compare() -> CompareFixture:
    """``applier compare`` in a test: ``applier_compare(baseline, candidate, tolerance=0.10)``
    compares two runs (an ``out_dir`` of ``applier_run`` or a report.json) and fails the test,
    naming each figure that regressed past the tolerance; it returns the comparison."""
    from applier.loadtest.compare import compare

    def check(
        baseline: str | Path,
        candidate: str | Path,
        tolerance: float = 0.10,
        *,
        lag_floor: float = 0.1,
        phase_floor: float = 5.0,
    ) -> Comparison:
        c = compare(baseline, candidate, tolerance, lag_floor=lag_floor, phase_floor=phase_floor)
        if c.regressions:
            worse = "; ".join(
                f"{d.metric} ({d.subscription}) {d.baseline} -> {d.candidate}" for d in c.regressions
            )
            pytest.fail(f"applier_compare: a regression past {tolerance:.0%}: {worse}", pytrace=False)
        return c

    return check
