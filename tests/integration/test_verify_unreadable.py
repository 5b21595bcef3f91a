"""A subscriber row that cannot be read back makes the verdict UNKNOWN with a one-line reason
naming the article, the column and the key, in the JSON report and the console summary, and
no traceback on the console (issue 31: the verdict cell held the Python worker's traceback).

The row is real: a trigger the custom SQL installs at the subscriber writes 300 into a
``tinyint`` column (PostgreSQL holds it as smallint), a value the decoder refuses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import write_jsonl

pytestmark = pytest.mark.integration

CONFIG = """
[run]
streams = 2

[[articles]]
name = "dbo.orders"
columns = [
  { name = "id", type = "int", key = true },
  { name = "qty", type = "tinyint" },
  { name = "updated", type = "datetimeoffset(6)" },
]
"""
TRIGGER = """
CREATE FUNCTION dbo.overfill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id = 3 THEN
        NEW.qty := 300;  -- fits the smallint column, not the article's tinyint
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER overfill BEFORE INSERT ON dbo.orders FOR EACH ROW EXECUTE FUNCTION dbo.overfill();
"""
REASON = (
    "could not check article 'dbo.orders': column 'qty' (tinyint) at key [3]: out of range 0..255, got 300"
)


def _insert(i: int) -> dict[str, Any]:
    after = {"id": i, "qty": i, "updated": f"2024-03-10T0{i}:00:00.000000-05:00"}
    return {
        "lsn": i,
        "xact_seqno": 1 + i // 3,
        "command_id": i,
        "article": "dbo.orders",
        "op": "I",
        "after": after,
    }


def test_a_value_the_decoder_refuses_is_a_one_line_reason(pg: Any, tmp_path: Path) -> None:
    target = pg.subscriber("unreadable")
    (tmp_path / "config.toml").write_text(CONFIG, encoding="utf-8")
    (tmp_path / "overfill.sql").write_text(TRIGGER, encoding="utf-8")
    write_jsonl(tmp_path / "changes.jsonl", [_insert(i) for i in range(1, 6)])
    report = tmp_path / "report.json"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "applier.cli", "run"),
            *("--config", str(tmp_path / "config.toml"), "--changes", str(tmp_path / "changes.jsonl")),
            *("--custom-sql", str(tmp_path / "overfill.sql"), "--target", target.connection_string),
            *("--report", str(report)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},
    )
    shown = f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode == 2, shown
    doc = json.loads(report.read_text())
    assert doc["verdict"] == "unknown", shown
    assert doc["reason"] == REASON
    assert "Traceback" not in done.stdout + done.stderr, shown
    # the summary's verdict cell holds the reason on one line (a console wide enough for it)
    cells = [[c.strip() for c in ln.split("│")[1:-1]] for ln in done.stdout.splitlines()]
    assert ["verdict", f"UNKNOWN - {REASON}"] in cells, shown
