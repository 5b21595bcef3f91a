"""Generated captures: N Debezium events (SQL Server connector, with the schema envelope, as
Kafka's JSON converter writes them) and the same changes as a canonical JSON Lines file, with
the settings that describe their article. For tests (small N) and for the speed measurement of
the Debezium reader against the canonical one (N = 1,000,000):

    python -m tests.support.debezium_capture OUT_DIR [EVENTS] [SEED]

writes OUT_DIR/settings.json, OUT_DIR/debezium.jsonl and OUT_DIR/canonical.jsonl; then e.g.
``applier convert --config OUT_DIR/settings.json --changes OUT_DIR/debezium.jsonl --format debezium
--out A`` against ``applier convert --config OUT_DIR/settings.json --changes OUT_DIR/canonical.jsonl
--out B``. Both hold the same transactions in the same order (inserts, updates, deletes and key
changes, which Debezium delivers as a delete and a create at one change LSN), numbered in the
canonical file as the conversion numbers a capture (lsn 1..N, xact_seqno 1.., command_id 1..),
so that both convert to the same canonical rows.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import random
import sys
from pathlib import Path
from typing import Any

from applier.config import parse_config

ARTICLE = "dbo.orders"
COLUMNS = [
    {"name": "id", "type": "int", "key": True},
    {"name": "customer", "type": "nvarchar(50)", "nullable": False},
    {"name": "amount", "type": "decimal(12,2)"},
    {"name": "qty", "type": "int"},
    {"name": "created", "type": "datetime2(6)"},
    {"name": "day", "type": "date"},
    {"name": "paid", "type": "bit"},
    {"name": "note", "type": "nvarchar(200)"},
]
SETTINGS = {
    "run": {"streams": 4, "subscription": "capture_speed"},
    "articles": [{"name": ARTICLE, "columns": COLUMNS}],
}
_EPOCH = dt.datetime(1970, 1, 1)
_DAY0 = dt.date(1970, 1, 1)


def _field(
    name: str, typ: str, optional: bool = True, sname: str | None = None, **params: str
) -> dict[str, Any]:
    d: dict[str, Any] = {"type": typ, "optional": optional}
    if sname is not None:
        d["name"] = sname
        d["version"] = 1
    if params:
        d["parameters"] = params
    d["field"] = name
    return d


def envelope_schema() -> dict[str, Any]:
    """The envelope schema Debezium's SQL Server connector gives dbo.orders."""
    value = [
        _field("id", "int32", False),
        _field("customer", "string", False),
        _field(
            "amount",
            "bytes",
            True,
            "org.apache.kafka.connect.data.Decimal",
            scale="2",
            **{"connect.decimal.precision": "12"},
        ),
        _field("qty", "int32"),
        _field("created", "int64", True, "io.debezium.time.MicroTimestamp"),
        _field("day", "int32", True, "io.debezium.time.Date"),
        _field("paid", "boolean"),
        _field("note", "string"),
    ]
    struct = {"type": "struct", "fields": value, "optional": True, "name": "server1.testDB.dbo.orders.Value"}
    source = [
        _field("version", "string", False),
        _field("connector", "string", False),
        _field("name", "string", False),
        _field("ts_ms", "int64", False),
        _field("snapshot", "string", True, "io.debezium.data.Enum", allowed="true,last,false,incremental"),
        _field("db", "string", False),
        _field("sequence", "string"),
        _field("schema", "string", False),
        _field("table", "string", False),
        _field("change_lsn", "string"),
        _field("commit_lsn", "string"),
        _field("event_serial_no", "int64"),
    ]
    return {
        "type": "struct",
        "fields": [
            dict(struct, field="before"),
            dict(struct, field="after"),
            {
                "type": "struct",
                "fields": source,
                "optional": False,
                "name": "io.debezium.connector.sqlserver.Source",
                "field": "source",
            },
            _field("op", "string", False),
            _field("ts_ms", "int64"),
            {
                "type": "struct",
                "fields": [
                    _field("id", "string", False),
                    _field("total_order", "int64", False),
                    _field("data_collection_order", "int64", False),
                ],
                "optional": True,
                "name": "event.block",
                "version": 1,
                "field": "transaction",
            },
        ],
        "optional": False,
        "name": "server1.testDB.dbo.orders.Envelope",
        "version": 1,
    }


def _row(rng: random.Random, key: int) -> dict[str, Any]:
    cents = rng.randrange(-(10**9), 10**9)
    return {
        "id": key,
        "customer": f"customer {rng.randrange(10**6)}",
        "amount": decimal.Decimal(cents).scaleb(-2),
        "qty": rng.randrange(1000),
        "created": _EPOCH
        + dt.timedelta(microseconds=rng.randrange(1_500_000_000_000_000, 1_800_000_000_000_000)),
        "day": _DAY0 + dt.timedelta(days=rng.randrange(15000, 21000)),
        "paid": rng.random() < 0.5,
        "note": None if rng.random() < 0.2 else "n" * rng.randrange(0, 60),
    }


