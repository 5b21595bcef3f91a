"""A run's schedule as it happened: the steps every stream took, read back from its events.

A step is a chunk of calls sent on one connection (in a controlled schedule: one call), a
commit or a rollback. ``schedule.jsonl`` holds one step per line in the order they ran: a
controlled schedule's own order (the gate numbers its turns), else the order they started in
(free connections race: that order is one serialization of what overlapped)::

    {"step": 0, "stream": 1, "round": 0, "kind": "exec", "lsns": [17, 18], "anchor": 12,
     "result": "ok" | {"class", "code", "message"}, "t0": 1763.2, "t1": 1763.3}

``anchor`` is the lsn of the last command the stream sent before the step: a commit, a
rollback or a progress row is known by it when a shrunk stream follows the recorded order
(:func:`applier.apply.gate.order_of`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame

from applier.errors import InputError


def schedule_rows(events: DataFrame) -> list[dict[str, Any]]:
    """The steps of the run's events, in the order they ran."""
    rows = (
        events.where("kind = 'step'")
        .select("stream", "round", "outcome", "class", "code", "message", "n", "t_exec", "t_commit")
        .collect()
    )
    controlled = bool(rows) and all(r["n"] is not None for r in rows)
    rows.sort(
        key=(lambda r: (r["n"], 0.0, r["stream"]))
        if controlled
        else (lambda r: (0, r["t_exec"], r["stream"]))
    )
    out = []
    for i, r in enumerate(rows):
        detail = json.loads(r["message"] or "{}")
        result: Any = "ok"
        if r["class"] is not None:
            result = {"class": r["class"], "code": r["code"], "message": detail.get("error")}
        out.append(
            {
                "step": i,
                "stream": r["stream"],
                "round": r["round"],
                "kind": r["outcome"],
                "lsns": detail.get("lsns") or [],
                "anchor": detail.get("anchor"),
                "result": result,
                "t0": r["t_exec"],
                "t1": r["t_commit"],
            }
        )
    return out


def conflict_rows(events: DataFrame) -> list[tuple[int | None, int | None, str]]:
    """(lsn, stream, class) of every conflict, sorted: what a replay compares."""
    rows = events.where("kind = 'conflict'").select("lsn", "stream", "class").collect()
    return sorted(
        ((r["lsn"], r["stream"], r["class"]) for r in rows),
        key=lambda x: (x[0] or -1, x[1] or -1, x[2] or ""),
    )


def write_schedule(steps: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w", encoding="utf-8") as f:
        for st in steps:
            f.write(json.dumps(st, default=str) + "\n")
    return p


def read_schedule(path: str | Path) -> list[dict[str, Any]]:
    """A recorded schedule.jsonl; an error names the file and line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"schedule file {p}: {e.strerror or e}") from None
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            st = json.loads(line)
        except ValueError as e:
            raise InputError(f"{p}:{n}: not JSON ({e})") from None
        if not isinstance(st, dict) or "kind" not in st or not isinstance(st.get("lsns", []), list):
            raise InputError(f"{p}:{n}: not a schedule step (an object with kind and lsns)")
        out.append(st)
    return out
