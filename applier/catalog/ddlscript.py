"""A DDL script cut into statements, each parsed with sqlglot when the reader asks
(:mod:`applier.catalog.ddl` reads what they say).

The script is cut with sqlglot's tokenizer (``;``, T-SQL's ``GO``, and a ``CREATE`` / ``ALTER``
/ ``DROP`` starting a line of a T-SQL batch). psql's backslash commands and T-SQL's batch
separators are blanked in place, so offsets and lines stay the script's and every problem names
``file:line``. Before a T-SQL statement is parsed, SQL Server options sqlglot does not read
(ROWGUIDCOL, SPARSE, CLUSTERED, ``WITH (index options)``, ``ON [filegroup]``, ``TEXTIMAGE_ON``,
``WITH NOCHECK``...) are blanked; they say nothing about what replication carries.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType  # type: ignore[attr-defined]

from applier.dialects.batches import separators
from applier.errors import ConfigError

DIALECTS = ("tsql", "postgres")

# Words that end a column's type in a column definition.
_TYPE_END = {
    "NOT", "NULL", "CONSTRAINT", "DEFAULT", "IDENTITY", "PRIMARY", "UNIQUE", "REFERENCES", "CHECK",
    "COLLATE", "GENERATED", "AS", "ROWGUIDCOL", "SPARSE", "FILESTREAM", "MASKED", "ENCRYPTED",
    "COMPRESSION", "STORAGE", "FOR", "WITH",
}  # fmt: skip
# T-SQL words sqlglot does not read and replication does not need: blanked.
_TSQL_BLANK = {"ROWGUIDCOL", "SPARSE", "FILESTREAM", "CLUSTERED", "NONCLUSTERED"}
_TSQL_NAMED_BLANK = {"TEXTIMAGE_ON", "FILESTREAM_ON"}
_STARTERS = {"CREATE", "ALTER", "DROP"}
_BODIES = {"PROCEDURE", "PROC", "FUNCTION", "TRIGGER", "VIEW"}


@dataclass
class Statement:
    """One statement of the script: its tokens, where it starts (offset and line)."""

    start: int  # offset in the script
    tokens: list[Token]
    line: int

    def words(self, n: int) -> list[str]:
        """The first n words (a token may hold several: 'PRIMARY KEY')."""
        out: list[str] = []
        for t in self.tokens[:n]:
            out += t.text.upper().split() if t.token_type != TokenType.IDENTIFIER else [t.text.upper()]
        return out[:n]


class Script:
    """A DDL script's text (psql's commands and T-SQL's GO lines blanked, offsets and lines
    kept), its statements, each parsed on request, and the problems met, each at ``file:line``."""

    def __init__(self, text: str, dialect: str, source: str) -> None:
        if dialect not in DIALECTS:
            raise ConfigError(f"unknown DDL dialect {dialect!r} (one of {', '.join(DIALECTS)})")
        self.dialect = dialect
        self.source = source
        self.text = _blank_psql(text) if dialect == "postgres" else text
        # T-SQL's batch separator (a client command, not SQL): blanked, a statement ends there
        seps = separators(self.text) if dialect == "tsql" else []
        self.go = [sep.start for sep in seps]
        parts, at = [], 0
        for sep in seps:  # blanked in place: offsets and lines stay the script's
            parts += [self.text[at : sep.start], " " * (sep.end - sep.start)]
            at = sep.end
        self.text = "".join(parts) + self.text[at:]
        self.newlines = [m.start() for m in re.finditer("\n", self.text)]
        self.problems: list[str] = []
        self.glot = Dialect.get_or_raise(dialect)

    # -- positions -----------------------------------------------------------------
    def line_of(self, offset: int) -> int:
        import bisect

        return bisect.bisect_left(self.newlines, offset) + 1

    def at(self, line: int) -> str:
        return f"{self.source}:{line}"

    def problem(self, line: int, message: str) -> None:
        self.problems.append(f"{self.at(line)}: {message}")

    # -- statements ----------------------------------------------------------------
    def statements(self) -> list[Statement]:
        try:
            tokens = self.glot.tokenize(self.text)
        except TokenError as e:
            self.problems.append(f"{self.source}: cannot read the script: {_first_line(str(e))}")
            return []
        out: list[Statement] = []
        cur: list[Token] = []
        body = False

        def flush() -> None:
            nonlocal cur, body
            if cur:
                out.append(Statement(cur[0].start, cur, self.line_of(cur[0].start)))
            cur, body = [], False

        prev_line = 0
        depth = 0
        go = iter([*self.go, len(self.text) + 1])
        next_go = next(go)
        for tok in tokens:
            line = self.line_of(tok.start)
            if tok.start > next_go:
                flush()
                while tok.start > next_go:
                    next_go = next(go)
            if tok.token_type == TokenType.SEMICOLON and not body:
                flush()
            elif (
                self.dialect == "tsql"
                and cur
                and not body
                and depth == 0
                and tok.text.upper() in _STARTERS
                and line != prev_line
            ):
                flush()
                cur.append(tok)
            elif tok.token_type == TokenType.SEMICOLON:
                cur.append(tok)
            else:
                cur.append(tok)
                if len(cur) <= 3 and tok.text.upper() in _BODIES and self.dialect == "tsql":
                    body = cur[0].text.upper() in ("CREATE", "ALTER")
            if tok.token_type == TokenType.L_PAREN:
                depth += 1
            elif tok.token_type == TokenType.R_PAREN:
                depth = max(0, depth - 1)
            if not cur:
                depth = 0
            prev_line = line
        flush()
        return out

    def parse(self, st: Statement, what: str) -> exp.Expr | None:
        """The statement parsed (T-SQL options blanked first); None with a problem."""
        raw = self.text[st.start : st.tokens[-1].end + 1]
        sql = _tsql_normalized(raw, st.tokens, st.start) if self.dialect == "tsql" else raw
        quiet = logging.getLogger("sqlglot")
        level = quiet.level
        quiet.setLevel(logging.ERROR)  # its "falling back to a Command" warning: we say it better
        try:
            tree = sqlglot.parse_one(sql, read=self.dialect, error_level=sqlglot.ErrorLevel.RAISE)
        except ParseError as e:
            err = e.errors[0] if e.errors else {}
            line = st.line + int(err.get("line") or 1) - 1
            desc = err.get("description") or _first_line(str(e))
            self.problem(line, f"cannot read {what}: {desc} (near {_near(sql, err)!r})")
            return None
        finally:
            quiet.setLevel(level)
        if isinstance(tree, exp.Command):
            self.problem(st.line, f"cannot read {what}: syntax sqlglot does not know ({_short(raw)})")
            return None
        tree.meta["sql"] = sql
        return tree


def _blank_psql(text: str) -> str:
    """psql's backslash commands (\\copy, \\set...) blanked, the lines kept."""
    return re.sub(r"(?m)^[ \t]*\\.*$", lambda m: " " * len(m.group(0)), text)


