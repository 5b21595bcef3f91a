"""Write a run's report files, JSON, JUnit XML and HTML, from its one JSON document."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from applier.report.json import write_json


def write_text(text: str, path: str | Path) -> Path:
    """Write through a temporary file renamed over the target: a reader (a CI system
    collecting artefacts, a run killed mid-write) sees the old file or the new, never half."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(p)
    return p


def write_reports(
    doc: Mapping[str, Any],
    *,
    json: str | Path | None = None,
    junit: str | Path | None = None,
    html: str | Path | None = None,
    kind: str = "run",
) -> dict[str, str]:
    """The files asked for, by name ("json", "junit", "html"); ``kind``: run or matrix."""
    files: dict[str, str] = {}
    if json is not None:
        files["json"] = str(write_json(doc, json))
    if junit is not None:
        from applier.report import junit as j

        files["junit"] = str(write_text(j.run_junit(doc) if kind == "run" else j.matrix_junit(doc), junit))
    if html is not None:
        from applier.report import html as h

        files["html"] = str(write_text(h.render_run(doc) if kind == "run" else h.render_matrix(doc), html))
    return files
