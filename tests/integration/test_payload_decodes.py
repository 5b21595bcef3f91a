"""Event payloads are decoded once in a whole run (issue 33).

A run of the rs_sqldml seed on two subscriptions (six statements, several sent as statements:
barriers) and of the schema-change seed (three DDL events, each a barrier). In this process
(the driver): a statement is not decoded at all (the validation did it, in Spark's workers,
and the driver takes the events it made), a schema change once (the driver's scan, which builds
the schema versions before the validation). Across every process of a run (the CLI in a
process of its own, its fail point ``payload.parse`` counting each parse in the driver and in
the workers): each payload is parsed once. Before, a statement was parsed twice (the
validation, then the driver from the row's JSON text), a schema change twice (the scan, then
the validation), and earlier still once more for each subscription and barrier.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import applier
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
    # the validation (Spark's workers) decoded them: the driver takes its events as they are
    assert not d.parsed and not d.decoded


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
    assert d.parsed == {("DDL", lsn): 1 for lsn in lsns}  # by the driver's scan
    # the driver's scan kept the lines that mention "DDL": each decoded once, with its payload
    assert d.decoded == {("DDL", lsn): 1 for lsn in lsns}


@pytest.mark.parametrize("seed", ["sqldml", "schema"])
def test_every_process_of_a_run_parses_each_payload_once(pg, tmp_path, seed):
    """``applier run`` in a process of its own: the fail point ``payload.parse`` counts every
    parse of an event's payload, the driver's and Spark's workers' (one file they append to)."""
    if seed == "sqldml":
        art, records = repserver_sqldml.ART, repserver_sqldml.stream()
        cols = _columns(("id", "int"), ("grp", "nvarchar(4)"), ("n", "int"))
        snap = [
            {"article": art, "image": repserver_sqldml.image(i, g, i)}
            for g, ids in repserver_sqldml.GROUPS.items()
            for i in ids
        ]
        subs = [{"name": "full"}, {"name": "part", "articles": [{"name": art, "where": "id < 440"}]}]
    else:
        art, records = repserver_schema.ART, repserver_schema.stream()
        cols = _columns(("id", "int"), ("qty", "int"), ("note", "nvarchar(10)"), ("old", "nvarchar(10)"))
        snap = [
            {"article": art, "image": {"id": i, "qty": i, "note": f"n{i}", "old": "o"}} for i in range(1, 5)
        ]
        subs = [{"name": "copy"}]
    config = {
        "run": {"streams": 2, "commit_batch_size": 4},
        "articles": [{"name": art, "columns": cols}],
        # each subscriber a database of its own, made here (through ODBC applier cannot make one)
        "subscriptions": [
            s | {"target": pg.create_database(f"parse_{seed}_{i}_{uuid.uuid4().hex[:8]}")}
            for i, s in enumerate(subs)
        ],
    }
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    write_jsonl(tmp_path / "snap.jsonl", snap)
    write_jsonl(tmp_path / "changes.jsonl", records)
    counted = tmp_path / "passes"
    counted.mkdir()
    args = ["--config", "config.json", "--changes", "changes.jsonl", "--snapshot", "snap.jsonl"]
    env = os.environ | {
        "APPLIER_FAILPOINT": "payload.parse@1000000",
        "APPLIER_FAILPOINT_DIR": str(counted),
        "PYTHONPATH": str(Path(applier.__file__).resolve().parents[1]),  # the applier under test
    }
    proc = subprocess.run(
        [sys.executable, "-m", "applier.cli", "run", *args, "--target", pg.connection_string(), "--quiet"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]
    events = [r for r in records if r["op"] in ("DDL", "SQL", "PROC")]
    assert len(events) == (6 if seed == "sqldml" else 3)
    assert (counted / "failpoint-payload.parse").stat().st_size == len(events)
