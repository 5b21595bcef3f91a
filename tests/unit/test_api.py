"""The public API's surface, the targets' constructors and what a run's job takes from the
configuration (no database, no Spark)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import applier
from applier.config import parse_config
from applier.errors import ConfigError, TargetError
from applier.targets.containers import PostgresContainer, SqlServerContainer
from applier.targets.embedded import EmbeddedPostgres
from applier.targets.endpoint import Endpoint
from applier.targets.odbc import OdbcTarget

CS = "Driver={PostgreSQL Unicode};Server=db;Port=5432;Database=sub;Uid=u;Pwd=s3cret;"


def test_import_applier_exposes_the_api_without_loading_it():
    # A fresh interpreter: `import applier` alone must not import Spark or the pipeline
    # (Spark's Python workers import applier's stage modules and should not pay for them).
    code = "import sys, applier; print('pyspark' in sys.modules, callable(applier.run))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]
    assert applier.Target is applier.api.Target
    with pytest.raises(AttributeError):
        applier.nothing  # noqa: B018


def test_every_public_name_resolves_from_applier_and_from_the_api():
    """``applier.__all__`` is ``applier.api.__all__``, and every name in it is there: once
    ``applier.Config`` raised AttributeError, listed by the API and not by the package."""
    from applier import api

    assert sorted(applier.__all__) == sorted(api.__all__)
    for name in api.__all__:
        assert getattr(applier, name) is getattr(api, name), name
    namespace: dict[str, object] = {}
    exec("from applier import *", namespace)  # what __all__ promises a star import
    assert {n for n in namespace if not n.startswith("__")} == set(api.__all__)


@pytest.mark.parametrize(
    "spec,cls",
    [
        (None, EmbeddedPostgres),
        ("embedded", EmbeddedPostgres),
        ("postgres-container", PostgresContainer),
        ("mssql", SqlServerContainer),
        (CS, OdbcTarget),
    ],
)
def test_target_parse(spec, cls):
    t = applier.Target.parse(spec)
    assert type(t) is cls
    assert not isinstance(t, Endpoint)


def test_odbc_target_owns_its_connection_string_and_never_shows_the_password():
    t = applier.Target.odbc(CS)
    assert t.started and t.connection_string() == CS
    assert "s3cret" not in t.description and "Pwd=***" in t.description
    with pytest.raises(TargetError, match="needs its own connection string"):
        t.connection_string("another")
    with pytest.raises(TargetError, match="cannot create databases"):
        t.create_database("x")
    with pytest.raises(TargetError, match="bad ODBC connection string"):
        applier.Target.odbc("no pairs here")


def test_embedded_target_keeps_only_when_asked():
    assert applier.Target.parse("embedded", keep=True).keep
    assert not applier.Target.embedded().keep
    assert not applier.Target.embedded().started


def test_endpoint_repr_hides_the_connection_string():
    e = Endpoint(CS, "postgres", "db")
    assert "s3cret" not in repr(e) and "s3cret" not in e.redacted


def _cfg(**run: object):  # type: ignore[no-untyped-def]
    art = {"name": "dbo.t", "columns": [{"name": "id", "type": "int", "key": True}]}
    return parse_config({"run": run, "articles": [art]}, "<test>")


def test_retry_attempts_reach_the_retry_policy():
    from applier.pipeline.run import subscriptions
    from applier.pipeline.streamjob import stream_job

    cfg = _cfg(retry_attempts=9, lock_timeout_ms=1234, error_policy="skip:2601")
    (sub,) = subscriptions(cfg)
    job = stream_job(cfg, sub, Endpoint(CS, "postgres", "db"), cfg.articles, set_apply=False, segmented=True)
    assert job.retry.attempts == 9  # [run] retry_attempts was accepted and never read before
    assert job.lock_timeout_ms == 1234 and str(job.error_policy) == "skip:2601"
    assert job.batch_events is False and job.streams == 4


def test_subscriptions_without_a_database_of_their_own_are_refused_on_an_endpoint():
    from applier.api import endpoints

    cfg = parse_config(
        {
            "articles": [{"name": "dbo.t", "columns": [{"name": "id", "type": "int", "key": True}]}],
            "subscriptions": [{"name": "east"}],
        },
        "<test>",
    )
    with pytest.raises(ConfigError, match="needs a database of its own"):
        endpoints(cfg, Endpoint(CS, "postgres", "db"))


def test_a_plain_run_is_one_full_copy_subscription():
    from applier.pipeline import subscriptions

    cfg = _cfg(subscription="mine")
    (sub,) = subscriptions(cfg)
    assert sub.name == "mine" and sub.full_copy(tuple(a.name for a in cfg.articles))


def test_procedure_scripts_through_the_api():
    scripts = dict(applier.api.procedure_scripts(_cfg(), "tsql"))
    assert "create procedure [sp_MSins_dbot]" in scripts["dbo.t"]
    assert scripts["dbo.t"].count("\ngo\n") >= 3
