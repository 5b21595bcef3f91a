"""The executor side of distribute: new operation per seed 000, images cut to the column list.

Runs the Arrow function directly (no Spark session): one batch in, one batch out.
"""

from __future__ import annotations

import json

import pyarrow as pa

from applier.articles import Article, Column, parse_type
from applier.config import ArticleSubscription, Subscription
from applier.distribute.routing import Shapes, route_batches
from applier.records.events import Schemas

ART = Article(
    "dbo",
    "t1",
    (
        Column("id", parse_type("int"), nullable=False),
        Column("C1", parse_type("int")),
        Column("note", parse_type("nvarchar(20)")),
    ),
    ("id",),
)


def _batch(rows: list[dict]) -> pa.RecordBatch:
    cols = {
        "lsn": pa.int64(),
        "xact_seqno": pa.int64(),
        "command_id": pa.int32(),
        "article": pa.string(),
        "op": pa.string(),
        "schema_version": pa.int32(),
        "before": pa.string(),
        "after": pa.string(),
        "changed": pa.list_(pa.string()),
        "key_before": pa.string(),
        "key_after": pa.string(),
        "statement": pa.int64(),
        "bm": pa.bool_(),
        "am": pa.bool_(),
    }
    return pa.RecordBatch.from_pydict(
        {k: [r.get(k) for r in rows] for k in cols}, schema=pa.schema(list(cols.items()))
    )


def _update(lsn: int, bm: bool, am: bool) -> dict:
    return {
        "lsn": lsn,
        "xact_seqno": lsn,
        "command_id": 1,
        "article": ART.name,
        "op": "U",
        "schema_version": 1,
        "before": json.dumps({"C1": 1, "id": 1, "note": "a"}),
        "after": json.dumps({"C1": 2, "id": 1, "note": "b"}),
        "changed": ["C1", "note"],
        "key_before": "[1]",
        "key_after": "[1]",
        "bm": bm,
        "am": am,
    }


def test_update_becomes_delete_insert_or_nothing_with_the_column_list_cut() -> None:
    sub = Subscription("s", (ArticleSubscription(ART.name, "C1 = 1", ("id", "note")),))
    schemas = Schemas.build({ART.name: ART}, [])
    run = route_batches(Shapes.of(schemas, sub), schemas)
    batch = _batch(
        [_update(1, True, True), _update(2, True, False), _update(3, False, True), _update(4, False, False)]
    )
    out = pa.Table.from_batches(list(run(iter([batch])))).to_pylist()
    by_lsn = {r["lsn"]: r for r in out}
    assert sorted(by_lsn) == [1, 2, 3]  # neither image matches: nothing for lsn 4
    u, d, i = by_lsn[1], by_lsn[2], by_lsn[3]
    assert (u["op"], u["source_op"], u["changed"]) == ("U", "U", ["note"])  # C1 is not in the list
    assert json.loads(u["before"]) == {"id": 1, "note": "a"} and json.loads(u["after"]) == {
        "id": 1,
        "note": "b",
    }
    assert (d["op"], d["after"], d["key_after"], d["key_before"]) == ("D", None, None, "[1]")
    assert (i["op"], i["before"], i["key_before"], i["key_after"]) == ("I", None, None, "[1]")
    assert i["changed"] == ["id", "note"] and json.loads(i["after"]) == {"id": 1, "note": "b"}


def test_events_pass_through() -> None:
    sub = Subscription("s")
    schemas = Schemas.build({ART.name: ART}, [])
    ev = {
        "lsn": 9,
        "xact_seqno": 9,
        "command_id": 1,
        "article": ART.name,
        "op": "SQL",
        "schema_version": 1,
        "after": '{"operator":"D"}',
        "changed": [],
        "bm": True,
        "am": True,
    }
    out = pa.Table.from_batches(
        list(route_batches(Shapes.of(schemas, sub), schemas)(iter([_batch([ev])])))
    ).to_pylist()
    assert [(r["op"], r["source_op"], r["after"]) for r in out] == [("SQL", "SQL", '{"operator":"D"}')]


def _proc_rows(first_bm: bool, first_am: bool, first_op: str = "U") -> list[dict]:
    """An applied procedure (lsn 10) and its two row operations (lsn 11, 12)."""
    first = {"l": 11, "op": first_op, "bm": first_bm, "am": first_am}
    event = {
        "lsn": 10,
        "xact_seqno": 10,
        "command_id": 1,
        "article": ART.name,
        "op": "PROC",
        "schema_version": 1,
        "after": '{"procedure":"dbo.p","params":[1],"rowcount":2}',
        "changed": [],
        "bm": True,
        "am": True,
    }
    rows = [event, {**_update(11, first_bm, first_am), "op": first_op}, _update(12, True, True)]
    for r in rows:
        r.update(statement=None if r is event else 10, _proc=True, _first=first)
    return rows


def _run_proc(rows: list[dict]) -> list[tuple[int, str, str]]:
    sub = Subscription("s", (ArticleSubscription(ART.name, "C1 = 1"),))
    schemas = Schemas.build({ART.name: ART}, [])
    batch = _batch(rows)
    batch = batch.append_column("_proc", pa.array([r["_proc"] for r in rows]))
    first_type = pa.struct([("l", pa.int64()), ("op", pa.string()), ("bm", pa.bool_()), ("am", pa.bool_())])
    batch = batch.append_column("_first", pa.array([r["_first"] for r in rows], type=first_type))
    out = [r for b in route_batches(Shapes.of(schemas, sub), schemas)(iter([batch])) for r in b.to_pylist()]
    return [(r["lsn"], r["source_op"], r["op"]) for r in out]


def test_applied_procedure_delivered_when_its_first_update_matches_both_images() -> None:
    assert _run_proc(_proc_rows(True, True)) == [(10, "PROC", "PROC")]  # the procedure, not its rows


def test_applied_procedure_first_operation_sent_instead() -> None:
    assert _run_proc(_proc_rows(True, False)) == [(11, "U", "D")]  # before image only: rs_delete
    assert _run_proc(_proc_rows(False, True)) == [(11, "U", "I")]  # after image only: rs_insert
    assert _run_proc(_proc_rows(False, False)) == []  # neither: nothing
    assert _run_proc(_proc_rows(False, True, "I")) == [(11, "I", "I")]  # an insert first: the insert
