"""Does a custom update or delete procedure raise 20598 when it finds no row?

SQL Server's documentation is explicit: with ``-SubscriptionStreams`` above 1, "Custom stored
procedures must include similar logic" to the default procedures' ``if @@rowcount = 0 ...
exec sp_MSreplraiserror 20598`` (MicrosoftDocs, "Specify how changes are propagated for
transactional articles"). Without it, an update that overtakes the key change it depends on
updates nothing, silently, and the subscriber diverges.

Two checks, each a list of :class:`Finding`:

- :func:`text_findings` reads the procedure's text in the user's SQL files: a row-count test
  (T-SQL ``@@ROWCOUNT`` / ``ROWCOUNT_BIG()``; PL/pgSQL ``FOUND`` / ``GET DIAGNOSTICS ...
  ROW_COUNT``) and a raise (``RAISERROR`` / ``THROW`` / ``sp_MSreplraiserror``; ``RAISE``).
  Comments are ignored. A heuristic: it can be fooled both ways, hence the probe.
- :func:`probe` installs the files in a transaction on a real subscriber (creating the
  article's table there if it is missing), calls each custom update and delete procedure
  with the declared call syntax and a key that does not exist, and rolls back. The procedure
  passes when the error it raises classifies as row not found (20598 / RP598).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from applier.articles import Article
from applier.dialects.base import Dialect
from applier.dialects.conflicts import ConflictClass
from applier.dialects.procedures import OPS
from applier.errors import ApplierError
from applier.plan.calls import call_params

WARNING = "warning"
ERROR = "error"


@dataclass(frozen=True)
class Finding:
    level: str  # warning | error
    article: str
    op: str  # I / U / D
    procedure: str
    check: str  # text | probe
    message: str

    def __str__(self) -> str:
        return f"{self.level}: {self.article} {OPS[self.op]} procedure {self.procedure} ({self.check}): {self.message}"


def custom_procedures(articles: Sequence[Article]) -> list[tuple[Article, str, str]]:
    """(article, op, procedure name) of every custom update and delete procedure."""
    out = []
    for a in articles:
        for op in "UD":
            d = a.delivery(op)
            if d.procedure:
                out.append((a, op, d.procedure))
    return out


# -- reading the text -----------------------------------------------------------------------
_BLOCK_COMMENT_RE = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT_RE = re.compile(r"--[^\n]*")
_CREATE_RE = re.compile(
    r"\bcreate\s+(?:or\s+(?:alter|replace)\s+)?proc(?:edure)?\s+"
    r"((?:\[[^\]]*(?:\]\][^\]]*)*\]|\"[^\"]*(?:\"\"[^\"]*)*\"|[\w$#@]+)"
    r"(?:\s*\.\s*(?:\[[^\]]*(?:\]\][^\]]*)*\]|\"[^\"]*(?:\"\"[^\"]*)*\"|[\w$#@]+))?)",
    re.I,
)
_PART_RE = re.compile(r"\[((?:[^\]]|\]\])*)\]|\"((?:[^\"]|\"\")*)\"|([\w$#@]+)")


def strip_comments(text: str) -> str:
    """Comments out (string literals are kept whole only approximately: a heuristic)."""
    return _LINE_COMMENT_RE.sub("", _BLOCK_COMMENT_RE.sub(" ", text))


def _name_parts(ref: str) -> tuple[str, ...]:
    parts = []
    for m in _PART_RE.finditer(ref):
        if m.group(1) is not None:
            parts.append(m.group(1).replace("]]", "]"))
        elif m.group(2) is not None:
            parts.append(m.group(2).replace('""', '"'))
        else:
            parts.append(m.group(3))
    return tuple(parts)


def _same_name(found: tuple[str, ...], wanted: tuple[str, ...], default_schema: str) -> bool:
    def full(p: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(x.lower() for x in (p if len(p) == 2 else (default_schema, *p)))

    return full(found) == full(wanted)


def procedure_texts(text: str) -> list[tuple[tuple[str, ...], str]]:
    """(name parts, text up to the next CREATE PROCEDURE) of each procedure in a script."""
    clean = strip_comments(text)
    found = list(_CREATE_RE.finditer(clean))
    out = []
    for i, m in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(clean)
        out.append((_name_parts(m.group(1)), clean[m.start() : end]))
    return out


def has_zero_row_check(dialect: Dialect, body: str) -> bool:
    """Whether a procedure body tests for zero rows and raises (the dialect's own words)."""
    body = strip_comments(body)
    return bool(dialect.ZERO_ROW_TEST.search(body) and dialect.RAISE_TEST.search(body))


def text_findings(articles: Sequence[Article], dialect: Dialect, files: Iterable[Path]) -> list[Finding]:
    texts: list[tuple[tuple[str, ...], str]] = []
    for path in files:
        texts += procedure_texts(read_sql(path))
    out = []
    for a, op, proc in custom_procedures(articles):
        wanted = _name_parts(proc)
        bodies = [body for name, body in texts if _same_name(name, wanted, a.schema)]
        if not bodies:
            out.append(
                Finding(
                    WARNING, a.name, op, proc, "text", "not found in the custom SQL files (text not checked)"
                )
            )
            continue
        if not has_zero_row_check(dialect, bodies[-1]):
            test = dialect.ZERO_ROW_ADVICE
            out.append(
                Finding(
                    WARNING,
                    a.name,
                    op,
                    proc,
                    "text",
                    f"no zero-row check: add '{test}' raising 20598 (with -SubscriptionStreams > 1 "
                    "an update or delete that finds no row must fail, or the subscriber diverges silently)",
                )
            )
    return out


def read_sql(path: Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ApplierError(f"{path}: cannot read custom procedure file: {e.strerror}") from None


# -- probing on a subscriber ---------------------------------------------------------------------
def _absent_key_row(cur: Any, dialect: Dialect, a: Article, seed: int = 20598) -> dict[str, Any]:
    """A full row whose key is not in the target's table (generated, then looked up)."""
    from applier.sources.generator import random_row
    from applier.values import to_param

    rng = random.Random(seed)
    where = " AND ".join(
        f"{dialect.quote(k)} = {dialect.param_marker(c.type)}"
        for k, c in zip(a.key, a.key_columns, strict=True)
    )
    sql = f"SELECT count(*) FROM {dialect.table(a)} WHERE {where}"
    for k in (987_654_321, 1_048_583, 32_749, 251, 7):
        try:
            row = random_row(a, k, rng)
        except (ValueError, ApplierError):
            continue  # the number does not fit this key's type
        params = [to_param(c.type, row[c.name]) for c in a.key_columns]
        if cur.execute(sql, params).fetchone()[0] == 0:
            return row
    raise ApplierError(f"{a.name}: found no absent key to probe with")


def _table_exists(cur: Any, a: Article) -> bool:
    n = cur.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
        a.schema,
        a.table,
    ).fetchone()[0]
    return bool(n)


def probe(
    connection_string: str, dialect: Dialect, articles: Sequence[Article], files: Sequence[Path]
) -> list[Finding]:
    """Call each custom update/delete procedure with an absent key, in a rolled-back transaction."""
    import pyodbc

    from applier.targets.connection import connect

    scripts = [(p, read_sql(p)) for p in files]
    out = []
    for a, op, proc in custom_procedures(articles):
        conn = connect(connection_string, dialect, lock_timeout_ms=10000)
        try:
            cur = conn.cursor()
            stage = "creating the table"
            try:
                if not _table_exists(cur, a):
                    cur.execute(dialect.create_schema_sql(a.schema))
                    cur.execute(dialect.create_table_sql(a))
                for path, text in scripts:
                    stage = f"running {path}"
                    for stmt in dialect.split_script(text):
                        cur.execute(stmt)
                stage = "choosing an absent key"
                row = _absent_key_row(cur, dialect, a)
            except pyodbc.Error as e:
                c = dialect.classify(e)
                out.append(Finding(ERROR, a.name, op, proc, "probe", f"{stage} failed: {c.message}"))
                continue
            changed = [n for n in a.column_names if n not in a.key]
            params = call_params(a, op, row, row if op == "U" else None, changed)
            try:
                cur.execute(dialect.call_sql(a, op), list(params))
                while cur.nextset():
                    pass
            except pyodbc.Error as e:
                c = dialect.classify(e)
                if c.cls != ConflictClass.ROW_NOT_FOUND:
                    out.append(
                        Finding(
                            WARNING,
                            a.name,
                            op,
                            proc,
                            "probe",
                            f"a call with an absent key failed with {c.cls.value} ({c.code}), not row not found "
                            f"(20598): {' '.join(c.message.split())[:300]}",
                        )
                    )
                continue
            out.append(
                Finding(
                    WARNING,
                    a.name,
                    op,
                    proc,
                    "probe",
                    "a call with a key that does not exist succeeded: the procedure has no zero-row "
                    "check (it must raise 20598 when it finds no row)",
                )
            )
        finally:
            try:
                dialect.rollback(conn)
            finally:
                conn.close()
    return out
