"""Turn wal2json's regression outputs (psql's aligned ``*.out``) into pg_recvlogical-style
captures: ``<example>.v1.jsonl`` / ``<example>.v2.jsonl``, one JSON document per line.

Each ``SELECT data FROM pg_logical_slot_{peek,get}_changes(... 'format-version', 'N' ...)`` in
an ``.out`` is followed by psql's table of ``data`` rows: a row spanning lines ends each but its
last with ``+`` (pretty-print), rows are indented one space and padded with spaces. A row's lines
are joined and the whitespace outside JSON strings dropped, so every other character (number
texts such as ``3.540`` included) is kept as wal2json wrote it. When an example queries the
same format version twice (``pk``: without and with ``include-pk``), the last query wins.
Run from this folder: ``python extract.py``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

QUERY = re.compile(r"^SELECT data FROM pg_logical_slot_(?:peek|get)_changes\(.*'format-version', '(\d)'")


def compact(text: str) -> str:
    out: list[str] = []
    in_str = esc = False
    for ch in text:
        if in_str:
            out.append(ch)
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
            out.append(ch)
        elif not ch.isspace():
            out.append(ch)
    return "".join(out)


def rows(lines: list[str], start: int) -> list[str]:
    """The data rows of the psql table after the query at ``start``."""
    i = start + 1
    while not lines[i].startswith("---"):
        i += 1
    i += 1
    found: list[str] = []
    cur: list[str] = []
    while not re.match(r"^\(\d+ rows?\)$", lines[i]):
        line = lines[i].rstrip()
        if line.endswith("+"):
            cur.append(line[1:-1])
        else:
            cur.append(line[1:])
            found.append(compact("\n".join(cur)))
            cur = []
        i += 1
    for r in found:
        json.loads(r)  # each is one JSON document
    return found


def main(folder: Path) -> None:
    for out in sorted(folder.glob("*.out")):
        lines = out.read_text().splitlines()
        by_version: dict[str, list[str]] = {}
        for i, line in enumerate(lines):
            m = QUERY.match(line)
            if m and "count(*)" not in line:
                by_version[m.group(1)] = rows(lines, i)
        for version, docs in by_version.items():
            target = folder / f"{out.stem}.v{version}.jsonl"
            target.write_text("".join(d + "\n" for d in docs))
            print(f"{target.name}: {len(docs)} lines")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)
