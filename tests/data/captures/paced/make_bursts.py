"""Writes bursts.v1.jsonl: a wal2json format-version 1 capture (``include-timestamp``,
``include-lsn``, ``include-xids``) of 48 transactions in 6 bursts of 8, 20 ms apart, with 0.45 s
of idle between bursts, committed from 2026-11-28 09:00:00 UTC. Transaction i inserts meter i
and raises meter i - 1's reading to i. Run from this folder: ``python make_bursts.py``."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

T0 = dt.datetime(2026, 11, 28, 9, 0, 0, tzinfo=dt.timezone.utc)


def offsets() -> list[float]:
    out, t = [], 0.0
    for _burst in range(6):
        for _ in range(8):
            out.append(round(t, 6))
            t += 0.02
        t += 0.45
    return out


def _row(kind: str, values: list[int], old: int | None = None) -> dict[str, Any]:
    change: dict[str, Any] = {
        "kind": kind,
        "schema": "public",
        "table": "meter",
        "columnnames": ["id", "reading"],
        "columntypes": ["integer", "integer"],
        "columnvalues": values,
    }
    if old is not None:
        change["oldkeys"] = {"keynames": ["id"], "keytypes": ["integer"], "keyvalues": [old]}
    return change


def main() -> None:
    lines = []
    for i, off in enumerate(offsets()):
        at = (T0 + dt.timedelta(seconds=off)).strftime("%Y-%m-%d %H:%M:%S.%f") + "+00"
        change = [_row("insert", [i, 0])] + ([_row("update", [i - 1, i], i - 1)] if i else [])
        doc = {"xid": 1000 + i, "nextlsn": f"0/{0x1000 + i * 0x100:X}", "timestamp": at, "change": change}
        lines.append(json.dumps(doc, separators=(",", ":")))
    (Path(__file__).parent / "bursts.v1.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