def _debezium(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    amount: decimal.Decimal = row["amount"]
    unscaled = int(amount.scaleb(2))
    raw = unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)
    created: dt.datetime = row["created"]
    return {
        **row,
        "amount": base64.b64encode(raw).decode("ascii"),
        "created": (created - _EPOCH) // dt.timedelta(microseconds=1),
        "day": (row["day"] - _DAY0).days,
    }


def _canonical(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {
        **row,
        "amount": format(row["amount"], "f"),
        "created": row["created"].isoformat(timespec="microseconds"),
        "day": row["day"].isoformat(),
    }


def _lsn(n: int) -> str:
    return f"{n >> 40:08x}:{(n >> 8) & 0xFFFFFFFF:08x}:{n & 0xFF:04x}"


def write_debezium_capture(out: Path, events: int = 1000, seed: int = 1):  # type: ignore[no-untyped-def]
    """Write ``events`` Debezium events and their canonical twin under ``out``: (config, Debezium
    file, canonical file)."""
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    schema = json.dumps(envelope_schema(), separators=(",", ":"))
    head = '{"schema":' + schema + ',"payload":'
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    live: dict[int, dict[str, Any]] = {}
    keys: list[int] = []
    next_key = 1
    written = 0
    xact = 0
    change_no = 0  # the capture's LSNs: 4 per change
    dbz_path, can_path = out / "debezium.jsonl", out / "canonical.jsonl"
    with dbz_path.open("w", encoding="utf-8") as dbz, can_path.open("w", encoding="utf-8") as can:
        while written < events:
            xact += 1
            size = min(rng.randint(1, 4), events - written)
            commit = _lsn((xact * 16 + 15) << 8)
            cmd = 0
            planned = 0
            while planned < size:
                change_no += 1
                change = _lsn((xact * 16 + planned + 1) << 8)
                r = rng.random()
                changes: list[
                    tuple[str, str, Any, Any, int]
                ] = []  # (dbz op, canonical op, before, after, serial)
                if not keys or r < 0.4:
                    row = _row(rng, next_key)
                    next_key += 1
                    live[row["id"]] = row
                    keys.append(row["id"])
                    changes.append(("c", "I", None, row, 1))
                elif r < 0.75:
                    k = rng.choice(keys)
                    before = live[k]
                    after = dict(before, qty=rng.randrange(1000), note=f"updated {rng.randrange(10**6)}")
                    live[k] = after
                    changes.append(("u", "U", before, after, 2))
                elif r < 0.9 or size - planned < 2:
                    k = keys.pop(rng.randrange(len(keys)))
                    changes.append(("d", "D", live.pop(k), None, 1))
                else:  # a key change: delete + create at one change LSN (event_serial_no 1 and 2)
                    k = keys.pop(rng.randrange(len(keys)))
                    before = live.pop(k)
                    after = dict(before, id=next_key)
                    next_key += 1
                    live[after["id"]] = after
                    keys.append(after["id"])
                    changes += [("d", "D", before, None, 1), ("c", "I", None, after, 2)]
                for op, cop, before, after, serial in changes:
                    cmd += 1
                    written += 1
                    planned += 1
                    payload = {
                        "before": _debezium(before),
                        "after": _debezium(after),
                        "source": {
                            "version": "2.7.0.Final",
                            "connector": "sqlserver",
                            "name": "server1",
                            "ts_ms": 1559729468470 + written,
                            "snapshot": "false",
                            "db": "testDB",
                            "sequence": None,
                            "schema": "dbo",
                            "table": "orders",
                            "change_lsn": change,
                            "commit_lsn": commit,
                            "event_serial_no": serial,
                        },
                        "op": op,
                        "ts_ms": 1559729470000 + written,
                        "transaction": None,
                    }
                    dbz.write(head + dumps(payload) + "}\n")
                    can.write(
                        dumps(
                            {
                                "lsn": written,
                                "xact_seqno": xact,
                                "command_id": cmd,
                                "article": ARTICLE,
                                "op": cop,
                                "before": _canonical(before),
                                "after": _canonical(after),
                            }
                        )
                        + "\n"
                    )
    (out / "settings.json").write_text(json.dumps(SETTINGS, indent=2) + "\n", encoding="utf-8")
    return parse_config(SETTINGS, "<capture fixtures>"), dbz_path, can_path


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    _, d, c = write_debezium_capture(
        Path(args[0]), int(args[1]) if len(args) > 1 else 1000, int(args[2]) if len(args) > 2 else 1
    )
    print(d, c)
