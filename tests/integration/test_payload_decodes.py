"""Event payloads are decoded once on the driver in a whole run (issue 33).

A run of the rs_sqldml seed on two subscriptions (six statements, several sent as statements:
barriers) and of the schema-change seed (three DDL events, each a barrier): every event's
payload is decoded once and parsed once in this process, whatever the subscriptions and
barriers. Before, the driver decoded and parsed a statement again for each subscription and
for each barrier it was, and a schema change's payload two or three times. What Spark's
executors decode (the validation pass) is not counted: they are other processes.
"""

from __future__ import annotations

import pytest

from applier.config import parse_config
from tests.support import repserver_schema, repserver_sqldml
from tests.support.changes import write_jsonl
from tests.support.decodes import count_decodes
from tests.support.runs import run_subscriptions

pytestmark = pytest.mark.integration


def _columns(*cols: tuple[str, str]) -> list[dict]:
    return [{"name": n, "type": t, **({"key": True} if n == "id" else {})} for n, t in cols]


def test_statements_are_decoded_once_for_every_subscription(spark, pg, tmp_path, monkeypatch):
    art = repserver_sqldml.ART
    cfg = parse_config(
        {
            "run": {"streams": 2, "commit_batch_size": 4},
            "articles": [
                {"name": art, "columns": _columns(("id", "int"), ("grp", "nvarchar(4)"), ("n", "int"))}
            ],
            "subscriptions": [
                {"name": "full"},
                {"name": "part", "articles": [{"name": art, "where": "id < 440"}]},
            ],
        },
        "<test payload decodes>",
    )
    groups = repserver_sqldml.GROUPS
    snap = write_jsonl(
        tmp_path / "snap.jsonl",
        [
            {"article": art, "image": repserver_sqldml.image(i, g, i)}
            for g, ids in groups.items()
            for i in ids
        ],
    )
    records = repserver_sqldml.stream()
    changes = write_jsonl(tmp_path / "changes.jsonl", records)
    lsns = [r["lsn"] for r in records if r["op"] == "SQL"]
    d = count_decodes(monkeypatch)
    res, _ = run_subscriptions(spark, pg, cfg, "decodes", changes=changes, snapshot=snap)
    sent = [st["sent_as"] for s in res.subscriptions for st in s.statements]
    assert len(lsns) == 6 and sent.count("statement") >= 4  # barriers: each applied on its own
    assert all(s.verdict.value == "converged" for s in res.subscriptions)
    assert d.parsed == {("SQL", lsn): 1 for lsn in lsns}
    assert d.decoded == {("SQL", None): len(lsns)}


def test_schema_changes_are_decoded_once(spark, pg, tmp_path, monkeypatch):
    art = repserver_schema.ART
    cols = _columns(("id", "int"), ("qty", "int"), ("note", "nvarchar(10)"), ("old", "nvarchar(10)"))
    cfg = parse_config(
        {
            "run": {"streams": 2, "commit_batch_size": 2},
            "articles": [{"name": art, "columns": cols}],
            "subscriptions": [{"name": "copy"}],
        },
        "<test payload decodes>",
    )
    snap = write_jsonl(
        tmp_path / "snap.jsonl",
        [{"article": art, "image": {"id": i, "qty": i, "note": f"n{i}", "old": "o"}} for i in range(1, 5)],
    )
    records = repserver_schema.stream()
    changes = write_jsonl(tmp_path / "changes.jsonl", records)
    lsns = [r["lsn"] for r in records if r["op"] == "DDL"]
    d = count_decodes(monkeypatch)
    res, _ = run_subscriptions(spark, pg, cfg, "decodes_ddl", changes=changes, snapshot=snap)
    sub = res.subscription("copy")
    assert sub.verdict.value == "converged", sub.check.to_json()
    assert [c["change"] for c in sub.schema_changes] == [r["ddl"] for r in records if r["op"] == "DDL"]
    assert d.parsed == {("DDL", lsn): 1 for lsn in lsns}
    # the driver's scan kept the lines that mention "DDL": each decoded once, with its payload
    assert d.decoded == {("DDL", lsn): 1 for lsn in lsns}
