"""``applier articles``: the articles file of a DDL script or of a live database.

Exit codes: 0 every table and column carried, 1 the file is written but something was not
carried (each listed on stderr: file:line, table, column, type, why), 2 nothing written.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def _tables(text: str | None) -> list[str] | None:
    if not text:
        return None
    return [t.strip() for t in text.split(",") if t.strip()]


def cmd_articles(a: argparse.Namespace) -> int:
    from applier.catalog.files import articles_toml
    from applier.errors import ApplierError

    try:
        if a.from_ddl:
            from applier.catalog.ddl import read_ddl_file

            catalog = read_ddl_file(a.from_ddl, a.dialect, _tables(a.tables))
            source = a.from_ddl
        else:
            from applier.catalog.target import read_target

            catalog = read_target(a.from_target, _tables(a.tables))
            source = "the target"
        for m in catalog.problems:
            print(f"not carried: {m}", file=sys.stderr)
        for m in catalog.notes:
            print(f"note: {m}", file=sys.stderr)
        text = articles_toml(catalog, source)
    except ApplierError as e:
        print(f"applier articles: {e}", file=sys.stderr)
        return 2
    if a.out:
        from pathlib import Path

        Path(a.out).write_text(text, encoding="utf-8")
        print(f"{a.out}: {len(catalog.articles)} article(s)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 1 if catalog.problems else 0


def register(subparsers: Any) -> str:
    p = subparsers.add_parser(
        "articles",
        help="write the [[articles]] of a DDL script (--from-ddl) or of a live database (--from-target)",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--from-ddl", metavar="FILE", help="a CREATE TABLE script (T-SQL or PostgreSQL)")
    src.add_argument(
        "--from-target", metavar="ODBC", help="an ODBC connection string (SQL Server or PostgreSQL driver)"
    )
    p.add_argument(
        "--dialect", choices=["tsql", "postgres"], default="tsql", help="dialect of --from-ddl (default tsql)"
    )
    p.add_argument("--tables", help="only these tables: schema.table,schema.table")
    p.add_argument("--out", help="the articles file to write (TOML; default: standard output)")
    p.set_defaults(func=cmd_articles)
    return "articles"
