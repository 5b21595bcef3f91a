"""``FILE.meta``: what each ``applier capture`` run asked the slot for, one JSON line a run,
beside the capture ``FILE`` (not a change file's suffix: a folder of captures is read without
it). ``applier run`` repeats a capture's warning when it reads the capture, so a NaN turned
NULL by wal2json 2.5 is said where the run is looked at, not only where the capture ran."""

from __future__ import annotations

import json
from pathlib import Path


def meta_path(out: Path) -> Path:
    """``FILE.meta`` beside the capture ``FILE``."""
    return out.with_name(out.name + ".meta")


def warnings_of(changes: str | Path | None) -> list[str]:
    """The warnings ``applier capture`` recorded for the change files ``changes`` names (a file
    or a folder), one line each naming its file; the same warning of several runs once. A
    ``.meta`` line that is not JSON, or a path that does not exist, says nothing (the run's
    own checks name a bad path)."""
    if changes is None:
        return []
    p = Path(changes)
    if p.is_file():
        files = [p]
    elif p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.is_file() and not f.name.endswith(".meta"))
    else:
        return []
    out: list[str] = []
    for f in files:
        m = meta_path(f)
        if not m.is_file():
            continue
        seen: list[str] = []
        for line in m.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            w = entry.get("warning") if isinstance(entry, dict) else None
            if isinstance(w, str) and w and w not in seen:
                seen.append(w)
        out += [f"{f}: {w}" for w in seen]
    return out
