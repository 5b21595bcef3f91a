"""Articles from a DDL script, T-SQL or PostgreSQL, read with sqlglot.

What is read: ``CREATE TABLE`` (columns, types, NOT NULL, IDENTITY / serial / GENERATED AS
IDENTITY, computed columns, inline and table constraints), ``ALTER TABLE`` (ADD CONSTRAINT
PRIMARY KEY / UNIQUE / FOREIGN KEY, ADD / DROP / ALTER / RENAME COLUMN), ``CREATE UNIQUE
INDEX``, ``CREATE TYPE ... FROM`` (T-SQL alias types), ``CREATE DOMAIN`` (PostgreSQL),
``CREATE SCHEMA`` with its elements (PostgreSQL) and ``DROP TABLE``. Everything else (views,
procedures, data, comments, psql's backslash commands, ``GO``) is passed over.

The script is cut into statements with sqlglot's tokenizer (``;``, T-SQL's ``GO``, and a
``CREATE`` / ``ALTER`` / ``DROP`` starting a line of a T-SQL batch), and each statement that
matters is parsed with sqlglot. SQL Server options sqlglot does not read (ROWGUIDCOL, SPARSE,
CLUSTERED, ``WITH (index options)``, ``ON [filegroup]``, ``TEXTIMAGE_ON``, ``WITH NOCHECK``...)
are blanked first; they say nothing about what replication carries. Names keep their case in
T-SQL (and compare ignoring it); PostgreSQL folds unquoted names to lower case, as it would.

Messages name ``file:line``, the table and the column; :mod:`applier.catalog.model` says what
is left out and why.
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

from applier.articles import SqlType
from applier.catalog.model import Catalog, RawColumn, RawForeignKey, RawTable, build_catalog
from applier.catalog.pgtypes import ENUM_LABEL_TYPE, enum_note, is_serial
from applier.catalog.pgtypes import sql_type as pg_sql_type
from applier.catalog.tsqltypes import Alias, alias_key
from applier.catalog.tsqltypes import sql_type as tsql_type
from applier.dialects.batches import separators
from applier.errors import ConfigError

DIALECTS = ("tsql", "postgres")
DEFAULT_SCHEMA = {"tsql": "dbo", "postgres": "public"}

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
class _Stmt:
    start: int  # offset in the script
    tokens: list[Token]
    line: int

    def words(self, n: int) -> list[str]:
        """The first n words (a token may hold several: 'PRIMARY KEY')."""
        out: list[str] = []
        for t in self.tokens[:n]:
            out += t.text.upper().split() if t.token_type != TokenType.IDENTIFIER else [t.text.upper()]
        return out[:n]


class _Reader:
    def __init__(self, text: str, dialect: str, source: str) -> None:
        if dialect not in DIALECTS:
            raise ConfigError(f"unknown DDL dialect {dialect!r} (one of {', '.join(DIALECTS)})")
        self.dialect = dialect
        self.source = source
        self.fold = dialect == "tsql"  # T-SQL names compare ignoring case
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
        self.tables: dict[str, RawTable] = {}  # by _table_key
        self.order: list[str] = []
        self.aliases: dict[str, Alias] = {}
        self.problems: list[str] = []
        self.elsewhere: list[tuple[str, str]] = []  # (table, problem): about a table not created here
        self.notes: list[str] = []
        self.glot = Dialect.get_or_raise(dialect)

    # -- positions -----------------------------------------------------------------
    def line_of(self, offset: int) -> int:
        import bisect

        return bisect.bisect_left(self.newlines, offset) + 1

    def at(self, line: int) -> str:
        return f"{self.source}:{line}"

    def problem(self, line: int, message: str) -> None:
        self.problems.append(f"{self.at(line)}: {message}")

    # -- names -----------------------------------------------------------------------
    def ident(self, node: Any) -> str:
        if isinstance(node, exp.Identifier):
            name = str(node.this)
            return name if node.quoted or self.dialect == "tsql" else name.lower()
        if isinstance(node, (exp.Column, exp.Ordered)):
            return self.ident(node.this)
        if isinstance(node, str):
            return node
        raise ConfigError(f"expected a column name, got {node.sql(self.dialect) if node else node!r}")

    def names(self, nodes: Sequence[Any]) -> tuple[str, ...]:
        return tuple(self.ident(n) for n in nodes)

    def table_name(self, table: exp.Table, schema: str | None) -> tuple[str, str]:
        db = table.args.get("db")
        return (self.ident(db) if db is not None else schema or DEFAULT_SCHEMA[self.dialect]), self.ident(
            table.this
        )

    def key(self, schema: str, name: str) -> str:
        k = f"{schema}\x00{name}"
        return k.lower() if self.fold else k

    def find(self, schema: str, name: str) -> RawTable | None:
        return self.tables.get(self.key(schema, name))

    def column_of(self, t: RawTable, name: str) -> str:
        c = t.column(name, self.fold)
        return c.name if c is not None else name

    # -- statements ----------------------------------------------------------------
    def statements(self) -> list[_Stmt]:
        try:
            tokens = self.glot.tokenize(self.text)
        except TokenError as e:
            self.problems.append(f"{self.source}: cannot read the script: {_first_line(str(e))}")
            return []
        out: list[_Stmt] = []
        cur: list[Token] = []
        body = False

        def flush() -> None:
            nonlocal cur, body
            if cur:
                out.append(_Stmt(cur[0].start, cur, self.line_of(cur[0].start)))
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

    def read(self) -> None:
        for st in self.statements():
            self.statement(st, None)

    def statement(self, st: _Stmt, schema: str | None) -> None:
        w = st.words(6)
        try:
            if w[:2] == ["CREATE", "SCHEMA"]:
                self.create_schema(st)
            elif w[0] == "CREATE" and "TABLE" in w[1:4] and not {"TEMP", "TEMPORARY"} & set(w[1:3]):
                self.create_table(st, schema)
            elif w[:2] == ["CREATE", "TYPE"]:
                self.create_type(st, schema)
            elif w[:2] == ["CREATE", "DOMAIN"]:
                self.create_domain(st)
            elif w[:2] == ["ALTER", "TABLE"]:
                self.alter_table(st, schema)
            elif w[0] == "CREATE" and "INDEX" in w[1:4] and "UNIQUE" in w[1:3]:
                self.create_index(st, schema)
            elif w[:2] == ["DROP", "TABLE"]:
                self.drop_table(st, schema)
        except ConfigError as e:
            self.problem(st.line, str(e))

    def parse(self, st: _Stmt, what: str) -> exp.Expr | None:
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

    # -- CREATE SCHEMA (PostgreSQL: its elements follow) ----------------------------------
    def create_schema(self, st: _Stmt) -> None:
        toks = st.tokens
        depth = 0
        cuts = []
        for i, t in enumerate(toks):
            if t.token_type == TokenType.L_PAREN:
                depth += 1
            elif t.token_type == TokenType.R_PAREN:
                depth -= 1
            elif i > 0 and depth == 0 and t.text.upper() in ("CREATE", "GRANT"):
                cuts.append(i)
        if not cuts:
            return
        name_tok = toks[2] if len(toks) > 2 else None
        if name_tok is None or name_tok.text.upper() == "AUTHORIZATION":
            return
        quoted = name_tok.token_type == TokenType.IDENTIFIER
        schema = name_tok.text if quoted or self.dialect == "tsql" else name_tok.text.lower()
        for a, b in zip(cuts, [*cuts[1:], len(toks)], strict=True):
            part = toks[a:b]
            self.statement(_Stmt(part[0].start, part, self.line_of(part[0].start)), schema)

    # -- CREATE TYPE / DOMAIN --------------------------------------------------------------
    def create_type(self, st: _Stmt, schema: str | None) -> None:
        toks = st.tokens
        i = 2
        name_parts = [toks[i].text]
        while i + 2 < len(toks) and toks[i + 1].token_type == TokenType.DOT:
            i += 2
            name_parts.append(toks[i].text)
        name = self._fold_name(toks[i])
        rest = toks[i + 1 :]
        word = rest[0].text.upper() if rest else ""
        if self.dialect == "tsql" and word == "FROM" and len(rest) > 1:
            end = len(rest)
            nullable: bool | None = None
            for j, t in enumerate(rest[1:], 1):
                u = t.text.upper()
                if u in ("NOT", "NULL") and end == len(rest):
                    end = j
                if u == "NOT":
                    nullable = False
                elif u == "NULL" and nullable is None:
                    nullable = True
            base = self.text[rest[1].start : rest[end - 1].end + 1]
            self.aliases[alias_key([name])] = Alias(base, nullable)
        elif self.dialect == "tsql":
            how = (
                "a CLR type"
                if word == "EXTERNAL"
                else "a table type"
                if "TABLE" in st.words(8)
                else "not an alias"
            )
            self.aliases[alias_key([name])] = Alias(None, why=f"user-defined type {name} is {how}")
        else:
            w = [t.text.upper() for t in rest[:2]]
            if "ENUM" in w:
                self.aliases[self._pg_alias_key(name)] = Alias(
                    None, carried=ENUM_LABEL_TYPE, note=enum_note(name)
                )
                return
            how = "a range type" if "RANGE" in w else "a composite type"
            self.aliases[self._pg_alias_key(name)] = Alias(
                None, why=f"user-defined type {name} is {how}: applier carries no such type"
            )

    def create_domain(self, st: _Stmt) -> None:
        toks = st.tokens
        i = 2
        while i + 2 < len(toks) and toks[i + 1].token_type == TokenType.DOT:
            i += 2
        name = self._fold_name(toks[i])
        j = i + 1
        if j < len(toks) and toks[j].text.upper() == "AS":
            j += 1
        k = _type_end(toks, j)
        if k <= j:
            raise ConfigError(f"CREATE DOMAIN {name}: no base type")
        base = self.text[toks[j].start : toks[k - 1].end + 1]
        words = [t.text.upper() for t in toks[k:]]
        nullable = False if "NOT" in words else None
        self.aliases[self._pg_alias_key(name)] = Alias(base, nullable)

    def _fold_name(self, tok: Token) -> str:
        if tok.token_type == TokenType.IDENTIFIER or self.dialect == "tsql":
            return tok.text
        return tok.text.lower()

    @staticmethod
    def _pg_alias_key(name: str) -> str:
        return name

    # -- types -----------------------------------------------------------------------
    def column_type(self, text: str) -> tuple[SqlType, str, bool | None, bool]:
        """(type, note, the alias's nullability, identity: serial)."""
        if self.dialect == "tsql":
            t, note, nullable = tsql_type(text, self.aliases)
            return t, note, nullable, False
        return _pg_type(text, self.aliases)

    def columns_of(self, tree: exp.Expr, stmt_line: int, t: RawTable, defs: Sequence[exp.ColumnDef]) -> None:
        sql: str = tree.meta["sql"]
        tokens = self.glot.tokenize(sql)
        by_start = {tok.start: n for n, tok in enumerate(tokens)}
        for cd in defs:
            self.column_def(cd, sql, tokens, by_start, stmt_line, t)

    def column_def(
        self,
        cd: exp.ColumnDef,
        sql: str,
        tokens: list[Token],
        by_start: Mapping[int, int],
        stmt_line: int,
        t: RawTable,
    ) -> None:
        name = self.ident(cd.this)
        meta = cd.this.meta
        line = stmt_line + int(meta.get("line", 1)) - 1
        n = by_start.get(int(meta.get("start", -1)), -1)
        type_text = ""
        if n >= 0:
            k = _type_end(tokens, n + 1)
            if k > n + 1:
                type_text = sql[tokens[n + 1].start : tokens[k - 1].end + 1]
        elif cd.args.get("kind") is not None:
            type_text = cd.args["kind"].sql(self.dialect)
        col = RawColumn(name, type_text or "?", None, line=line)
        explicit: bool | None = None
        for cc in cd.args.get("constraints") or []:
            kind = cc.args.get("kind")
            if isinstance(kind, exp.NotNullColumnConstraint):
                explicit = bool(kind.args.get("allow_null"))
            elif isinstance(kind, exp.PrimaryKeyColumnConstraint):
                t.primary = (name,)
                explicit = False
            elif isinstance(kind, exp.UniqueColumnConstraint):
                t.uniques.append(((name,), f"unique constraint on {name}"))
            elif isinstance(kind, exp.Reference):
                t.foreign.append(self.reference((name,), kind, t.schema))
            elif isinstance(
                kind, (exp.GeneratedAsIdentityColumnConstraint, exp.AutoIncrementColumnConstraint)
            ):
                if kind.args.get("expression") is not None:
                    col.computed = True
                else:
                    col.identity = True
            elif isinstance(kind, exp.ComputedColumnConstraint):
                col.computed = True
        if col.computed:
            col.type_text = type_text or "computed"
        else:
            try:
                col.type, col.note, alias_null, serial = self.column_type(type_text)
                col.identity = col.identity or serial
                if explicit is None and alias_null is not None:
                    explicit = alias_null
                if serial:
                    explicit = False
            except ConfigError as e:
                col.why = str(e)
        col.nullable = True if explicit is None else explicit
        old = t.column(name, self.fold)
        if old is not None:
            self.problem(line, f"{t.qualified}: column {name} twice; the second one is kept")
            t.columns.remove(old)
        t.columns.append(col)

    def reference(self, cols: tuple[str, ...], ref: exp.Reference, schema: str) -> RawForeignKey:
        target = ref.this
        pcols: tuple[str, ...] | None = None
        if isinstance(target, exp.Schema):
            pcols = self.names(target.expressions) or None
            target = target.this
        if not isinstance(target, exp.Table):
            raise ConfigError(f"unreadable REFERENCES {ref.sql(self.dialect)}")
        ps, pt = self.table_name(target, schema)
        return RawForeignKey(cols, ps, pt, pcols)

    def constraint(self, t: RawTable, node: exp.Expr, line: int, name: str = "") -> None:
        """A table constraint (CREATE TABLE's list, ALTER TABLE ADD)."""
        if isinstance(node, exp.Constraint):
            label = self.ident(node.this) if node.this is not None else ""
            for e in node.expressions:
                self.constraint(t, e, line, label)
            return
        if isinstance(node, exp.PrimaryKey):
            if t.primary:
                self.problem(line, f"{t.qualified}: a second primary key; the first one is kept")
                return
            t.primary = tuple(self.column_of(t, c) for c in self.names(node.expressions))
        elif isinstance(node, exp.UniqueColumnConstraint):
            listed = node.this.expressions if isinstance(node.this, exp.Schema) else []
            if listed:
                names = tuple(self.column_of(t, c) for c in self.names(listed))
                t.uniques.append((names, f"unique constraint {name}".rstrip()))
        elif isinstance(node, exp.ForeignKey):
            ref = node.args.get("reference")
            if isinstance(ref, exp.Reference):
                cols = tuple(self.column_of(t, c) for c in self.names(node.expressions))
                fk = self.reference(cols, ref, t.schema)
                fk.name = name
                t.foreign.append(fk)

    # -- CREATE TABLE ----------------------------------------------------------------
    def create_table(self, st: _Stmt, schema: str | None) -> None:
        what = f"CREATE TABLE {_table_words(st)}"
        tree = self.parse(st, what)
        if tree is None:
            return
        target = tree.this
        if not isinstance(target, exp.Schema) or not isinstance(target.this, exp.Table):
            self.problem(
                st.line, f"{what}: no column list (CREATE TABLE ... AS / LIKE / OF): table passed over"
            )
            return
        s, name = self.table_name(target.this, schema)
        if name.startswith("#"):
            return
        t = RawTable(s, name, line=st.line)
        defs = [e for e in target.expressions if isinstance(e, exp.ColumnDef)]
        self.columns_of(tree, st.line, t, defs)
        for e in target.expressions:
            if not isinstance(e, exp.ColumnDef):
                self.constraint(t, e, st.line)
        k = self.key(s, name)
        if k in self.tables:
            self.problem(st.line, f"{t.qualified} is created twice; the second definition is kept")
            self.order.remove(k)
        self.tables[k] = t
        self.order.append(k)

    def drop_table(self, st: _Stmt, schema: str | None) -> None:
        tree = self.parse(st, "DROP TABLE")
        if tree is None:
            return
        for table in tree.find_all(exp.Table):
            k = self.key(*self.table_name(table, schema))
            if k in self.tables:
                del self.tables[k]
                self.order.remove(k)

    # -- ALTER TABLE -----------------------------------------------------------------
    def alter_table(self, st: _Stmt, schema: str | None) -> None:
        words = set(st.words(len(st.tokens)))
        matters = bool(words & {"PRIMARY", "UNIQUE", "FOREIGN", "COLUMN", "RENAME"}) or (
            "ADD" in words and "CONSTRAINT" not in words
        )
        what = f"ALTER TABLE {_table_words(st)}"
        if not matters:
            return  # defaults, checks, triggers, owners: nothing replication carries
        tree = self.parse(st, what)
        if tree is None or not isinstance(tree, exp.Alter) or not isinstance(tree.this, exp.Table):
            return
        s, name = self.table_name(tree.this, schema)
        t = self.find(s, name)
        if t is None:
            message = f"{self.at(st.line)}: {what}: table {s}.{name} is not created in the script"
            self.elsewhere.append((f"{s}.{name}", message + ": statement passed over"))
            return
        sql: str = tree.meta["sql"]
        tokens = self.glot.tokenize(sql)
        by_start = {tok.start: n for n, tok in enumerate(tokens)}
        for action in tree.args.get("actions") or []:
            if isinstance(action, exp.AddConstraint):
                for e in action.expressions:
                    self.constraint(t, e, st.line)
            elif isinstance(action, exp.ColumnDef):
                self.column_def(action, sql, tokens, by_start, st.line, t)
            elif isinstance(action, exp.Drop) and str(action.args.get("kind", "")).upper() == "COLUMN":
                for c in action.args.get("tables") or []:
                    self.drop_column(t, self.column_of(t, self.ident(c)))
            elif isinstance(action, exp.AlterColumn):
                c = t.column(self.ident(action.this), self.fold)
                if c is not None and action.args.get("allow_null") is not None:
                    c.nullable = bool(action.args["allow_null"])
                if c is not None and action.args.get("dtype") is not None:
                    self.retype(c, action.args["dtype"].sql(self.dialect))
            elif isinstance(action, exp.RenameColumn):
                c = t.column(self.ident(action.this), self.fold)
                if c is not None:
                    self.rename_column(t, c.name, self.ident(action.args["to"]))

    def retype(self, c: RawColumn, text: str) -> None:
        c.type_text, c.type, c.why, c.note = text, None, "", ""
        try:
            c.type, c.note, _, _ = self.column_type(text)
        except ConfigError as e:
            c.why = str(e)

    def drop_column(self, t: RawTable, name: str) -> None:
        t.columns = [c for c in t.columns if c.name != name]
        if t.primary and name in t.primary:
            t.primary = None
        t.uniques = [(cols, w) for cols, w in t.uniques if name not in cols]
        t.foreign = [fk for fk in t.foreign if name not in fk.columns]

    def rename_column(self, t: RawTable, old: str, new: str) -> None:
        def ren(cols: tuple[str, ...]) -> tuple[str, ...]:
            return tuple(new if c == old else c for c in cols)

        for c in t.columns:
            if c.name == old:
                c.name = new
        t.primary = ren(t.primary) if t.primary else t.primary
        t.uniques = [(ren(cols), w) for cols, w in t.uniques]
        for fk in t.foreign:
            fk.columns = ren(fk.columns)

    # -- CREATE UNIQUE INDEX -----------------------------------------------------------
    def create_index(self, st: _Stmt, schema: str | None) -> None:
        what = f"CREATE UNIQUE INDEX {_index_words(st)}"
        tree = self.parse(st, what)
        if tree is None:
            return
        index = tree.this
        if not isinstance(index, exp.Index) or not isinstance(index.args.get("table"), exp.Table):
            return
        s, name = self.table_name(index.args["table"], schema)
        t = self.find(s, name)
        if t is None:
            return  # an index on a view or on a table of another script
        label = f"unique index {self.ident(index.this)}" if index.this is not None else "unique index"
        params = index.args.get("params")
        cols = params.args.get("columns") if params is not None else None
        if params is not None and params.args.get("where") is not None:
            self.notes.append(
                f"{self.at(st.line)}: {t.qualified}: filtered {label} not carried (it is not a key)"
            )
            return
        try:
            names = tuple(self.column_of(t, c) for c in self.names(cols or []))
        except ConfigError:
            self.notes.append(f"{self.at(st.line)}: {t.qualified}: {label} on expressions not carried")
            return
        if names:
            t.uniques.append((names, label))

    # -- the catalog -------------------------------------------------------------------
    def catalog(self, wanted: Sequence[str] | None) -> Catalog:
        tables = [self.tables[k] for k in self.order]
        asked = None if wanted is None else {w.lower() for w in wanted}
        problems = self.problems + [m for t, m in self.elsewhere if asked is None or t.lower() in asked]
        return build_catalog(tables, self.source, wanted, problems, self.notes, fold=self.fold)


def read_ddl(text: str, dialect: str, source: str = "<ddl>", tables: Sequence[str] | None = None) -> Catalog:
    """The articles of a DDL script (``dialect``: tsql or postgres); ``tables``: only those
    (``schema.table``). Never raises for what the script says: problems are in the catalog."""
    r = _Reader(text, dialect, source)
    r.read()
    return r.catalog(tables)


def read_ddl_file(path: str, dialect: str, tables: Sequence[str] | None = None) -> Catalog:
    from pathlib import Path

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such DDL file") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    return read_ddl(text, dialect, str(path), tables)


# -- helpers -----------------------------------------------------------------------------
def _blank_psql(text: str) -> str:
    """psql's backslash commands (\\copy, \\set...) blanked, the lines kept."""
    return re.sub(r"(?m)^[ \t]*\\.*$", lambda m: " " * len(m.group(0)), text)


def _type_end(tokens: Sequence[Token], i: int) -> int:
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


_PG_NAME = re.compile(
    r'^\s*((?:"(?:[^"]|"")*"|[A-Za-z_][\w$]*)(?:\s*\.\s*(?:"(?:[^"]|"")*"|[A-Za-z_][\w$]*))*)\s*$'
)
_PG_PART = re.compile(r'"(?:[^"]|"")*"|[A-Za-z_][\w$]*')


def _pg_type_name(text: str) -> str | None:
    """A user type's name as PostgreSQL resolves it (unquoted folded), or None if not a name."""
    m = _PG_NAME.match(text)
    if not m:
        return None
    parts = _PG_PART.findall(m.group(1))
    last = parts[-1]
    return str(last[1:-1].replace('""', '"') if last.startswith('"') else last.lower())


def _pg_type(text: str, aliases: Mapping[str, Alias]) -> tuple[SqlType, str, bool | None, bool]:
    name = _pg_type_name(text)
    if name is not None and name in aliases:
        alias = aliases[name]
        if alias.carried is not None:
            return alias.carried, alias.note, alias.nullable, False
        if alias.base is None:
            raise ConfigError(alias.why)
        try:
            t, note, _, serial = _pg_type(alias.base, {k: v for k, v in aliases.items() if k != name})
        except ConfigError as e:
            raise ConfigError(f"domain {name} over {alias.base}: {e}") from None
        return t, note, alias.nullable, serial
    serial = is_serial(text)
    return pg_sql_type(text), "", False if serial else None, serial


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


def _table_words(st: _Stmt) -> str:
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


def _index_words(st: _Stmt) -> str:
    toks = st.tokens
    i = next((k for k, t in enumerate(toks) if t.text.upper() == "INDEX"), 0) + 1
    return toks[i].text if i < len(toks) else ""
