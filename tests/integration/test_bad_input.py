"""Bad input gets a clear error that names the place, and nothing is applied."""

from __future__ import annotations

import pytest

from applier.errors import InputError, TargetError
from tests.support.changes import write_jsonl
from tests.support.runs import config, run
from tests.support.subscriber import table_exists

pytestmark = pytest.mark.integration

GOOD = {"lsn": 1048577, "xact_seqno": 1, "command_id": 1, "op": "I", "after": {"id": 1, "v": "a", "n": 1}}


def _records(table: str, bad: dict | str) -> list:
    good = dict(GOOD, article=f"dbo.{table}")
    second = dict(good, lsn=2097153, xact_seqno=2, after={"id": 2, "v": "b", "n": 2})
    if isinstance(bad, dict):
        bad = {**dict(good, lsn=3145729, xact_seqno=3), **bad}
    return [good, second, bad]


CASES = [
    # (case, bad record, words the error must contain)
    ("malformed", '{"lsn": 3145729, "xact_seqno": 3, "op": "I", "after": {', ["malformed JSON", ":3"]),
    ("unknown_article", {"article": "dbo.nope"}, ["unknown article 'dbo.nope'", ":3", "lsn 3145729"]),
    ("missing_key", {"after": {"v": "c", "n": 3}}, ["key column 'id' is missing", ":3", "lsn 3145729"]),
    ("wrong_type", {"after": {"id": 3, "v": "c", "n": "three"}}, ["column 'n'", "expected an integer", ":3"]),
    ("unknown_column", {"after": {"id": 3, "v": "c", "n": 3, "zz": 1}}, ["column 'zz'", ":3"]),
    ("out_of_range", {"after": {"id": 3, "v": "c", "n": 2**40}}, ["column 'n'", "out of range", ":3"]),
]


@pytest.mark.parametrize("case,bad,words", CASES, ids=[c[0] for c in CASES])
def test_bad_change_file_names_the_place_and_applies_nothing(spark, any_target, tmp_path, case, bad, words):
    table = f"bad_{case}"
    f = write_jsonl(tmp_path / "changes.jsonl", _records(table, bad))
    with pytest.raises(InputError) as e:
        run(spark, config(table), any_target, changes=f)
    msg = str(e.value)
    assert str(f) in msg
    for w in words:
        assert w in msg, msg
    assert not table_exists(any_target, "dbo", table), "nothing may be applied"


def test_unreachable_target_is_a_clear_error_without_the_password():
    from applier.targets.embedded import free_port
    from applier.targets.endpoint import preflight

    cs = f"Driver={{PostgreSQL Unicode}};Server=127.0.0.1;Port={free_port()};Database=x;Uid=u;Pwd=s3cret;"
    with pytest.raises(TargetError) as e:
        preflight(cs, timeout_s=3)
    assert "cannot reach the target" in str(e.value)
    assert "s3cret" not in str(e.value)
    assert "Pwd=***" in str(e.value)


def test_bad_connection_string_is_rejected():
    from applier.targets.endpoint import preflight

    with pytest.raises(TargetError, match="driver"):
        preflight("Server=127.0.0.1;Database=x;Pwd=s3cret")


def test_duplicate_lsn_is_rejected(spark, any_target, tmp_path):
    table = "bad_dup_lsn"
    recs = _records(table, {})
    recs[2]["lsn"] = recs[1]["lsn"]
    f = write_jsonl(tmp_path / "changes.jsonl", recs)
    with pytest.raises(InputError, match="lsn=2097153 appears 2 times"):
        run(spark, config(table), any_target, changes=f)
    assert not table_exists(any_target, "dbo", table)
