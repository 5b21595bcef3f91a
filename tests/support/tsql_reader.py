"""A small reader of the T-SQL procedures applier generates, for tests that check them.

sqlglot 30 reads every T-SQL statement applier writes, but not a whole procedure (it falls back
to an opaque Command for CREATE PROCEDURE ... AS BEGIN ... END, which would prove nothing) and
it has no THROW. So a procedure is split into statements the way the templates lay them out
(clauses continue on lines starting with , [ @ ) where and values), begin/end and if/else
nesting is checked here, and sqlglot parses every statement, every condition, THROW's arguments
and the header's parameter list.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

_CONT_WORDS = {"where", "and", "values"}
_LEAVES = (exp.Update, exp.Delete, exp.Insert, exp.Execute, exp.Set, exp.Declare, exp.Select, exp.Drop)


def statements(batch: str) -> list[str]:
    """A batch's statements as the templates lay them out (comments and blank lines left out)."""
    out: list[str] = []
    for raw in batch.splitlines():
        line = raw.strip()
        if not line or line.startswith("--"):
            continue
        word = re.split(r"[\s(]", line, maxsplit=1)[0].lower()
        if out and (line.startswith((",", "[", "@", ")", "(")) or word in _CONT_WORDS):
            out[-1] += "\n" + line
        else:
            out.append(line)
    return out


def parse_condition(cond: str) -> None:
    """Raises unless sqlglot reads ``cond`` as a T-SQL condition."""
    sqlglot.parse_one(f"select case when {cond} then 1 end", read="tsql")


def parse_leaf(stmt: str) -> exp.Expression:
    """A statement that is not control flow, parsed (THROW as its three arguments)."""
    m = re.match(r"(?is)^throw\s+(.*?);?$", stmt)
    if m:  # sqlglot has no THROW: its three arguments must read as a select list
        parsed = sqlglot.parse_one(f"select {m.group(1)}", read="tsql")
        assert len(parsed.expressions) == 3, stmt
        return parsed
    parsed = sqlglot.parse_one(stmt.rstrip(";"), read="tsql")
    assert isinstance(parsed, _LEAVES), f"{type(parsed).__name__}: {stmt}"
    return parsed


def check_procedure(batch: str, nparams: int) -> list[str]:
    """Asserts that ``batch`` is a CREATE PROCEDURE of ``nparams`` parameters whose body nests
    begin/end and if/else soundly and whose every statement and condition parses; its statements."""
    stmts = statements(batch)
    create = sqlglot.parse_one(f"{stmts[0]}\nas select 1", read="tsql")
    assert isinstance(create, exp.Create) and create.kind == "PROCEDURE", stmts[0]
    assert len(create.this.expressions) == nparams, stmts[0]
    assert [s.lower() for s in stmts[1:3]] == ["as", "begin"], stmts[:3]
    depth, needs_body = 0, False
    for stmt in stmts[2:]:
        low = stmt.lower()
        if low == "begin":
            depth, needs_body = depth + 1, False
        elif low == "end":
            assert not needs_body and depth > 0, f"bad 'end' in:\n{batch}"
            depth -= 1
        elif low == "else":
            needs_body = True
        elif m := re.match(r"(?is)^(?:else\s+)?if\s+(.*)$", stmt):
            parse_condition(m.group(1))
            needs_body = True
        else:
            parse_leaf(stmt)
            needs_body = False
    assert depth == 0, f"unbalanced begin/end in:\n{batch}"
    return stmts
