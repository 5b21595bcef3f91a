"""Connection strings: parsing, redaction (secrets never reach a log) and dialect detection."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from applier.errors import TargetError
from applier.targets.connstr import dialect_for, ensure_odbc_env, option, parse_connection_string, redact


@pytest.mark.parametrize(
    "cs,hidden",
    [
        ("Driver={PostgreSQL Unicode};Server=h;Pwd=secret;", "secret"),
        ("DRIVER={FreeTDS};PASSWORD=pa;ss;", "pa"),
        ("Driver={x};Pwd={se;cr}}et};Uid=u", "se;cr"),
    ],
)
def test_redact_hides_secrets(cs, hidden):
    r = redact(cs)
    assert hidden not in r and "***" in r


def test_option_reads_braced_values():
    assert (
        option("Driver={ODBC Driver 18 for SQL Server};Server=h", "driver") == "ODBC Driver 18 for SQL Server"
    )


@pytest.mark.parametrize(
    "cs,name",
    [
        ("Driver={PostgreSQL Unicode};Server=h", "postgres"),
        ("Driver={ODBC Driver 18 for SQL Server};Server=h", "tsql"),
        ("Driver={FreeTDS};Server=h", "tsql"),
    ],
)
def test_dialect_detection(cs, name):
    assert dialect_for(cs).name == name


def test_unknown_driver():
    with pytest.raises(TargetError, match="cannot tell"):
        dialect_for("Driver={Oracle};Server=h")


def test_garbage_is_rejected():
    with pytest.raises(TargetError):
        parse_connection_string("   ")


def test_a_relative_odbc_folder_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark's executors run in their own work folders: a relative ODBCSYSINI would name nothing
    there ("Can't open lib 'PostgreSQL Unicode'"); an absolute one and an empty one stay."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ODBCSYSINI", ".venv/etc/odbc")
    ensure_odbc_env()
    assert os.environ["ODBCSYSINI"] == str(tmp_path / ".venv" / "etc" / "odbc")
    monkeypatch.setenv("ODBCSYSINI", "/etc/odbc")
    ensure_odbc_env()
    assert os.environ["ODBCSYSINI"] == "/etc/odbc"
    monkeypatch.setenv("ODBCSYSINI", "")
    ensure_odbc_env()
    assert os.environ["ODBCSYSINI"] == ""
