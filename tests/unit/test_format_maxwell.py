"""Maxwell rows -> capture items: the dataformat.md examples (tests/data/captures/maxwell), the
update's before image from ``old``, transactions by xid, order by position/xoffset/commit,
duplicates, and errors naming file:line and the field. No Spark (see test_format_debezium)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from applier.articles import Article, Column, parse_type
from applier.errors import InputError
from applier.sources.formats import Change, Options, format_class
from applier.sources.formats.convert import _keyed, _transactions
from applier.sources.formats.maxwell import MaxwellFormat

DATA = Path(__file__).resolve().parents[1] / "data" / "captures" / "maxwell"


def table_e(comment: str = "varchar(255)") -> Article:
    """test.e of dataformat.md: id int primary key, m double, c timestamp(6), comment varchar(255)."""
    t = parse_type
    return Article(
        "test",
        "e",
        (
            Column("id", t("int"), nullable=False),
            Column("m", t("float")),
            Column("c", t("datetime2(6)")),
            Column("comment", t(comment)),
        ),
        ("id",),
    )


def fmt(article: Article | None = None) -> MaxwellFormat:
    a = article or table_e()
    return MaxwellFormat({a.name: a}, Options())


def lines_of(name: str) -> list[str]:
    return (DATA / name).read_text(encoding="utf-8").splitlines()


def transactions(f: MaxwellFormat, lines: list[str]) -> tuple[list[list[Change]], int]:
    keyed = []
    for i, line in enumerate(lines):
        if line.strip():
            for k, item in enumerate(f.parse(line, f"cap.jsonl:{i + 1}")):
                keyed.append(_keyed((None, item, (0, i, k))))
    keyed.sort(key=lambda kv: kv[0])
    txs: list[list[Change]] = []
    dups = 0
    for t in _transactions(f)(iter(keyed)):
        if t[0] == "error":
            raise InputError(t[1])
        txs.append(t[1])
        dups += t[2]
    return txs, dups


ROW1 = {"id": 1, "m": 4.2341, "c": "2016-10-21T05:33:37.523000", "comment": "I am a creature of light."}
ROW1_UPDATED = dict(ROW1, m=5.444, c="2016-10-21T05:33:54.631000")


def test_dataformat_insert_update_delete() -> None:
    """dataformat.md: insert of row 1, update of m and c (old: their old values only), delete."""
    txs, dups = transactions(fmt(), lines_of("dataformat_e.jsonl"))
    assert dups == 0
    assert [[c.op for c in tx] for tx in txs] == [["I"], ["U"], ["D"]]
    ins, upd, dele = (tx[0] for tx in txs)
    assert ins.after == ROW1 and ins.tx == (23396,)
    assert upd.before == ROW1 and upd.after == ROW1_UPDATED  # data overlaid with old
    assert dele.before == ROW1_UPDATED and dele.after is None
    assert ins.source == "xid 23396 master.000006:800911 commit"


def test_dataformat_transaction_grouping() -> None:
    """dataformat.md: rows of xid 142 (the last with commit: true) are one transaction, xid 155
    another; in a transaction rows are in position / xoffset order whatever the file order."""
    lines = lines_of("dataformat_transactions.jsonl")
    shuffled = [lines[2], lines[0], lines[3], lines[1]]
    txs, _ = transactions(fmt(), shuffled)
    assert [[(c.op, (c.after or c.before or {}).get("id")) for c in tx] for tx in txs] == [
        [("I", 2), ("I", 3), ("U", 2)],
        [("D", 3)],
    ]
    assert txs[0][2].before == {"id": 2, "m": 1.5, "c": "2016-10-21T05:40:00.000000", "comment": "two"}


def test_commit_row_comes_last_in_one_event() -> None:
    """Rows of one binlog event share a position: xoffset, then the commit row."""
    row = json.loads(lines_of("dataformat_transactions.jsonl")[0])
    a = dict(row, xoffset=0)
    b = dict(row, data=dict(row["data"], id=9))
    b.pop("xoffset")
    b["commit"] = True
    txs, _ = transactions(fmt(), [json.dumps(b), json.dumps(a)])
    assert [c.after["id"] for c in txs[0] if c.after] == [2, 9]


def test_duplicates_dropped_and_counted() -> None:
    lines = lines_of("dataformat_e.jsonl")
    txs, dups = transactions(fmt(), [lines[0], lines[0], lines[1], lines[2], lines[1]])
    assert [[c.op for c in tx] for tx in txs] == [["I"], ["U"], ["D"]] and dups == 2


def test_skipped_and_refused_types() -> None:
    f = fmt()
    assert (
        list(f.parse('{"database":"test","table":"e","type":"bootstrap-start","ts":1,"data":{}}', "x:1"))
        == []
    )
    with pytest.raises(InputError, match=r"^x:1: type: 'table-create' is a schema change"):
        list(
            f.parse(
                '{"type":"table-create","database":"test","table":"e","sql":"create table e (id int)"}', "x:1"
            )
        )


def _bad(lines: list[str], match: str, article: Article | None = None) -> None:
    with pytest.raises(InputError, match=match):
        transactions(fmt(article), lines)


def test_errors_name_the_line_and_field() -> None:
    ins = lines_of("dataformat_e.jsonl")[0]
    _bad([ins[:-5]], r"^cap\.jsonl:1: malformed JSON")
    _bad([ins.replace('"xid":23396,', "")], r"^cap\.jsonl:1: xid: missing")
    _bad([ins.replace('"table":"e"', '"table":"f"')], r"^cap\.jsonl:1: table 'test\.f' is not an article")
    _bad(
        [ins.replace('"position":"master.000006:800911"', '"position":"x"')],
        r"^cap\.jsonl:1: position: expected",
    )
    _bad(
        [ins],
        r"^cap\.jsonl:1: data\.comment: column 'comment' \(varchar\(10\)\): longer than 10",
        table_e("varchar(10)"),
    )
    upd = lines_of("dataformat_e.jsonl")[1]
    _bad(
        [upd.replace('"m":4.2341', '"m":"x"')],
        r"^cap\.jsonl:1: old\.m: column 'm' \(float\): expected a number, got 'x'",
    )
    _bad(
        [ins.replace('"id":1,', '"id":1,"extra":2,')],
        r"^cap\.jsonl:1: data\.extra: not a column of article test\.e",
    )


def test_registered() -> None:
    assert format_class("maxwell") is MaxwellFormat


def test_decimals_read_exactly() -> None:
    a = Article(
        "test",
        "p",
        (Column("id", parse_type("int"), nullable=False), Column("price", parse_type("decimal(20,10)"))),
        ("id",),
    )
    line = '{"database":"test","table":"p","type":"insert","ts":1,"xid":1,"commit":true,"data":{"id":1,"price":0.1000000001}}'
    (c,) = list(fmt(a).parse(line, "x:1"))
    assert c.after == {"id": 1, "price": "0.1000000001"}
