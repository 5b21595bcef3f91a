"""Writes the Debezium capture files of this folder from the reference corpus's copies of the
Debezium documentation's examples (see README.md for what is verbatim and what is written).
Usage: python make_captures.py [folder of debezium_sqlserver_doc_examples.txt]"""

import json
import re
import sys
from pathlib import Path

SRC = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/shared/reference/corpora/cdc_events")
OUT = Path(__file__).parent
doc = (SRC / "debezium_sqlserver_doc_examples.txt").read_text()


def sections(text):
    parts = re.split(r"^### (.*)$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


sec = sections(doc)


def one_line(block):
    # the JSON lines of a block, joined: indentation removed, duplicate keys kept as written
    lines = [ln.strip() for ln in block.strip().splitlines() if ln.strip()]
    return "".join(lines)


def value_struct(fields, name):
    return {"type": "struct", "fields": fields, "optional": True, "name": name}


CUST = [
    {"type": "int32", "optional": False, "field": "id"},
    {"type": "string", "optional": False, "field": "first_name"},
    {"type": "string", "optional": False, "field": "last_name"},
    {"type": "string", "optional": False, "field": "email"},
]


def source_schema(extra):
    base = [
        {"type": "string", "optional": False, "field": "version"},
        {"type": "string", "optional": False, "field": "connector"},
        {"type": "string", "optional": False, "field": "name"},
        {"type": "int64", "optional": False, "field": "ts_ms"},
        {"type": "int64", "optional": True, "field": "ts_us"},
        {"type": "int64", "optional": True, "field": "ts_ns"},
        {
            "type": "string",
            "optional": True,
            "name": "io.debezium.data.Enum",
            "version": 1,
            "parameters": {
                "allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"
            },
            "default": "false",
            "field": "snapshot",
        },
        {"type": "string", "optional": False, "field": "db"},
        {"type": "string", "optional": True, "field": "sequence"},
    ]
    return base + extra


SQLSERVER_SOURCE = source_schema(
    [
        {"type": "string", "optional": False, "field": "schema"},
        {"type": "string", "optional": False, "field": "table"},
        {"type": "string", "optional": True, "field": "change_lsn"},
        {"type": "string", "optional": True, "field": "commit_lsn"},
        {"type": "int64", "optional": True, "field": "event_serial_no"},
    ]
)


def envelope(value_fields, prefix, source_fields, source_name):
    v = dict(type="struct", fields=value_fields, optional=True, name=f"{prefix}.Value")
    return {
        "type": "struct",
        "fields": [
            dict(v, field="before"),
            dict(v, field="after"),
            {
                "type": "struct",
                "fields": source_fields,
                "optional": False,
                "name": source_name,
                "field": "source",
            },
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
            {"type": "int64", "optional": True, "field": "ts_us"},
            {"type": "int64", "optional": True, "field": "ts_ns"},
            {
                "type": "struct",
                "fields": [
                    {"type": "string", "optional": False, "field": "id"},
                    {"type": "int64", "optional": False, "field": "total_order"},
                    {"type": "int64", "optional": False, "field": "data_collection_order"},
                ],
                "optional": True,
                "name": "event.block",
                "version": 1,
                "field": "transaction",
            },
        ],
        "optional": False,
        "name": f"{prefix}.Envelope",
        "version": 1,
    }


cust_schema = json.dumps(
    envelope(
        CUST, "server1.testDB.dbo.customers", SQLSERVER_SOURCE, "io.debezium.connector.sqlserver.Source"
    ),
    separators=(",", ":"),
)

events = []
for title in ("CREATE (op=c) -- payload portion (schema section omitted)", "UPDATE (op=u)", "DELETE (op=d)"):
    block = sec[title]
    block = block.replace('"schema": { ... },\n  },', '"schema": { ... },')  # DELETE: a stray "}," in the doc
    line = one_line(block).replace('"schema": { ... }', '"schema":' + cust_schema)
    obj = json.loads(line)  # must be valid JSON now
    assert obj["payload"]["op"] in "cud"
    events.append(line)
(OUT / "sqlserver_doc_customers.jsonl").write_text("\n".join(events) + "\n")
bare = []
for line in events:
    i = line.index('"payload":') + len('"payload":')
    bare.append(line[i:-1].strip())
    json.loads(bare[-1])
(OUT / "sqlserver_doc_customers.bare.jsonl").write_text("\n".join(bare) + "\n")


# Key change (doc text): delete + tombstone + create sharing one commit and change LSN, serial 1 and 2.
def sqlserver_event(op, before, after, change_lsn, commit_lsn, serial, table="customers", ts=1559731000000):
    return {
        "before": before,
        "after": after,
        "source": {
            "version": "{debezium-version}",
            "connector": "sqlserver",
            "name": "server1",
            "ts_ms": ts,
            "snapshot": False,
            "db": "testDB",
            "schema": "dbo",
            "table": table,
            "change_lsn": change_lsn,
            "commit_lsn": commit_lsn,
            "event_serial_no": serial,
        },
        "op": op,
        "ts_ms": ts + 10,
    }


john = {"id": 1005, "first_name": "john", "last_name": "doe", "email": "john.doe@example.org"}
lines = [events[0]]  # the doc's create of 1005
d = sqlserver_event("d", john, None, "00000027:00000f10:0004", "00000027:00000f10:0006", 1)
c = sqlserver_event("c", None, dict(john, id=1006), "00000027:00000f10:0004", "00000027:00000f10:0006", 2)
lines += [
    json.dumps({"schema": json.loads(cust_schema), "payload": d}, separators=(",", ":")),
    "null",
    json.dumps({"schema": json.loads(cust_schema), "payload": c}, separators=(",", ":")),
]
(OUT / "sqlserver_doc_key_change.jsonl").write_text("\n".join(lines) + "\n")

# Transaction boundaries: BEGIN and END verbatim, the two data events of the END's data collections written.
tb = sec["TRANSACTION BOUNDARY (BEGIN/END)"].strip().split("\n\n")
begin, end = one_line(tb[0]), one_line(tb[1])
tx = "00000025:00000d08:0025"
a = sqlserver_event(
    "c", None, {"pk": "2", "aa": "1"}, "00000025:00000d08:0021", tx, 1, table="tablea", ts=1486500577200
)
a["transaction"] = {"id": tx, "total_order": "1", "data_collection_order": "1"}
b = sqlserver_event(
    "c", None, {"pk": "2", "aa": "1"}, "00000025:00000d08:0023", tx, 1, table="tableb", ts=1486500577300
)
b["transaction"] = {"id": tx, "total_order": "2", "data_collection_order": "1"}
(OUT / "sqlserver_doc_transaction.jsonl").write_text(
    "\n".join([begin, json.dumps(a, separators=(",", ":")), json.dumps(b, separators=(",", ":")), end]) + "\n"
)

# MySQL serde-update.json: the update verbatim (one line); before it a snapshot read of the row it updates.
upd = one_line((SRC / "debezium_test_resource_serde-update.json").read_text())
u = json.loads(upd)
snap = {
    "before": None,
    "after": u["before"],
    "source": dict(u["source"], snapshot="true", query=None, pos=154, row=0, file="mysql-bin.000002"),
    "op": "r",
    "ts_ms": 1465491411000,
}
(OUT / "mysql_serde_update.jsonl").write_text(json.dumps(snap, separators=(",", ":")) + "\n" + upd + "\n")
