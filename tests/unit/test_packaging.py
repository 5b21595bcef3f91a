"""Every package of applier ships: pyproject's explicit package list names each folder that has an
``__init__.py`` (a package left out installs from a checkout, editable, and is missing from a
wheel: ``applier.sources.formats`` was)."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 (pyproject's floor)
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_is_in_pyproject_s_list() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "applier").rglob("__init__.py")}
    assert found - listed == set(), "add these to [tool.setuptools] packages"
    data = {p for p in listed if p.startswith(("applier.sql", "applier.report.templates"))}  # data folders
    assert listed - data <= found  # nothing listed that is gone
