"""Test modules do not import each other (STYLE.md): what two of them share lives in
tests/support/, and every import of the ``tests`` package by a module under tests/ names a module
of ``tests.support``. Imports are read with :mod:`ast`, wherever they are (a function's body, an
``if TYPE_CHECKING`` block), in all their forms: ``import tests.x``, ``from tests.x import y``,
``from tests.x import module``, relative imports, a bare ``import helpers`` that the module's
folder on ``sys.path`` would resolve, and ``importlib.import_module("tests.x")``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
SUPPORT = "tests.support"


def module_name(path: Path) -> str:
    """The dotted name of a file under the repository's root (a package's ``__init__``: the
    package's)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def local_names() -> set[str]:
    """What a bare ``import X`` could find under tests/ if a folder of it were on ``sys.path``:
    every module's and package's own name there (``tests`` itself excluded: that is the package)."""
    files = list(TESTS.rglob("*.py"))
    return ({p.stem for p in files} | {p.parent.name for p in files}) - {"tests", "__init__"}


def imported(source: str, module: str, is_package: bool) -> Iterator[tuple[ast.AST, list[str]]]:
    """Each import of ``source`` (the module ``module``) with the dotted names it reaches; for
    ``from M import n`` the name is ``M.n``, since ``n`` may be a module of package ``M``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield node, [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            yield node, [base if alias.name == "*" else f"{base}.{alias.name}" for alias in node.names]
        elif (
            isinstance(node, ast.Call)
            and (getattr(node.func, "id", None) or getattr(node.func, "attr", None))
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node, [node.args[0].value]


def reached(name: str, local: set[str]) -> str | None:
    """Why importing ``name`` from a module under tests/ is refused; None if it is not."""
    parts = name.split(".")
    if parts[0] == "tests":
        if name == SUPPORT or name.startswith(SUPPORT + "."):
            return None
        return (
            "a test module" if any(p.startswith("test_") for p in parts) else "a module outside tests/support"
        )
    if parts[0] in local:
        return "a module of tests/ by its bare name"
    return None


def violations(source: str, path: Path, local: set[str]) -> list[str]:
    """One line per import of ``source`` (the file ``path`` under tests/) that reaches a test
    module or a helper outside tests/support: where it is, the statement, and why."""
    out: list[str] = []
    for node, names in imported(source, module_name(path), path.name == "__init__.py"):
        why = sorted({w for n in names if (w := reached(n, local))})
        if why:
            out.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)} ({', '.join(why)})")
    return out


def test_no_module_under_tests_imports_a_test_module_or_a_helper_outside_support() -> None:
    files = sorted(TESTS.rglob("*.py"))
    local = local_names()
    found = [v for f in files for v in violations(f.read_text(encoding="utf-8"), f, local)]
    assert not found, "move what they share to tests/support/:\n" + "\n".join(found)
    # the walk saw the suite (not an empty folder) and the support package
    assert len(files) > 150, len(files)
    assert (TESTS / "support" / "runs.py") in files


def test_support_holds_no_test_module() -> None:
    """pytest would collect a test_*.py under tests/support/, and a test module there is one
    that others import."""
    assert not sorted(p.name for p in (TESTS / "support").rglob("test_*.py"))


# (what a file holds, where it is, flagged?): every form of import, allowed or not.
CASES = [
    ("from tests.support.runs import config, run", "tests/integration/test_a.py", False),
    ("from tests.support import adventureworks", "tests/unit/test_a.py", False),
    ("import tests.support.harness", "tests/unit/test_a.py", False),
    ("from tests.support.publisher import start_publisher", "tests/support/harness.py", False),
    ("from . import runs", "tests/support/harness.py", False),  # relative, inside support
    ("from .runs import run", "tests/support/__init__.py", False),  # relative from the package
    ("import json\nfrom applier.config import parse_config", "tests/unit/test_a.py", False),
    ("from tests.unit.test_tsql_dialect import CASES", "tests/unit/test_procedures.py", True),
    ("from tests.integration import test_repserver_schema as seed", "tests/tsql/test_x.py", True),
    ("import tests.faults.test_kill_resume", "tests/tsql/test_x.py", True),
    ("from tests.integration.helpers import rows", "tests/integration/test_a.py", True),
    ("from tests.unit import adventureworks", "tests/unit/test_a.py", True),
    ("from tests import conftest", "tests/unit/test_a.py", True),
    ("from tests import unit", "tests/unit/test_a.py", True),
    ("from .test_b import X", "tests/unit/test_a.py", True),  # relative: tests.unit.test_b
    ("from ..integration import badinput", "tests/unit/test_a.py", True),
    ("from .. import support", "tests/unit/test_a.py", False),  # tests.support
    ("def f():\n    from tests.integration.test_a import x\n", "tests/unit/test_b.py", True),
    ("if TYPE_CHECKING:\n    from tests.unit.test_a import T\n", "tests/unit/test_b.py", True),
    ("import importlib\nimportlib.import_module('tests.unit.test_a')", "tests/unit/test_b.py", True),
    ("import conftest", "tests/unit/test_a.py", True),  # bare: the folder on sys.path
    ("import test_bench_sender", "tests/unit/test_a.py", True),
    ("from runs import run", "tests/support/harness.py", True),
]


@pytest.mark.parametrize(
    ("source", "where", "flagged"), CASES, ids=[c[0].splitlines()[-1][:60] for c in CASES]
)
def test_the_check_reads_every_form_of_import(source: str, where: str, flagged: bool) -> None:
    local = local_names() | {"test_bench_sender", "runs", "conftest"}
    found = violations(source, ROOT / where, local)
    assert bool(found) is flagged, found
    if flagged:  # the message names the file and line
        assert found[0].startswith(f"{where}:"), found
