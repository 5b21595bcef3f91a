"""T-SQL scripts cut into batches at their GO lines, as sqlcmd and SSMS cut them.

GO is not SQL but the client's batch separator ("SQL Server Utilities Statements - GO",
https://learn.microsoft.com/sql/t-sql/language-elements/sql-server-utilities-statements-go):
a line holding only ``GO``, in any case, with spaces around it, an optional count (``GO 2``:
the batch before it runs twice) and an optional ``--`` comment. A line that reads GO inside a
string, a quoted identifier (``"..."``, ``[...]``) or a block comment (which nest in T-SQL) is
text of its batch, not a separator. The one reader of GO lines: the installers (through
:meth:`TsqlDialect.split_script`) and the DDL reader (:mod:`applier.catalog.ddl`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_GO_LINE = re.compile(r"[ \t]*go(?:[ \t]+([1-9][0-9]*))?[ \t]*(?:--[^\r\n]*)?\r?(?=\n|\Z)", re.IGNORECASE)
# What a separator cannot be inside: strings ('' doubles a quote), quoted identifiers ("" and ]]
# double theirs), line comments; a block comment's opening; and the end of a line.
_SKIP = re.compile(r"'(?:[^']|'')*'?|\"(?:[^\"]|\"\")*\"?|\[(?:[^\]]|\]\])*\]?|--[^\n]*|/\*|\n")
_BLOCK = re.compile(r"/\*|\*/")


@dataclass(frozen=True)
class Separator:
    """One GO line: where it starts and ends in the script (its newline not included), and
    how many times the batch before it runs."""

    start: int
    end: int
    count: int = 1


def _block_end(text: str, at: int) -> int:
    """The offset after the block comment opened just before ``at`` (nested ones included);
    the script's end if it is never closed."""
    depth = 1
    for m in _BLOCK.finditer(text, at):
        depth += 1 if m.group(0) == "/*" else -1
        if depth == 0:
            return m.end()
    return len(text)


def separators(text: str) -> list[Separator]:
    """The GO lines of a T-SQL script, in order (see the module's doc)."""
    out: list[Separator] = []
    pos, line_start = 0, True
    while pos < len(text):
        if line_start:
            go = _GO_LINE.match(text, pos)
            if go is not None:
                out.append(Separator(go.start(), go.end(), int(go.group(1) or 1)))
                pos = go.end()
        m = _SKIP.search(text, pos)
        if m is None:
            break
        token = m.group(0)
        line_start = token == "\n"
        pos = _block_end(text, m.end()) if token == "/*" else m.end()
    return out


def split_batches(text: str) -> list[str]:
    """The batches of a T-SQL script in the order a client sends them (a batch before ``GO n``
    n times), without their separators; blank batches left out."""
    out: list[str] = []
    start = 0
    for sep in [*separators(text), Separator(len(text), len(text))]:
        batch = text[start : sep.start].strip("\r\n")
        if batch.strip():
            out += [batch] * sep.count
        start = sep.end
    return out
