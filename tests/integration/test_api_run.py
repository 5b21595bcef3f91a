"""The public API end to end: a target started and stopped by the run, the report file, and
one run loop for a plain run whose stream changes the schema (it was refused before: only
[[subscriptions]] had segments)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import applier
from applier.config import parse_config
from tests.support.changes import write_jsonl
from tests.support.repserver_schema import ART, stream
from tests.support.runs import config
from tests.support.subscriber import rows

pytestmark = [pytest.mark.integration, pytest.mark.smoke]  # make test-spark35 too


def test_run_starts_and_stops_the_target_it_is_given(spark, tmp_path):
    target = applier.Target.embedded()
    cfg = config("api_own", streams=4, batch=10, kind="key-chains", transactions=60, initial_rows=30)
    result = applier.run(cfg, target, spark=spark, report=tmp_path / "out" / "r.json")
    assert result.verdict is applier.Verdict.CONVERGED and result.exit_code == 0
    assert not target.started  # the run started it, so the run removed it
    report = json.loads(Path(result.files["json"]).read_text(encoding="utf-8"))
    assert report["verdict"] == "converged" and report["commands"] == result.subscriptions[0].summary.commands
    assert result.conflicts["row_not_found"] == report["conflicts"]["row_not_found"]


def test_a_plain_run_applies_schema_changes_in_segments(spark, target, tmp_path):
    cfg = parse_config(
        {
            "run": {"streams": 4, "commit_batch_size": 2, "subscription": "plain_ddl"},
            "articles": [
                {
                    "name": ART,
                    "columns": [
                        {"name": "id", "type": "int", "key": True},
                        {"name": "qty", "type": "int"},
                        {"name": "note", "type": "nvarchar(10)"},
                        {"name": "old", "type": "nvarchar(10)"},
                    ],
                }
            ],
        },
        "<test plain ddl>",
    )
    snap = write_jsonl(
        tmp_path / "snap.jsonl",
        [{"article": ART, "image": {"id": i, "qty": i, "note": f"n{i}", "old": "o"}} for i in range(1, 5)],
    )
    changes = write_jsonl(tmp_path / "changes.jsonl", stream())
    result = applier.run(cfg, target, spark=spark, changes=changes, snapshot=snap)
    (sub,) = result.subscriptions
    assert sub.verdict is applier.Verdict.CONVERGED, sub.check.to_json()
    assert sub.summary.segments == 4 and [c["version"] for c in sub.schema_changes] == [2, 3, 4]
    assert rows(target, 'SELECT count(*) FROM "dbo"."sc" WHERE extra IS NOT NULL') == [(9,)]
