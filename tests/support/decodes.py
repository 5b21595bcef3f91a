"""Counting the decodes of event payloads (DDL, rs_sqldml, applied procedure) in this process.

:func:`count_decodes` wraps ``json.loads`` and the three payload parsers for one test
(``monkeypatch``): a payload decoded is a JSON text that decodes to a payload object, or to a
record holding its payload as an object (a change file's line); a parse is a call of
``SchemaChange.parse``, ``SqlStatement.parse`` or ``AppliedProcedure.parse``. Both are counted
per event lsn. Spark's executors are other processes: what they decode is not counted here.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from applier.records.events import AppliedProcedure, SchemaChange, SqlStatement

# the fields that make a decoded object a payload of each kind, and a record's payload field
_PAYLOAD_KEYS = {
    "DDL": {"action", "column"},
    "SQL": {"operator", "category"},
    "PROC": {"procedure", "rowcount"},
}
_FIELD = {"DDL": "ddl", "SQL": "sqldml", "PROC": "procedure"}


@dataclass
class Decodes:
    decoded: Counter[tuple[str, int | None]] = field(default_factory=Counter)  # (kind, lsn) -> json.loads
    parsed: Counter[tuple[str, int]] = field(default_factory=Counter)  # (kind, lsn) -> parse calls

    def per_event(self, counter: Counter[Any]) -> dict[int | None, int]:
        out: Counter[int | None] = Counter()
        for (_, lsn), n in counter.items():
            out[lsn] += n
        return dict(out)


def count_decodes(monkeypatch: Any) -> Decodes:
    d = Decodes()
    real = json.loads

    def loads(s: Any, *args: Any, **kw: Any) -> Any:
        out = real(s, *args, **kw)
        if isinstance(out, dict):
            for kind, keys in _PAYLOAD_KEYS.items():
                if keys <= out.keys():
                    d.decoded[(kind, None)] += 1  # a bare payload: its lsn is not in it
                elif out.get("op") == kind and isinstance(out.get(_FIELD[kind]), dict):
                    d.decoded[(kind, out.get("lsn"))] += 1
        return out

    monkeypatch.setattr(json, "loads", loads)
    for kind, cls in (("DDL", SchemaChange), ("SQL", SqlStatement), ("PROC", AppliedProcedure)):

        def parse(*args: Any, _real: Any = cls.parse, _kind: str = kind) -> Any:
            m = re.search(r"lsn (\d+)", args[-1])
            d.parsed[(_kind, int(m.group(1)) if m else -1)] += 1
            return _real(*args)

        monkeypatch.setattr(cls, "parse", staticmethod(parse))
    return d
