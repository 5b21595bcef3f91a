"""A subscriber row that cannot be read back makes the verdict UNKNOWN with a one-line reason
naming the article, the column and the key, everywhere: the JSON report, the console summary,
the JUnit XML and the HTML report. The traceback reaches the console only with ``-v`` (issue
31: the verdict cell held the Python worker's traceback).

The row is real: a trigger the custom SQL installs at the subscriber writes 300 into a
``tinyint`` column (PostgreSQL holds it as smallint), a value the decoder refuses.
"""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.support.changes import write_jsonl

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


def _run(target: Any, tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *(sys.executable, "-m", "applier.cli", "run", *extra),
            *("--config", str(tmp / "config.toml"), "--changes", str(tmp / "changes.jsonl")),
            *("--custom-sql", str(tmp / "overfill.sql"), "--target", target.connection_string),
            *("--report", str(tmp / "report.json")),
            *("--junit", str(tmp / "junit.xml"), "--html", str(tmp / "report.html")),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},
    )


def test_a_value_the_decoder_refuses_is_a_one_line_reason_everywhere(pg: Any, tmp_path: Path) -> None:
    target = pg.subscriber("unreadable")
    (tmp_path / "config.toml").write_text(CONFIG, encoding="utf-8")
    (tmp_path / "overfill.sql").write_text(TRIGGER, encoding="utf-8")
    write_jsonl(tmp_path / "changes.jsonl", [_insert(i) for i in range(1, 6)])
    done = _run(target, tmp_path)
    shown = f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode == 2, shown
    doc = json.loads((tmp_path / "report.json").read_text())
    assert doc["verdict"] == "unknown", shown
    assert doc["reason"] == REASON
    assert "Traceback" not in done.stdout + done.stderr, shown
    # the summary's verdict cell holds the reason on one line (a console wide enough for it)
    cells = [[c.strip() for c in ln.split("│")[1:-1]] for ln in done.stdout.splitlines()]
    assert ["verdict", f"UNKNOWN - {REASON}"] in cells, shown

    # JUnit: the article's testcase errors with the reason, message and text alike; the apply
    # ran to its end, so its testcase holds no error
    junit = ET.parse(tmp_path / "junit.xml").getroot()
    cases = {c.get("name"): c for c in junit.iter("testcase")}
    assert set(cases) == {"apply", "dbo.orders converges"}, cases
    assert cases["apply"].find("error") is None and cases["apply"].find("failure") is None
    error = cases["dbo.orders converges"].find("error")
    assert error is not None
    assert error.get("message") == f"not checked: {REASON}"
    assert error.text == REASON
    text = (tmp_path / "junit.xml").read_text(encoding="utf-8")
    assert "Traceback" not in text and 'File "' not in text

    # HTML: the reason once under the verdict, escaped, and nothing of a traceback
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert '<div class="reason"' in page
    assert page.count(html.escape(REASON, quote=True)) == 1, page[:3000]
    assert "Traceback" not in page and "File &quot;" not in page

    # -v: the same reason, and the traceback on the console (applier's log)
    loud = _run(pg.subscriber("unreadable_v"), tmp_path, "-v")
    assert loud.returncode == 2, loud.stderr[-3000:]
    assert json.loads((tmp_path / "report.json").read_text())["reason"] == REASON
    logged = loud.stderr.split(f"applier.pipeline: applier: verify: {REASON}\n", 1)
    assert len(logged) == 2, loud.stderr[-3000:]
    assert logged[1].startswith("Traceback (most recent call last)"), logged[1][:3000]
