"""Bad input driven through the CLI in-process (``applier.cli.main``): one Spark session and
the session's embedded PostgreSQL for every case, so a case costs what its validation costs.

Each case writes its files under its own folder, names its own article ``dbo.<table>``, and
must be refused with exit code 2, one clear message naming the place, no traceback, and
nothing applied: the subscriber has no table of the case's article.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.subscriber import table_exists

COLUMNS = [
    {"name": "id", "type": "int", "key": True},
    {"name": "v", "type": "nvarchar(10)"},
    {"name": "n", "type": "int"},
    {"name": "d", "type": "decimal(6,2)"},
    {"name": "r", "type": "real"},
    {"name": "s", "type": "smallint"},
]
FIFO = object()  # a file content that asks for a FIFO
FOLDER = object()  # ... for an empty folder


def toml_config(table: str, run: str = "", extra_article: str = "") -> str:
    cols = ",\n  ".join(
        "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in c.items()) + " }" for c in COLUMNS
    )
    run_section = f"[run]\nstreams = 2\ncommit_batch_size = 10\n{run}\n"
    return f'{run_section}[[articles]]\nname = "dbo.{table}"\ncolumns = [\n  {cols},\n]\n{extra_article}'


def row(i: int, **over: Any) -> dict[str, Any]:
    return {"id": i, "v": f"v{i}", "n": i, "d": f"{i % 100}.25", "r": 1.5, "s": i % 300, **over}


def insert(table: str, i: int, **over: Any) -> dict[str, Any]:
    """The i-th command (i >= 1): an insert in transaction i, lsn = i << 20 | 1."""
    return {
        "lsn": (i << 20) | 1,
        "xact_seqno": i,
        "command_id": 1,
        "article": f"dbo.{table}",
        "op": "I",
        "after": row(i),
        **over,
    }


def jsonl(records: Sequence[dict[str, Any] | str | bytes]) -> bytes:
    out = b""
    for r in records:
        if isinstance(r, bytes):
            out += r
        elif isinstance(r, str):
            out += r.encode("utf-8", "surrogatepass")
        else:
            out += json.dumps(r).encode("utf-8")
        out += b"\n"
    return out


@dataclass
class Case:
    """Files to write (name -> bytes, FIFO or FOLDER), the command line (``{dir}`` is the case's
    folder, ``{cs}`` the session target), and what the message must name."""

    key: str
    files: dict[str, Any]
    argv: list[str]
    words: list[str]
    target: bool = True  # add --target {cs} (cases about --target give their own)
    extra: dict[str, Any] = field(default_factory=dict)


def materialize(case: Case, folder: Path) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in case.files.items():
        p = folder / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if content is FIFO:
            os.mkfifo(p)
        elif content is FOLDER:
            p.mkdir(exist_ok=True)
        else:
            p.write_bytes(content)
    return [a.replace("{dir}", str(folder)) for a in case.argv]


@dataclass
class Runner:
    """Runs cases through ``applier.cli.main`` against ``cs`` (the session PostgreSQL)."""

    target: Any  # the Endpoint, to look for tables
    capsys: Any
    root: Path
    seen: set[str] = field(default_factory=set)
    runs: int = 0

    def refused(self, make: Callable[[str], Case]) -> str:
        from applier.cli import main

        self.runs += 1
        table = f"fz_{os.getpid()}_{self.runs}"
        case = make(table)
        folder = self.root / f"c{self.runs}"
        argv = materialize(case, folder)
        cs = self.target.connection_string
        argv = ["run", *argv, *(["--target", cs] if case.target else []), "-q"]
        argv = [a.replace("{cs}", cs) for a in argv]
        self.capsys.readouterr()
        code = main(argv)
        out, err = self.capsys.readouterr()
        shown = f"case {case.key}: {argv}\nstdout: {out[-2000:]}\nstderr: {err[-3000:]}"
        assert code == 2, shown
        assert "Traceback" not in err, shown
        message = "\n".join(ln for ln in err.splitlines() if "WARN" not in ln)
        for w in case.words:
            w = w.replace("{dir}", str(folder))
            assert w in message, f"{w!r} not in the message\n{shown}"
        assert not table_exists(self.target, "dbo", table), f"something was applied\n{shown}"
        self.seen.add(case.key)
        return message
