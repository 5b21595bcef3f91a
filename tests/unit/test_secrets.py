"""Secrets from the environment: ``${VAR}`` / ``${VAR:-default}`` in configuration files
(TOML, YAML, JSON), and $APPLIER_TARGET as the target when none is named. An expanded
password is never shown: not in the configuration's dict (settings, config.json), not in an
error message."""

from __future__ import annotations

import json

import pytest

from applier.config import load_config
from applier.errors import ConfigError, TargetError
from applier.targets import Target
from applier.targets.embedded import EmbeddedPostgres
from applier.targets.odbc import OdbcTarget

SECRET = "S3cr3t;pw'x\"y"  # quotes and ; would break a file if expanded as text


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("SUB_HOST", "db.example")
    monkeypatch.setenv("SUB_PASSWORD", SECRET)
    monkeypatch.delenv("UNSET_VAR", raising=False)
    monkeypatch.setenv("EMPTY_VAR", "")
    return monkeypatch


_TOML = """\
# ${UNSET_VAR} in a comment is not expanded
[run]
subscription = "${SUB_NAME:-ci}"

[[articles]]
name = "dbo.t"
columns = [{ name = "id", type = "int", key = true }]

[[subscriptions]]
name = "s1"
target = "Driver={PostgreSQL Unicode};Server=${SUB_HOST};Database=${EMPTY_VAR:-sub};Uid=u;Pwd={${SUB_PASSWORD}};"

[[subscriptions]]
name = "s2"
database = "literal_$${NOT_A_VAR}"
"""


def _expected_target() -> str:
    return f"Driver={{PostgreSQL Unicode}};Server=db.example;Database=sub;Uid=u;Pwd={{{SECRET}}};"


def test_toml_values_are_expanded(env, tmp_path):
    f = tmp_path / "c.toml"
    f.write_text(_TOML)
    cfg = load_config(f)
    assert cfg.run.subscription == "ci"  # unset: the default
    assert cfg.subscriptions[0].target == _expected_target()
    assert cfg.subscriptions[1].database == "literal_${NOT_A_VAR}"  # $${ is a literal ${
    env.setenv("SUB_NAME", "nightly")
    assert load_config(f).run.subscription == "nightly"


def test_yaml_and_json_alike(env, tmp_path):
    data = {
        "run": {"subscription": "${SUB_NAME:-ci}"},
        "articles": [{"name": "dbo.t", "columns": [{"name": "id", "type": "int", "key": True}]}],
        "subscriptions": [{"name": "s1", "target": "Server=${SUB_HOST};Pwd=${SUB_PASSWORD};"}],
    }
    (tmp_path / "c.json").write_text(json.dumps(data))
    import yaml

    (tmp_path / "c.yaml").write_text(yaml.safe_dump(data))
    for name in ("c.json", "c.yaml"):
        cfg = load_config(tmp_path / name)
        assert cfg.subscriptions[0].target == f"Server=db.example;Pwd={SECRET};", name
        assert cfg.run.subscription == "ci"


def test_an_unset_variable_names_file_line_and_variable(env, tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[workload]\nkind = "key-chain"\n\n[run]\nsubscription = "${UNSET_VAR}"\n')
    with pytest.raises(ConfigError) as e:
        load_config(f)
    msg = str(e.value)
    assert msg.startswith(f"{f}:5: environment variable UNSET_VAR is not set")
    assert "${UNSET_VAR:-default}" in msg


def test_a_malformed_reference_is_refused(env, tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("run:\n  subscription: 'x${SUB_HOST-fallback}'\n")
    with pytest.raises(ConfigError, match=r"c.yaml:2: bad reference '\$\{SUB_HOST-fallback\}'"):
        load_config(f)


def test_empty_without_default_is_empty(env, tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[workload]\nkind = "key-chain"\n[run]\nsubscription = "a${EMPTY_VAR}b"\n')
    assert load_config(f).run.subscription == "ab"


def test_an_expanded_password_is_never_shown(env, tmp_path):
    f = tmp_path / "c.toml"
    f.write_text(_TOML)
    cfg = load_config(f)
    shown = json.dumps(cfg.to_dict())  # RunResult.settings, config.json, the report's settings
    assert "S3cr3t" not in shown and "***" in shown
    # an error of the file that would echo the value: replaced by ***
    f.write_text('[workload]\nkind = "key-chain"\n[run]\nstreams = "${SUB_PASSWORD}"\n')
    with pytest.raises(ConfigError) as e:
        load_config(f)
    assert "S3cr3t" not in str(e.value) and "run.streams: expected int, got str '***'" in str(e.value)


# -- $APPLIER_TARGET -----------------------------------------------------------------------
def test_no_target_named_is_the_variable_else_embedded(monkeypatch):
    monkeypatch.delenv("APPLIER_TARGET", raising=False)
    assert isinstance(Target.parse(None), EmbeddedPostgres)
    monkeypatch.setenv("APPLIER_TARGET", "  ")
    assert isinstance(Target.parse(None), EmbeddedPostgres)
    cs = f"Driver={{PostgreSQL Unicode}};Server=db;Uid=u;Pwd={{{SECRET}}};"
    monkeypatch.setenv("APPLIER_TARGET", cs)
    t = Target.parse(None)
    assert isinstance(t, OdbcTarget) and t.connection_string() == cs
    assert SECRET not in t.description and "Pwd=***" in t.description
    assert isinstance(Target.parse("embedded"), EmbeddedPostgres)  # a named target wins
    monkeypatch.setenv("APPLIER_TARGET", "embedded")
    assert Target.parse(None, keep=True).keep


def test_a_bad_variable_is_named_and_redacted(monkeypatch):
    monkeypatch.setenv("APPLIER_TARGET", "Driver={PostgreSQL Unicode};Pwd=hunter2;{broken")
    with pytest.raises(TargetError) as e:
        Target.parse(None)
    assert str(e.value).startswith("$APPLIER_TARGET: bad ODBC connection string")
    assert "hunter2" not in str(e.value)


def test_the_cli_and_the_api_follow_the_variable(monkeypatch):
    """applier run without --target and applier.run(target=None) both call Target.parse(None)."""
    import inspect

    import applier.api
    import applier.cli
    import applier.cli.run

    assert "Target.parse(a.target" in inspect.getsource(applier.cli.run)
    assert "Target.parse(target)" in inspect.getsource(applier.api._run)
    assert applier.cli.parser().parse_args(["run"]).target is None
