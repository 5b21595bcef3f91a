"""Dialect base: everything that differs between subscribers goes through one of these.

A dialect owns: identifier quoting (one function), the type mapping, procedure text
(rendered from templates under ``sql/<dialect>/``, falling back to ``sql/common/`` where both
dialects write the same), call text, schema changes, constraints, connection set-up, the
progress table, and error classification (by code, never by English text). Callers ask a
dialect for what differs; nothing outside ``dialects/`` looks at a dialect's name.
Anything a dialect cannot express goes through :meth:`Dialect.unsupported`.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import math
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, ClassVar

import jinja2

from applier.articles import Article, Column, SqlType, Syntax
from applier.dialects.schema import SchemaStatements
from applier.errors import UnsupportedError
from applier.values import param_converter

OPS = {"I": "insert", "U": "update", "D": "delete"}
_PREFIX = {"I": "sp_MSins_", "U": "sp_MSupd_", "D": "sp_MSdel_"}
_SET_SYNTAXES = {
    "I": (Syntax.CALL,),
    "U": (Syntax.CALL, Syntax.SCALL, Syntax.MCALL),
    "D": (Syntax.CALL, Syntax.XCALL),
}


class ConflictClass(str, enum.Enum):
    """Classes of apply errors, as the report counts them."""

    ROW_NOT_FOUND = "row_not_found"  # 20598
    DUPLICATE_KEY = "duplicate_key"  # the table's primary key: 2627 / 23505
    UNIQUE_INDEX = "unique_index"  # any other unique index or constraint: 2601 (2627) / 23505
    LOCK_TIMEOUT = "lock_timeout"  # 1222 / 55P03
    DEADLOCK = "deadlock"  # 1205 / 40P01
    FOREIGN_KEY = "foreign_key"  # 547 / 23503
    OTHER = "other"


@dataclass(frozen=True)
class Classified:
    """An apply error as the agent sees it."""

    cls: ConflictClass
    code: str  # SQLSTATE or native error number, as text
    transient: bool  # retry the same work on the same connection (tenacity)
    connection_lost: bool = False
    message: str = ""
    # The constraint or index that fired, as the server names it (duplicates, foreign keys).
    constraint: str | None = None

    def keyed(self, primary_keys: Collection[str]) -> Classified:
        """A duplicate told apart by the constraint that fired: one of ``primary_keys`` (the
        names :meth:`Dialect.primary_key_name` gave the tables' primary keys) is duplicate_key,
        any other unique index or constraint unique_index."""
        dup = self.cls is ConflictClass.DUPLICATE_KEY
        # without case: Babelfish names a constraint in lower case ([PK_t] is pk_t there)
        if dup and self.constraint and self.constraint.casefold() not in {p.casefold() for p in primary_keys}:
            return dataclasses.replace(self, cls=ConflictClass.UNIQUE_INDEX)
        return self


@dataclass(frozen=True)
class ProcParam:
    """One procedure parameter: name without sigil, and its type (None = the bitmap)."""

    name: str
    type: SqlType | None
    default_null: bool = False


def key_param(op: str, syntax: Syntax, index1: int, key_index1: int) -> str:
    """Name of the parameter that carries a key column's original value.

    XCALL passes whole before images (old-c1..old-cn for updates, c1..cn for deletes);
    every other syntax passes the original key as pkc1..pkck (seed 003).
    """
    if syntax == Syntax.XCALL and op == "U":
        return f"c{index1}_old"
    if syntax == Syntax.XCALL and op == "D":
        return f"c{index1}"
    return f"pkc{key_index1}"


def bracketed(name: str) -> str:
    """A name as QUOTENAME writes it: [name] with ] doubled. SQL Server's 20598 message names
    the table and key columns so; both dialects' messages use it for the same text."""
    return "[" + name.replace("]", "]]") + "]"


def bitmap_width(ncols: int) -> int:
    """SCALL/MCALL bitmap bytes: binary(ceil(n/8)) as SQL Server generates it."""
    return max(1, math.ceil(ncols / 8))


def bit_of(index1: int) -> tuple[int, int]:
    """Column i (1-based) -> (byte number 1-based, bit value 2^((i-1)%8))."""
    return (index1 - 1) // 8 + 1, 1 << ((index1 - 1) % 8)


