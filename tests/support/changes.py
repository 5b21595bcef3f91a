"""Change files written by tests: canonical JSON Lines records, one per line."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def key_update(
    lsn: int, xact: int, article: str, old: int, new: int, v: str = "x", n: int = 0
) -> dict[str, Any]:
    """An update moving the row of key ``old`` to key ``new`` (the columns of
    :func:`tests.support.runs.config`: id, v, n)."""
    return {
        "lsn": lsn,
        "xact_seqno": xact,
        "command_id": 1,
        "article": article,
        "op": "U",
        "before": {"id": old, "v": v, "n": n},
        "after": {"id": new, "v": v, "n": n},
    }


def write_jsonl(path: Path, records: Iterable[dict[str, Any] | str]) -> Path:
    """``records`` written to ``path``, one a line (a str as it is, a dict as JSON)."""
    with path.open("w", encoding="utf-8") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path
