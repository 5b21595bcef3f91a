"""Set-based apply (``run.set_apply``): consecutive commands of one operation on one article
become one :class:`BulkCall` of the article's set procedure (``Dialect.set_procedure_sql``),
its rows bound as one JSON parameter, the images as they travel (no value converted here).
Updates of the same key merge (later changed columns win, masks OR-ed); a second insert or
delete of a key, a key change, a custom procedure or a syntax whose per-row effect is not a
plain keyed statement ends the run and goes row by row, so effects keep the stream's order.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from applier.plan.calls import Call, CompiledPlan

Row = dict[str, Any]
_loads = json.JSONDecoder().decode


@dataclass(frozen=True)
class BulkCall(Call):
    """A set-based call: ``params`` is the rows as one JSON text; ``rows`` the commands it
    applies, in stream order (for error attribution and the row-by-row fallback)."""

    rows: tuple[Row, ...] = ()


BULK_MAX_ROWS = 5000  # rows per set-based call: bounds the JSON text one round trip carries


def bulk_calls(rows: Sequence[Row], plan_of: Callable[[Row], CompiledPlan]) -> list[tuple[Row, Call]]:
    """The calls of ``rows``: set-based where the plan has a set procedure, row by row
    otherwise, in stream order."""
    out: list[tuple[Row, Call]] = []
    seg: _Segment | None = None
    for r in rows:
        plan = plan_of(r)
        if plan.set_sql is None or (r["op"] == "U" and r["key_before"] != r["key_after"]):
            if seg is not None:
                out.append(seg.call())
                seg = None
            call = plan.call(r)
            if call is not None:
                out.append((r, call))
            continue
        if seg is not None and (seg.plan is not plan or len(seg.rows) >= BULK_MAX_ROWS or not seg.add(r)):
            out.append(seg.call())
            seg = None
        if seg is None:
            seg = _Segment(plan)
            seg.add(r)
    if seg is not None:
        out.append(seg.call())
    return out


class _Segment:
    """Consecutive rows of one (article, op) on their way to one set-based call: per key the
    image to send (JSON text as it came, or merged into a dict) and, for updates, the mask."""

    def __init__(self, plan: CompiledPlan) -> None:
        self.plan = plan
        self.rows: list[Row] = []
        self.images: dict[str, list[Any]] = {}  # key text -> [image text | dict, mask]

    def add(self, r: Row) -> bool:
        """Take r; False (r not taken) when it cannot join: a second insert or delete of a key."""
        op = self.plan.op
        if op == "U":
            key, image = r["key_before"], r["after"]
        elif op == "I":
            key, image = r["key_after"], r["after"]
        else:
            key, image = r["key_before"], r["before"]
        entry = self.images.get(key)
        if entry is not None and op != "U":
            return False
        mask = self.plan.mask(r) if op == "U" else ""
        if entry is None:
            self.images[key] = [image, mask]
        else:  # a later update of the same key: its changed columns win
            old = entry[0] if isinstance(entry[0], dict) else _loads(entry[0])
            new = _loads(image)
            for n, bit in zip(self.plan.names, mask, strict=True):
                if bit == "1":
                    old[n] = new.get(n)
            entry[0] = old
            entry[1] = "".join("1" if "1" in (a, b) else "0" for a, b in zip(entry[1], mask, strict=True))
        self.rows.append(r)
        return True

    def call(self) -> tuple[Row, Call]:
        plan = self.plan
        parts = []
        mk = plan.mask_key
        for image, mask in self.images.values():
            if plan.op != "U":
                parts.append(image if isinstance(image, str) else json.dumps(image))
            elif isinstance(image, str) and image.lstrip().startswith("{") and image.strip() != "{}":
                parts.append("{" + mk + ':"' + mask + '",' + image.lstrip()[1:])
            else:
                img = dict(image if isinstance(image, dict) else _loads(image))
                img[plan.mask_name] = mask
                parts.append(json.dumps(img))
        assert plan.set_sql is not None
        return self.rows[0], BulkCall(plan.set_sql, ("[" + ",".join(parts) + "]",), tuple(self.rows))