def _loader(folder: str) -> jinja2.BaseLoader:
    root = resources.files("applier.sql") / folder

    def load(name: str) -> str | None:
        f = root / name
        return f.read_text(encoding="utf-8") if f.is_file() else None

    return jinja2.FunctionLoader(load)


@cache
def _env(dialect: str) -> jinja2.Environment:
    # The dialect's own template first, else the one both dialects share (sql/common/).
    loader = jinja2.ChoiceLoader([_loader(dialect), _loader("common")])
    return jinja2.Environment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # SQL, not HTML: identifiers are quoted by the dialect's quote()
    )


@dataclass(frozen=True)
class TypedNull:
    """A NULL bound with its ODBC type (``sql_type``, column size, decimal digits), where the
    driver cannot describe the parameter and a NULL bound as varchar converts to no column
    type implicitly (:meth:`Dialect.bind`)."""

    sql_type: int
    size: int = 0
    digits: int = 0


class Dialect(SchemaStatements):
    """Base of the subscriber dialects. Subclasses fill the capability flags and mapping."""

    name: ClassVar[str] = "base"  # the registry's key (applier.dialects.DIALECTS)
    language: ClassVar[str] = "base"  # the SQL it speaks: engines of one language share it
    # A query answering one row whose first value is '1' on the engine this dialect is for, when
    # it is one engine among others of its language (applier.dialects.for_server).
    ENGINE_PROBE: ClassVar[str | None] = None
    template_dir: ClassVar[str] = ""
    MAX_PARAMS_PER_BATCH: ClassVar[int] = 30000
    TYPE_MAP: ClassVar[dict[str, str]] = {}
    ODBC_OPTIONS: ClassVar[str] = ""
    # The error codes classify() gives a class to (SQLSTATEs or native numbers, as text): what an
    # error policy's skip list may name for this dialect.
    KNOWN_CODES: ClassVar[frozenset[str]] = frozenset()
    # Lower-case pieces of ODBC driver names that reach this dialect's databases.
    ODBC_DRIVER_HINTS: ClassVar[tuple[str, ...]] = ()
    # `applier lint`: what a procedure body tests after its statement (a zero-row test), what
    # raises, and the advice for a procedure missing them.
    ZERO_ROW_TEST: ClassVar[re.Pattern[str]] = re.compile(r"(?!)")
    RAISE_TEST: ClassVar[re.Pattern[str]] = re.compile(r"(?!)")
    ZERO_ROW_ADVICE: ClassVar[str] = ""
    # Whether a transaction goes on after an error once rolled back to a savepoint taken before
    # it (PostgreSQL). Where it does not (SQL Server under XACT_ABORT ON rolls the whole
    # transaction back), the failing command of a chunk is found by applying again.
    SAVEPOINT_SURVIVES_ERROR: ClassVar[bool] = False
    # Whether an error of a later statement of a batch surfaces only when its result is reached
    # (SQLMoreResults: SQL Server). Where it does not, the results are not walked at all.
    ERRORS_IN_LATER_RESULTS: ClassVar[bool] = True
    # The name of a table's primary key constraint ({table}: the table's name) and the longest
    # identifier the server keeps, in bytes of UTF-8.
    PRIMARY_KEY_NAME: ClassVar[str] = "PK_{table}"
    MAX_IDENTIFIER_BYTES: ClassVar[int] = 128
    # The text types whose declared length n counts UTF-16 code units, not characters (a
    # character beyond U+FFFF counts 2): values are checked against n that way before a run
    # (applier.sources.lengths). Empty: n counts characters, as change files are checked anyway.
    UTF16_LENGTHS: ClassVar[frozenset[str]] = frozenset()

    # -- identifiers -----------------------------------------------------------------
    def quote(self, ident: str) -> str:
        raise NotImplementedError

    def qualified(self, schema: str | None, name: str) -> str:
        return f"{self.quote(schema)}.{self.quote(name)}" if schema else self.quote(name)

    def table(self, article: Article) -> str:
        return self.qualified(article.schema, article.table)

    def literal(self, text: str) -> str:
        """A string literal holding text (templates use it for table and key texts)."""
        raise NotImplementedError

    # -- scripts a DBA runs by hand (applier.repro.sqlscript) -------------------------
    BEGIN_SQL: ClassVar[str] = "BEGIN"  # opens a transaction

    def bool_literal(self, value: bool) -> str:
        raise NotImplementedError

    def bytes_literal(self, value: bytes) -> str:
        raise NotImplementedError

    # -- errors ----------------------------------------------------------------------
    def unsupported(self, what: str) -> UnsupportedError:
        return UnsupportedError(f"{self.name}: {what}")

    def classify(self, exc: BaseException) -> Classified:
        raise NotImplementedError

    def ambiguous(self, c: Classified) -> bool:
        """Whether ``c`` is an error the driver could not name, which a session the server
        ended can also look like: the sender then asks the connection whether it still answers
        (``Sender.classify``)."""
        return False

    # -- types -----------------------------------------------------------------------
    def null_param(self, t: SqlType | None) -> Any:
        """What a NULL of a column of type ``t`` binds as: None (the driver types it)."""
        return None

    # Some NULLs must be bound with their type (:class:`TypedNull` from ``null_param``): the
    # statements' parameters are then scanned for them before each round trip (:meth:`bind`).
    TYPED_NULLS: ClassVar[bool] = False

    def bind(self, params: list[Any]) -> tuple[list[Any], list[Any] | None]:
        """``params`` as pyodbc binds them, and the input sizes to declare first (pyodbc's
        ``Cursor.setinputsizes``: a NULL's ODBC type, None for a parameter the driver types);
        None: nothing to declare."""
        if not self.TYPED_NULLS or not any(isinstance(p, TypedNull) for p in params):
            return params, None
        sizes = [(p.sql_type, p.size, p.digits) if isinstance(p, TypedNull) else None for p in params]
        return [None if isinstance(p, TypedNull) else p for p in params], sizes

    def param_converter(self, t: SqlType) -> Callable[[Any], Any] | None:
        """How a canonical value of type ``t`` becomes the Python value bound for this engine
        (None: as it is): :func:`applier.values.param_converter`, unless a dialect says
        otherwise."""
        return param_converter(t)

    def to_param(self, t: SqlType, value: Any) -> Any:
        """A canonical value of type ``t`` as bound for this engine (a NULL: ``null_param``)."""
        if value is None:
            return self.null_param(t)
        f = self.param_converter(t)
        return value if f is None else f(value)

    def type_sql(self, t: SqlType) -> str:
        try:
            pattern = self.TYPE_MAP[t.base]
        except KeyError:
            raise self.unsupported(f"column type {t} cannot be mapped") from None
        length = "max" if t.length == -1 else t.length
        return pattern.format(length=length, precision=t.precision, scale=t.scale)

    # -- names -----------------------------------------------------------------------
    def proc_name(self, article: Article, op: str) -> tuple[str | None, str]:
        """(schema, name) of the procedure that applies op; custom names as written."""
        d = article.delivery(op)
        if d.procedure:
            if "." in d.procedure:
                s, n = d.procedure.split(".", 1)
                return s, n
            return article.proc_schema, d.procedure
        return article.proc_schema, self.safe_proc_name(f"{_PREFIX[op]}{article.schema}{article.table}")

    # Characters the engine cannot hold in a procedure's name, however quoted (Babelfish: ]).
    PROC_NAME_UNSAFE: ClassVar[str] = ""

    def safe_proc_name(self, name: str) -> str:
        """A generated procedure's name as the engine can hold it: unchanged where it can (SQL
        Server, PostgreSQL); else each unsafe character as _, and a hash of the full name kept
        so that two names never meet."""
        if not any(ch in self.PROC_NAME_UNSAFE for ch in name):
            return name
        digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:8]
        return "".join("_" if ch in self.PROC_NAME_UNSAFE else ch for ch in name) + "_" + digest

    def proc_ref(self, article: Article, op: str) -> str:
        s, n = self.proc_name(article, op)
        return self.qualified(s, n)

    # -- procedure parameters (seed 003 orders; the same for every dialect) ----------
    @staticmethod
    def proc_params(article: Article, op: str) -> list[ProcParam]:
        cols = article.replicated
        keys = article.key_columns
        syntax = article.delivery(op).syntax
        if op == "I":
            return [ProcParam(f"c{i}", c.type) for i, c in enumerate(cols, 1)]
        if op == "D":
            if syntax == Syntax.XCALL:
                return [ProcParam(f"c{i}", c.type) for i, c in enumerate(cols, 1)]
            return [ProcParam(f"pkc{i}", c.type) for i, c in enumerate(keys, 1)]
        # update
        if syntax == Syntax.XCALL:
            old = [ProcParam(f"c{i}_old", c.type) for i, c in enumerate(cols, 1)]
            return old + [ProcParam(f"c{i}", c.type) for i, c in enumerate(cols, 1)]
        # SCALL passes only the changed values: every value and key parameter defaults to NULL
        # (SQL Server 2016+ writes "@pkc1 int = NULL" too; the bitmap has no default).
        dflt = syntax == Syntax.SCALL
        params = [ProcParam(f"c{i}", c.type, default_null=dflt) for i, c in enumerate(cols, 1)]
        params += [ProcParam(f"pkc{i}", c.type, default_null=dflt) for i, c in enumerate(keys, 1)]
        if syntax in (Syntax.SCALL, Syntax.MCALL):
            params.append(ProcParam("bitmap", None))
        return params

    # -- rendering -------------------------------------------------------------------
    def render(self, template: str, **ctx: Any) -> str:
        return _env(self.template_dir).get_template(template).render(d=self, **ctx)

    def template_context(self, article: Article, op: str) -> dict[str, Any]:
        """What every procedure template gets: columns with their parameter and bit."""
        cols = []
        for i, c in enumerate(article.replicated, 1):
            byte, bit = bit_of(i)
            cols.append(
                {
                    "name": c.name,
                    "q": self.quote(c.name),
                    "i": i,
                    "byte": byte,
                    "bit": bit,
                    "type": self.type_sql(c.type),
                    "is_key": c.name in article.key,
                    "identity": c.identity,
                    "lob": c.type.is_lob,
                    "col": c,
                }
            )
        syntax = article.delivery(op).syntax
        keys = []
        for j, k in enumerate(article.key_columns, 1):
            i = article.column_names.index(k.name) + 1
            keys.append(
                {
                    "name": k.name,
                    "q": self.quote(k.name),
                    "text": bracketed(k.name),  # as the 20598 message names it
                    "pk": j,
                    "i": i,
                    "type": self.type_sql(k.type),
                    "col": k,
                    # the parameter holding the key's original value (where-clause, key text)
                    "param": key_param(op, syntax, i, j),
                    "identity": k.identity,
                }
            )
        branch_keys = [k for k in keys if not k["identity"]]
        return {
            "article": article,
            "table": self.table(article),
            # the table as SQL Server's 20598 message names it (QUOTENAME's brackets, in
            # every dialect, so both name a table the same way)
            "table_text": f"{bracketed(article.schema)}.{bracketed(article.table)}",
            "proc": self.proc_ref(article, op),
            "cols": cols,
            "keys": keys,
            "nonkey": [c for c in cols if not c["is_key"] and not c["identity"]],
            "settable": [c for c in cols if not c["identity"]],
            # DESIGN "Procedure generation facts": a key that is not an identity column gets
            # the key-changed branch; an identity column is never in SET, so only the other
            # key columns can change (a composite key of an order id and an identity line id).
            "key_branch": bool(branch_keys),
            "branch_keys": branch_keys,
            "params": self.proc_params(article, op),
            "width": bitmap_width(len(cols)),
            "syntax": syntax.value,
        }

    def procedure_sql(self, article: Article, op: str) -> str | None:
        """Text creating the default procedure of op, or None when op is not a procedure."""
        d = article.delivery(op)
        if d.syntax in (Syntax.SQL, Syntax.NONE) or d.procedure:
            return None
        template = f"{OPS[op]}_{d.syntax.value.lower()}.sql.j2"
        return self.render(template, **self.template_context(article, op))

    # -- set-based apply (run.set_apply) ---------------------------------------------
    SET_APPLY: ClassVar[bool] = False  # the dialect has set_apply.sql.j2

    def set_eligible(self, article: Article, op: str) -> bool:
        """Whether op of article may be applied set-based: generated procedures whose effect
        per row is known (insert CALL; update CALL/SCALL/MCALL; delete CALL/XCALL, both by key).
        A custom procedure is the user's logic and is always called row by row."""
        d = article.delivery(op)
        return self.SET_APPLY and not d.procedure and d.syntax in _SET_SYNTAXES[op]

    def set_proc_name(self, article: Article, op: str) -> tuple[str, str]:
        """(schema, name) of the set-based procedure: in schema ``applier``, named after the
        article, cut to fit identifier limits with a hash of the full name kept."""
        base = f"{OPS[op]}_set_{article.schema}_{article.table}"
        if len(base.encode("utf-8")) > 60:
            digest = hashlib.sha1(base.encode("utf-8")).hexdigest()[:10]
            cut = base.encode("utf-8")[:48].decode("utf-8", "ignore")
            base = f"{cut}_{digest}"
        return "applier", self.safe_proc_name(base)

    def set_mask_name(self, article: Article) -> str:
        """JSON member carrying an update's changed-column mask: a name no column has."""
        name = "_m"
        while name in article.column_names:
            name = "_" + name
        return name

    def set_procedure_sql(self, article: Article, op: str) -> str | None:
        """Text creating the set-based procedure of op, or None when op is not eligible."""
        if not self.set_eligible(article, op):
            return None
        ctx = self.template_context(article, op)
        ctx.update(
            op=op,
            command=OPS[op].upper(),
            set_proc=self.qualified(*self.set_proc_name(article, op)),
            mask=self.set_mask_name(article),
        )
        return self.render("set_apply.sql.j2", **ctx)

    def bulk_insert_sql(self, article: Article) -> str | None:
        """One statement inserting many rows bound as one JSON text (the snapshot load), or
        None when the dialect has no such statement."""
        if not self.SET_APPLY:
            return None
        return self.render("bulk_insert.sql.j2", **self.template_context(article, "I")).strip()

    def set_call_sql(self, article: Article, op: str) -> str:
        """The call of the set-based procedure; one parameter: the rows as JSON text."""
        raise NotImplementedError

    def statement_sql(self, article: Article, op: str, set_cols: Sequence[str] = ()) -> str:
        """SQL statement delivery (seed 002: "one row Transact-SQL statement"): one self-contained
        statement list for op, with the generated procedures' zero-row check for updates and
        deletes. Markers bind, in order: inserts c1..cn; updates the values of ``set_cols``
        (article order) then pkc1..pkck; deletes pkc1..pkck
        (:func:`applier.plan.calls.statement_params`).
        """
        ctx = self.template_context(article, op)
        by_name = {c["name"]: c for c in ctx["cols"]}
        ctx["set_cols"] = [by_name[n] for n in set_cols]
        ctx.update(self.statement_context(ctx))
        return self.render(f"{OPS[op]}_sql.sql.j2", **ctx).strip()

    def statement_context(self, ctx: dict[str, Any]) -> dict[str, Any]:
        """Dialect-specific additions to a statement template's context."""
        return {}

    def procedure_exists_sql(self) -> str:
        """Parameters: schema, name. One row, one column: how many procedures are so named."""
        raise NotImplementedError

    def support_sql(self) -> list[str]:
        """Objects the generated statements rely on, installed with the progress table."""
        return []

    def create_table_sql(self, article: Article) -> str:
        return self.render(
            "create_table.sql.j2",
            **self.template_context(article, "I"),
            pk=self.quote(self.primary_key_name(article)),
        )

    def primary_key_name(self, article: Article) -> str:
        """The name the subscriber's table gives its primary key (create_table.sql.j2): a
        duplicate key error naming it is a primary-key duplicate, naming anything else a
        unique index's. A name too long for the server is cut, a hash of the full name kept."""
        name = self.PRIMARY_KEY_NAME.format(table=article.table)
        if len(name.encode("utf-8")) <= self.MAX_IDENTIFIER_BYTES:
            return name
        digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:10]
        cut = name.encode("utf-8")[: self.MAX_IDENTIFIER_BYTES - 11].decode("utf-8", "ignore")
        return f"{cut}_{digest}"

    # -- calls -----------------------------------------------------------------------
    def call_sql(self, article: Article, op: str) -> str:
        raise NotImplementedError

    # -- connections ------------------------------------------------------------------
    def session_setup(self, lock_timeout_ms: int) -> list[str]:
        return []

    def on_connect(self, conn: Any) -> None:
        """What a new pyodbc connection needs before its first statement (output converters)."""

    def read_column_sql(self, column: Column) -> str:
        """The expression that reads ``column`` back for verification (applier.verify.target):
        the column itself, unless the driver's value for it would not be the value held."""
        return self.quote(column.name)

    def select_rows_sql(self, article: Article, slices: int = 1, touched: bool = False) -> str:
        """Every row of the article; with slices > 1, the rows of one slice of a hash of the
        key, the slice number bound as the one parameter (slices read in parallel); ``touched``:
        only the rows whose key the stream touches (its keys table, :meth:`touched_table`)."""
        cols = ", ".join(self.read_column_sql(c) for c in article.replicated)
        # the keys table's EXISTS names the row as t (its columns stay unqualified here)
        sql = f"SELECT {cols} FROM {self.table(article)}" + (" AS t" if touched else "")
        conds = [self.touched_exists_sql(article)] if touched else []
        if slices > 1:
            conds.append(f"{self.key_hash_sql(article)} % {int(slices)} = ?")
        return sql + (" WHERE " + " AND ".join(conds) if conds else "")

    def key_hash_sql(self, article: Article) -> str:
        """A non-negative integer hash of the key columns (for slicing reads)."""
        raise NotImplementedError

    def key_bounds_sql(self, article: Article, touched: bool = False) -> str:
        """MIN and MAX of the article's first key column and its row count: how a read of the
        subscriber is split into ranges (applier.verify.target); ``touched``: of the keys the
        stream touches (its keys table). Only an integer column is split by its range; any other
        gives NULL bounds (not every type has MIN and MAX: PostgreSQL's uuid and boolean, SQL
        Server's bit)."""
        col = article.key_columns[0]
        table = self.touched_table(article) if touched else self.table(article)
        if col.type.kind != "int":
            return f"SELECT NULL, NULL, COUNT(*) FROM {table}"
        k = self.quote(col.name)
        return f"SELECT MIN({k}), MAX({k}), COUNT(*) FROM {table}"

    def select_range_sql(self, article: Article, lower: bool, upper: bool, touched: bool = False) -> str:
        """Every row of the article whose first key column is in [lower, upper): each bound
        present is a parameter (lower first); one range of a range-split read."""
        col = article.key_columns[0]
        k = self.quote(col.name)
        conds = [f"{k} {op} {self.param_marker(col.type)}" for op, on in ((">=", lower), ("<", upper)) if on]
        sql = self.select_rows_sql(article, touched=touched)
        return sql + ((" AND " if touched else " WHERE ") + " AND ".join(conds) if conds else "")

    # -- verify in proportion to the change (applier.verify.scope) -------------------
    def touched_article(self, article: Article) -> Article:
        """The article's keys table as an article of its own, in applier's schema: the key
        columns (their types, not null, no identity), keyed by all of them. Its name is the
        article's with every character but a letter, digit or _ as _, and a hash of its schema and
        table, so that any article's is a plain identifier of at most 63 bytes, and its own."""
        base = re.sub(r"[^A-Za-z0-9_]", "_", f"{article.schema}_{article.table}")[:40]
        digest = hashlib.sha1(f"{article.schema}\0{article.table}".encode()).hexdigest()[:10]
        cols = tuple(dataclasses.replace(c, nullable=False, identity=False) for c in article.key_columns)
        return Article(self.PROGRESS_SCHEMA, f"keys_{base}_{digest}", cols, article.key)

    def touched_table(self, article: Article) -> str:
        return self.table(self.touched_article(article))

    def touched_ddl(self, article: Article) -> list[str]:
        """Create the article's keys table anew (dropped first where an earlier run left one)."""
        keys = self.touched_article(article)
        return [*self.drop_table_sql(keys), self.create_table_sql(keys)]

    def touched_insert_sql(self, article: Article) -> str:
        """One statement inserting many keys into the article's keys table, bound as one JSON
        text: an array of objects of the key columns, values encoded as images are."""
        sql = self.bulk_insert_sql(self.touched_article(article))
        if sql is None:
            raise self.unsupported("a bulk insert of JSON rows (the stream's keys for verify)")
        return sql

    def touched_drop_sql(self, article: Article) -> list[str]:
        return self.drop_table_sql(self.touched_article(article))

    def analyze_sql(self, table: str) -> str | None:
        """A statement giving the planner the statistics of a table just filled (None: the server
        gathers them itself)."""
        return None

    def touched_exists_sql(self, article: Article) -> str:
        """Whether the stream touches row ``t`` of the article (an EXISTS over its keys table)."""
        cols = [self.quote(c.name) for c in article.key_columns]
        return self.render("touched_exists.sql.j2", keys=self.touched_table(article), cols=cols).strip()

    def row_hash_sql(self, article: Article, alias: str) -> str:
        """A hash of the whole row ``alias`` of the article, as a number its sum keeps exact:
        equal rows give equal hashes, whatever the session's settings."""
        raise NotImplementedError

    def rest_digest_sql(self, article: Article) -> str:
        """One row: the count of the article's rows outside the stream's keys, and the sum of
        their :meth:`row_hash_sql` (0 for none)."""
        return self.render(
            "rest_digest.sql.j2",
            table=self.table(article),
            row_hash=self.row_hash_sql(article, "t"),
            touched=self.touched_exists_sql(article),
        ).strip()

    def insert_sql(self, article: Article) -> str:
        cols = ", ".join(self.quote(c) for c in article.column_names)
        marks = ", ".join("?" for _ in article.column_names)
        return f"INSERT INTO {self.table(article)} ({cols}) VALUES ({marks})"

    def drop_table_sql(self, article: Article) -> list[str]:
        raise NotImplementedError

    def create_schema_sql(self, schema: str) -> str:
        raise NotImplementedError

    def param_marker(self, t: SqlType | None) -> str:
        """A parameter marker in a statement (PostgreSQL casts it to the declared type)."""
        return "?"

    def split_script(self, text: str) -> list[str]:
        """A script -> statements to execute one by one (T-SQL splits on GO lines)."""
        return [text] if text.strip() else []

    def rollback(self, conn: Any) -> None:
        """Roll the connection's transaction back (every rollback of applier's goes here)."""
        conn.rollback()

    def savepoint_sql(self, name: str) -> str:
        return f"SAVEPOINT {self.quote(name)}"

    def rollback_to_savepoint_sql(self, name: str) -> str:
        return f"ROLLBACK TO SAVEPOINT {self.quote(name)}"

    def release_savepoint_sql(self, name: str) -> str | None:
        """Forget a savepoint, its work kept (None: the dialect has no such statement)."""
        return f"RELEASE SAVEPOINT {self.quote(name)}"

    def skip_loop_sql(self) -> tuple[list[str], list[str]]:
        """Statements before and after the error policy's loop that applies one call at a time
        under a savepoint (``Sender.savepoint_each``): what the savepoint needs to survive an
        error, and the session as it was after. None where it survives one as it is."""
        return [], []

    def skip_rollback_sql(self, name: str) -> str:
        """Undo a call whose error the policy skips: back to savepoint ``name``. Raises where the
        error left a transaction that cannot go back to a savepoint (the skip then fails)."""
        return self.rollback_to_savepoint_sql(name)

    def local_lock_timeout_sql(self, ms: int) -> str | None:
        """A statement bounding every lock wait to ``ms`` until the transaction ends, or None
        when the dialect's lock timeout outlives the transaction (it is left as it is)."""
        return None

    def odbc_connection_string(self, base: str) -> str:
        """The user's connection string plus the options applier relies on."""
        if not self.ODBC_OPTIONS:
            return base
        sep = "" if base.rstrip().endswith(";") else ";"
        return f"{base}{sep}{self.ODBC_OPTIONS}"

    # -- controlled schedules (applier.apply.gate) -------------------------------------
    def backend_id_sql(self) -> str | None:
        """One row, one column: the session's id on the server (None: not known)."""
        return None

    def lock_waits_sql(self, sessions: int) -> str | None:
        """Parameters: ``sessions`` session ids. Rows (session, sessions blocking it as text)
        of the sessions among them that wait for a lock (None: the server cannot say)."""
        return None

    def cancel_sql(self) -> str | None:
        """Parameter: a session id. Cancels the statement it runs (None: not possible)."""
        return None
