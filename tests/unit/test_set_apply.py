"""Set-based apply: which commands join one set-based call, how updates of a key merge, and
what the generated set procedures say (no database; tests/integration/test_set_apply.py
runs them)."""

from __future__ import annotations

import json

import pytest

from applier.apply.bulk import BULK_MAX_ROWS, BulkCall
from applier.apply.sender import Sender
from applier.config import parse_config
from applier.dialects import DIALECTS
from applier.plan.calls import Planner

PG = DIALECTS["postgres"]()
COLS = [
    {"name": "id", "type": "int", "key": True},
    {"name": "qty", "type": "int"},
    {"name": "note", "type": "nvarchar(20)"},
]


def _sender(update: str = "SCALL", **extra: object) -> Sender:
    cfg = parse_config({"articles": [{"name": "dbo.t", "columns": COLS, "update": update, **extra}]}, "<t>")
    return Sender(None, PG, Planner(PG, cfg.articles), 0, set_apply=True)


def _row(lsn: int, op: str, before: dict | None, after: dict | None, changed=None) -> dict:
    key = lambda img: None if img is None else json.dumps([img["id"]])  # noqa: E731
    return {
        "lsn": lsn,
        "xact_seqno": lsn,
        "xact_index": 0,
        "article": "dbo.t",
        "op": op,
        "before": None if before is None else json.dumps(before),
        "after": None if after is None else json.dumps(after),
        "changed": changed,
        "key_before": key(before),
        "key_after": key(after),
        "stream": 0,
        "round": 0,
    }


def _upd(lsn: int, k: int, qty: int, note: str, changed: list[str]) -> dict:
    return _row(lsn, "U", {"id": k, "qty": 0, "note": "a"}, {"id": k, "qty": qty, "note": note}, changed)


def test_updates_of_one_key_merge_later_changed_columns_win():
    calls = _sender().calls(
        [_upd(1, 1, 5, "a", ["qty"]), _upd(2, 2, 7, "b", ["note"]), _upd(3, 1, 5, "z", ["note"])]
    )
    assert len(calls) == 1
    call = calls[0][1]
    assert isinstance(call, BulkCall) and call.sql.startswith('CALL "applier"."update_set_dbo_t"')
    assert [r["lsn"] for r in call.rows] == [1, 2, 3]  # every command, for attribution
    sent = json.loads(call.params[0])
    assert sent == [
        {"_m": "011", "id": 1, "qty": 5, "note": "z"},  # qty from lsn 1, note from lsn 3, masks OR-ed
        {"_m": "001", "id": 2, "qty": 7, "note": "b"},
    ]


def test_call_syntax_sets_every_column():
    calls = _sender(update="CALL").calls([_upd(1, 1, 5, "a", ["qty"])])
    assert json.loads(calls[0][1].params[0])[0]["_m"] == "111"


def test_a_key_change_goes_row_by_row_between_two_set_calls():
    key_change = _row(2, "U", {"id": 1, "qty": 0, "note": "a"}, {"id": 9, "qty": 0, "note": "a"}, ["id"])
    calls = _sender().calls([_upd(1, 1, 5, "a", ["qty"]), key_change, _upd(3, 9, 6, "a", ["qty"])])
    kinds = [type(c).__name__ for _, c in calls]
    assert kinds == ["BulkCall", "Call", "BulkCall"]  # order of effects kept
    assert calls[1][1].sql.startswith('CALL "sp_MSupd_dbot"')


def test_a_second_insert_or_delete_of_a_key_starts_a_new_call():
    ins = _row(1, "I", None, {"id": 1, "qty": 1, "note": "a"})
    dup = _row(2, "I", None, {"id": 1, "qty": 2, "note": "b"})
    other = _row(3, "I", None, {"id": 2, "qty": 2, "note": "b"})
    calls = _sender().calls([ins, dup, other])
    assert [[r["lsn"] for r in c.rows] for _, c in calls] == [[1], [2, 3]]  # the duplicate still raises
    d1 = _row(4, "D", {"id": 1, "qty": 1, "note": "a"}, None)
    calls = _sender().calls([ins, d1, d1 | {"lsn": 5}])
    assert [(c.sql.split('"')[3], len(c.rows)) for _, c in calls] == [
        ("insert_set_dbo_t", 1),
        ("delete_set_dbo_t", 1),
        ("delete_set_dbo_t", 1),
    ]


def test_operations_not_eligible_go_row_by_row_and_none_is_left_out():
    s = _sender(update="XCALL", delete="NONE")
    calls = s.calls([_upd(1, 1, 5, "a", ["qty"]), _row(2, "D", {"id": 1, "qty": 5, "note": "a"}, None)])
    assert len(calls) == 1 and not isinstance(calls[0][1], BulkCall)  # XCALL per row, NONE not sent
    custom = _sender(update="CALL dbo.my_upd")
    (one,) = custom.calls([_upd(1, 1, 5, "a", ["qty"])])
    assert not isinstance(one[1], BulkCall)  # a custom procedure is the user's logic: always called


def test_per_row_expands_a_set_call_into_the_row_calls():
    s = _sender()
    rows = [_upd(1, 1, 5, "a", ["qty"]), _upd(2, 2, 7, "b", ["note"])]
    assert s.per_row(s.calls(rows)) == s.calls(rows, bulk=False)


def test_a_set_call_holds_at_most_bulk_max_rows():
    rows = [_upd(i, i, 1, "a", ["qty"]) for i in range(BULK_MAX_ROWS + 3)]
    assert [len(c.rows) for _, c in _sender().calls(rows)] == [BULK_MAX_ROWS, 3]


@pytest.mark.parametrize("op", ["I", "U", "D"])
def test_set_procedure_text_quotes_hostile_names_and_picks_a_free_mask_name(op):
    cfg = parse_config(
        {
            "articles": [
                {
                    "name": 'we"ird.t b;--',
                    "columns": [
                        {"name": 'k"1', "type": "int", "key": True},
                        {"name": "b", "type": "varbinary(10)", "key": True},
                        {"name": "_m", "type": "int"},
                    ],
                }
            ]
        },
        "<t>",
    )
    a = cfg.articles[0]
    sql = PG.set_procedure_sql(a, op)
    assert sql is not None
    assert '"we""ird"."t b;--"' in sql and '"applier"."' in sql
    assert PG.set_mask_name(a) == "__m"
    if op == "U":
        assert 'substr(v."__m", 3, 1)' in sql  # column 3 ("_m") is the only one to set
    assert "decode(v.\"b\", 'base64')" in sql  # bytes travel as base64 text


def test_long_names_are_cut_with_a_hash_and_stay_distinct():
    def name(table: str) -> str:
        cfg = parse_config({"articles": [{"name": f"dbo.{table}", "columns": COLS}]}, "<t>")
        return PG.set_proc_name(cfg.articles[0], "U")[1]

    a, b = name("x" * 80 + "a"), name("x" * 80 + "b")
    assert a != b and len(a.encode()) <= 60 and len(b.encode()) <= 60
