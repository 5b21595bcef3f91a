"""Event payloads are decoded once (issue 33): the DDL records that build the schema versions
are validated without their payload being dumped to JSON and parsed again, and the stream's
DDL, SQL and PROC rows collected to the driver are decoded once for every subscription."""

from __future__ import annotations

import json

import pytest

from applier.articles import Article, Column, parse_type
from applier.errors import InputError
from applier.records.events import AppliedProcedure, SchemaChange, SqlStatement, StreamEvent, stream_events
from applier.sources.canonical import validate_record
from applier.sources.reading import schemas_from
from tests.support.decodes import count_decodes

ART = Article("dbo", "t", (Column("id", parse_type("int")), Column("n", parse_type("int"))), ("id",))
ARTICLES = {ART.name: ART}
ADD = {"action": "add_column", "column": {"name": "note", "type": "nvarchar(20)"}}
DROP = {"action": "drop_column", "column": "note"}
SQL = {"operator": "U", "category": "C1", "rowcount": 3, "set": "n = n + 1", "where": "id < 4"}
PROC = {"procedure": "bump", "params": [1, 2], "rowcount": 2}


def _ddl(lsn: int, version: int, ddl: dict) -> dict:
    return {
        "lsn": lsn,
        "xact_seqno": lsn,
        "command_id": 1,
        "article": ART.name,
        "op": "DDL",
        "schema_version": version,
        "ddl": ddl,
    }


def test_schema_versions_parse_each_ddl_payload_once(monkeypatch):
    d = count_decodes(monkeypatch)
    schemas = schemas_from(ARTICLES, [("c.jsonl:3", _ddl(30, 2, ADD)), ("c.jsonl:7", _ddl(70, 3, DROP))])
    assert schemas is not None
    assert [a.column_names for a in schemas.versions[ART.name]] == [
        ("id", "n"),
        ("id", "n", "note"),
        ("id", "n"),
    ]
    assert d.parsed == {("DDL", 30): 1, ("DDL", 70): 1}  # was 2 each: parsed, dumped, parsed again
    assert not d.decoded  # the records were decoded by the reader; nothing decodes them again


def test_schema_versions_keep_the_validation_errors():
    bad = _ddl(30, 1, ADD)  # a DDL event creates version 2 or more
    with pytest.raises(InputError, match=r"^c\.jsonl:3: lsn 30: a DDL event needs the new schema_version"):
        schemas_from(ARTICLES, [("c.jsonl:3", bad)])
    with pytest.raises(InputError, match=r"^c\.jsonl:4: lsn 40: unknown article 'dbo\.x'"):
        schemas_from(ARTICLES, [("c.jsonl:4", {**_ddl(40, 2, ADD), "article": "dbo.x"})])


def _row(lsn: int, op: str, payload: dict, version: int = 1) -> dict:
    """The validated row of an event, as the reader makes it (payload as canonical JSON)."""
    rec = {
        "lsn": lsn,
        "xact_seqno": lsn,
        "command_id": 1,
        "article": ART.name,
        "op": op,
        "schema_version": version,
    }
    rec[{"DDL": "ddl", "SQL": "sqldml", "PROC": "procedure"}[op]] = payload
    row = validate_record(rec, ARTICLES, "c.jsonl:1")
    return row._asdict()


def test_stream_events_decode_each_payload_once_and_reuse_the_schema_changes(monkeypatch):
    schemas = schemas_from(ARTICLES, [("c.jsonl:3", _ddl(30, 2, ADD))])
    rows = [_row(10, "SQL", SQL), _row(30, "DDL", ADD, 2), _row(50, "PROC", PROC)]
    d = count_decodes(monkeypatch)
    events = stream_events(rows, schemas)
    assert [(e.lsn, e.op, e.schema_version) for e in events] == [
        (10, "SQL", 1),
        (30, "DDL", 2),
        (50, "PROC", 1),
    ]
    assert isinstance(events[0].payload, SqlStatement) and events[0].payload.set == "n = n + 1"
    assert events[1].payload is schemas.changes[0]  # the schema change already decoded
    assert isinstance(events[2].payload, AppliedProcedure) and events[2].payload.params == (1, 2)
    assert d.decoded == {("SQL", None): 1, ("PROC", None): 1}
    assert d.parsed == {("SQL", 10): 1, ("PROC", 50): 1}
    # the report's "change" of a schema change: the payload its JSON text held, in its key order
    assert json.dumps(events[1].payload.payload()) == json.dumps(json.loads(rows[1]["after"]))


def test_stream_events_decode_a_schema_change_the_schemas_do_not_hold(monkeypatch):
    d = count_decodes(monkeypatch)
    (event,) = stream_events([_row(30, "DDL", ADD, 2)], None)
    assert event == StreamEvent(
        30, 30, ART.name, "DDL", 2, SchemaChange.parse(ART.name, 30, 2, ADD, "lsn 30")
    )
    assert d.decoded == {("DDL", None): 1}


def test_the_validation_decodes_an_event_once_and_keeps_it(monkeypatch):
    from applier.records.events import Schemas
    from applier.sources.reading import validated

    schemas = Schemas.build(ARTICLES, [SchemaChange.parse(ART.name, 30, 2, ADD, "lsn 30")])
    want = SqlStatement.parse(SQL, "lsn 10")
    d = count_decodes(monkeypatch)
    head = {"xact_seqno": 1, "command_id": 1, "article": ART.name, "schema_version": 1}
    sql = validated(head | {"lsn": 10, "op": "SQL", "sqldml": SQL}, ARTICLES, "c.jsonl:1", schemas)
    ddl = validated(_ddl(30, 2, ADD), ARTICLES, "c.jsonl:3", schemas)
    insert = head | {"lsn": 20, "op": "I", "after": {"id": 1, "n": 2}}
    row = validated(insert, ARTICLES, "c.jsonl:2", schemas)
    assert isinstance(sql.event, StreamEvent) and sql.event.payload == want
    assert json.loads(sql.good.after) == sql.event.payload.payload()  # the row keeps its text
    # the schema change the driver's scan parsed is the one the validation gives: not parsed again
    assert ddl.event.payload is schemas.changes[0] and ddl.good.op == "DDL"
    assert row.event is None and row.good.op == "I"
    assert d.parsed == {("SQL", 10): 1}
    # a schema change whose version is not the one the scan parsed is parsed (and checked) here
    other = validated(_ddl(30, 3, ADD), ARTICLES, "c.jsonl:3", schemas)
    assert other.event.payload is not schemas.changes[0] and other.event.payload.version == 3
