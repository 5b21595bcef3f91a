"""Writes the Maxwell capture files of this folder from zendesk/maxwell's docs/docs/dataformat.md
(as quoted in the reference corpus, maxwell_dataformat_examples.txt): each example on one line;
the fields the doc elides with "..." filled in (see README.md). Run from the repository's root."""

import json
import re
import sys
from pathlib import Path

SRC = Path(
    sys.argv[1]
    if len(sys.argv) > 1
    else "/work/shared/reference/corpora/cdc_events/maxwell_dataformat_examples.txt"
)
OUT = Path(__file__).parent

text = SRC.read_text(encoding="utf-8")
parts = re.split(r"^### (.*)$", text, flags=re.M)
sec = {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def one_line(block: str, filled: str | None = None) -> str:
    lines = [ln.strip() for ln in block.strip().splitlines() if ln.strip()]
    if filled is not None:
        lines = [filled if ln == "..." else ln for ln in lines]
    line = "".join(lines)
    json.loads(line)
    return line


rows = [
    one_line(sec["INSERT"]),
    # UPDATE: the doc elides xid, commit, position, server_id, thread_id ("...")
    one_line(
        sec["UPDATE"],
        '"xid":23397,"commit":true,"position":"master.000006:801134","server_id":23042,"thread_id":108,',
    ),
    # DELETE: the doc elides ts, xid, commit, position, server_id, thread_id
    one_line(
        sec["DELETE"],
        '"ts":1477053250,"xid":23398,"commit":true,"position":"master.000006:801389","server_id":23042,"thread_id":108,',
    ),
]
(OUT / "dataformat_e.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")


# "Transaction grouping" (doc text): three rows of xid 142, the last with commit=true, then a row of xid 155.
def row(kind, xid, data, *, xoffset=None, commit=False, position, old=None):
    r = {"database": "test", "table": "e", "type": kind, "ts": 1477053300, "xid": xid}
    if xoffset is not None:
        r["xoffset"] = xoffset
    if commit:
        r["commit"] = True
    r["position"] = position
    r["data"] = data
    if old is not None:
        r["old"] = old
    return json.dumps(r, separators=(",", ":"))


a = {"id": 2, "m": 1.5, "c": "2016-10-21 05:40:00.000000", "comment": "two"}
b = {"id": 3, "m": 2.5, "c": "2016-10-21 05:40:00.000000", "comment": "three"}
grouping = [
    row("insert", 142, a, xoffset=0, position="master.000006:802000"),
    row("insert", 142, b, xoffset=1, position="master.000006:802200"),
    row(
        "update",
        142,
        dict(a, comment="two, updated"),
        commit=True,
        position="master.000006:802400",
        old={"comment": "two"},
    ),
    row("delete", 155, b, commit=True, position="master.000006:802700"),
]
(OUT / "dataformat_transactions.jsonl").write_text("\n".join(grouping) + "\n", encoding="utf-8")