def type_end(tokens: Sequence[Token], i: int) -> int:
    """Index after the type that starts at tokens[i]."""
    depth = 0
    j = i
    while j < len(tokens):
        tok = tokens[j]
        if tok.token_type == TokenType.L_PAREN:
            depth += 1
        elif tok.token_type == TokenType.R_PAREN:
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and (
            tok.token_type in (TokenType.COMMA, TokenType.SEMICOLON)
            or (tok.token_type != TokenType.IDENTIFIER and _first_word(tok) in _TYPE_END and j > i)
        ):
            break
        j += 1
    return j


def _tsql_normalized(sql: str, tokens: Sequence[Token], base: int) -> str:
    """The statement with SQL Server options sqlglot does not read blanked (same lines)."""
    chars = list(sql)
    inserts: list[tuple[int, str]] = []

    def blank(a: Token, b: Token | None = None) -> None:
        end = (b or a).end - base
        for k in range(a.start - base, end + 1):
            if chars[k] != "\n":
                chars[k] = " "

    def close(i: int) -> int:
        """Index of the paren closing tokens[i]."""
        d = 0
        for j in range(i, len(tokens)):
            if tokens[j].token_type == TokenType.L_PAREN:
                d += 1
            elif tokens[j].token_type == TokenType.R_PAREN:
                d -= 1
                if d == 0:
                    return j
        return len(tokens) - 1

    kept_prev: Token | None = None
    n = len(tokens)
    i = 0
    while i < n:
        tok = tokens[i]
        up = tok.text.upper() if tok.token_type != TokenType.IDENTIFIER else ""
        nxt = tokens[i + 1] if i + 1 < n else None
        nup = nxt.text.upper() if nxt is not None and nxt.token_type != TokenType.IDENTIFIER else ""
        if up in _TSQL_BLANK:
            blank(tok)
        elif up in _TSQL_NAMED_BLANK and nxt is not None:
            blank(tok, nxt)
            i += 1
        elif up == "NOT" and nup == "FOR" and i + 2 < n and tokens[i + 2].text.upper() == "REPLICATION":
            blank(tok, tokens[i + 2])
            i += 2
        elif up == "WITH" and nup in ("CHECK", "NOCHECK") and nxt is not None:
            blank(tok, nxt)
            i += 1
        elif up in ("WITH", "INCLUDE") and nxt is not None and nxt.token_type == TokenType.L_PAREN:
            j = close(i + 1)
            blank(tok, tokens[j])
            i = j
        elif (
            up == "ON"
            and kept_prev is not None
            and kept_prev.token_type == TokenType.R_PAREN
            and nxt is not None
            and nup not in ("DELETE", "UPDATE")
        ):
            j = i + 1
            if j + 1 < n and tokens[j + 1].token_type == TokenType.L_PAREN:
                j = close(j + 1)
            blank(tok, tokens[j])
            i = j
        elif up == "UNIQUE" and nup in ("CONSTRAINT", "CLUSTERED", "NONCLUSTERED"):
            # a column's UNIQUE before its CONSTRAINT ... DEFAULT: moved to the column's end
            blank(tok)
            d = 0
            for j in range(i + 1, n):
                tt = tokens[j].token_type
                if tt == TokenType.L_PAREN:
                    d += 1
                elif tt == TokenType.R_PAREN and d > 0:
                    d -= 1
                elif (tt == TokenType.COMMA and d == 0) or tt == TokenType.R_PAREN:
                    inserts.append((tokens[j].start - base, " UNIQUE "))
                    break
        else:
            kept_prev = tok
        i += 1
    out = "".join(chars)
    for at, text in sorted(inserts, reverse=True):
        out = out[:at] + text + out[at:]
    return out


def _first_word(tok: Token) -> str:
    words = tok.text.upper().split()
    return words[0] if words else ""


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def _short(text: str, n: int = 60) -> str:
    one = " ".join(text.split())
    return one if len(one) <= n else one[: n - 3] + "..."


def _near(sql: str, err: Mapping[str, Any]) -> str:
    hl = err.get("highlight")
    if hl:
        return str(hl)
    return _short(sql, 40)


def table_words(st: Statement) -> str:
    """The table a CREATE / ALTER TABLE names, as written (for messages before parsing)."""
    toks = st.tokens
    i = next((k for k, t in enumerate(toks) if t.text.upper() == "TABLE"), 0) + 1
    while i < len(toks) and toks[i].text.upper() in ("IF", "NOT", "EXISTS", "ONLY"):
        i += 1
    parts = []
    while i < len(toks):
        parts.append(toks[i].text)
        if i + 1 < len(toks) and toks[i + 1].token_type == TokenType.DOT:
            i += 2
            continue
        break
    return ".".join(parts)


def index_words(st: Statement) -> str:
    toks = st.tokens
    i = next((k for k, t in enumerate(toks) if t.text.upper() == "INDEX"), 0) + 1
    return toks[i].text if i < len(toks) else ""
