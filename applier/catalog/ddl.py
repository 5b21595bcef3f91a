"""Articles from a DDL script, T-SQL or PostgreSQL, read with sqlglot.

What is read: ``CREATE TABLE`` (columns, types, NOT NULL, IDENTITY / serial / GENERATED AS
IDENTITY, computed columns, inline and table constraints), ``ALTER TABLE`` (ADD CONSTRAINT
PRIMARY KEY / UNIQUE / FOREIGN KEY, ADD / DROP / ALTER / RENAME COLUMN), ``CREATE UNIQUE
INDEX``, ``CREATE TYPE ... FROM`` (T-SQL alias types), ``CREATE DOMAIN`` (PostgreSQL),
``CREATE SCHEMA`` with its elements (PostgreSQL) and ``DROP TABLE``. Everything else (views,
procedures, data, comments, psql's backslash commands, ``GO``) is passed over.

The script is cut into statements and each statement that matters parsed with sqlglot by
:mod:`applier.catalog.ddlscript` (T-SQL's options that say nothing about what replication
carries blanked first). Names keep their case in T-SQL (and compare ignoring it); PostgreSQL
folds unquoted names to lower case, as it would.

Messages name ``file:line``, the table and the column; :mod:`applier.catalog.model` says what
is left out and why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlglot import exp
from sqlglot.tokens import Token, TokenType  # type: ignore[attr-defined]

from applier.articles import SqlType
from applier.catalog.ddlscript import Script, Statement, index_words, table_words, type_end
from applier.catalog.model import Catalog, RawColumn, RawForeignKey, RawTable, build_catalog
from applier.catalog.pgtypes import ENUM_LABEL_TYPE, ddl_type, enum_note
from applier.catalog.tsqltypes import Alias, alias_key
from applier.catalog.tsqltypes import sql_type as tsql_type
from applier.errors import ConfigError

DEFAULT_SCHEMA = {"tsql": "dbo", "postgres": "public"}


class _Reader(Script):
    def __init__(self, text: str, dialect: str, source: str) -> None:
        super().__init__(text, dialect, source)
        self.fold = dialect == "tsql"  # T-SQL names compare ignoring case
        self.tables: dict[str, RawTable] = {}  # by _table_key
        self.order: list[str] = []
        self.aliases: dict[str, Alias] = {}
        self.elsewhere: list[tuple[str, str]] = []  # (table, problem): about a table not created here
        self.notes: list[str] = []

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

    def read(self) -> None:
        for st in self.statements():
            self.statement(st, None)

    def statement(self, st: Statement, schema: str | None) -> None:
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

    # -- CREATE SCHEMA (PostgreSQL: its elements follow) ----------------------------------
    def create_schema(self, st: Statement) -> None:
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
            self.statement(Statement(part[0].start, part, self.line_of(part[0].start)), schema)

    # -- CREATE TYPE / DOMAIN --------------------------------------------------------------
    def create_type(self, st: Statement, schema: str | None) -> None:
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

    def create_domain(self, st: Statement) -> None:
        toks = st.tokens
        i = 2
        while i + 2 < len(toks) and toks[i + 1].token_type == TokenType.DOT:
            i += 2
        name = self._fold_name(toks[i])
        j = i + 1
        if j < len(toks) and toks[j].text.upper() == "AS":
            j += 1
        k = type_end(toks, j)
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
        return ddl_type(text, self.aliases)

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
            k = type_end(tokens, n + 1)
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
    def create_table(self, st: Statement, schema: str | None) -> None:
        what = f"CREATE TABLE {table_words(st)}"
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

    def drop_table(self, st: Statement, schema: str | None) -> None:
        tree = self.parse(st, "DROP TABLE")
        if tree is None:
            return
        for table in tree.find_all(exp.Table):
            k = self.key(*self.table_name(table, schema))
            if k in self.tables:
                del self.tables[k]
                self.order.remove(k)

    # -- ALTER TABLE -----------------------------------------------------------------
    def alter_table(self, st: Statement, schema: str | None) -> None:
        words = set(st.words(len(st.tokens)))
        matters = bool(words & {"PRIMARY", "UNIQUE", "FOREIGN", "COLUMN", "RENAME"}) or (
            "ADD" in words and "CONSTRAINT" not in words
        )
        what = f"ALTER TABLE {table_words(st)}"
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
    def create_index(self, st: Statement, schema: str | None) -> None:
        what = f"CREATE UNIQUE INDEX {index_words(st)}"
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
