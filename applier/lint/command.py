"""``applier lint``: warn about custom update/delete procedures that lack the zero-row check.

Exit codes: 0 no findings, 1 warnings, 2 errors (or the check could not run).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def cmd_lint(a: argparse.Namespace) -> int:
    from applier.config import demo_config, load_config
    from applier.dialects import DIALECTS
    from applier.lint.checks import ERROR, custom_procedures, probe, text_findings

    config = load_config(a.config) if a.config else demo_config()
    files = [Path(p) for p in a.custom_sql or []]
    customs = custom_procedures(config.articles)
    if not customs:
        print("lint: no custom update or delete procedures in the articles")
        return 0
    findings = []
    if a.no_probe:
        findings = text_findings(config.articles, DIALECTS[a.dialect](), files)
    else:
        from applier.targets import Target

        with Target.parse(a.target) as target:
            endpoint = target.endpoint()
            findings = text_findings(config.articles, endpoint.dialect, files)
            findings += probe(endpoint.connection_string, endpoint.dialect, config.articles, files)
    for f in findings:
        print(f)
    if not findings:
        checks = "text" if a.no_probe else "text and probe"
        print(f"lint: {len(customs)} custom procedure(s) checked ({checks}): no findings")
        return 0
    return 2 if any(f.level == ERROR for f in findings) else 1


def register(subparsers: Any) -> str:
    p = subparsers.add_parser(
        "lint",
        help="check custom update/delete procedures for the zero-row check (20598), by text and by a probe",
    )
    p.add_argument("--config", "--articles", dest="config", help="TOML/YAML file with [[articles]]")
    p.add_argument(
        "--custom-sql", action="append", help="SQL file of custom procedures (repeatable), as for run"
    )
    p.add_argument(
        "--target",
        help="where to probe: embedded (default) | babelfish | mssql | postgres-container | an ODBC connection string",
    )
    p.add_argument(
        "--dialect",
        choices=["tsql", "postgres"],
        default="postgres",
        help="dialect of the SQL files when --no-probe (otherwise the target's)",
    )
    p.add_argument("--no-probe", action="store_true", help="read the text only; do not reach a subscriber")
    p.set_defaults(func=cmd_lint)
    return "lint"
