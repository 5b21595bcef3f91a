"""Dialect base: everything that differs between subscribers goes through one of these.

A dialect owns: identifier quoting (one function), the type mapping, procedure text
(rendered from templates under ``sql/<dialect>/``, falling back to ``sql/common/`` where both
dialects write the same), call text, schema changes, constraints, connection set-up, the
progress table, and error classification (by code, never by English text). Callers ask a
dialect for what differs; nothing outside ``dialects/`` looks at a dialect's name.
Anything a dialect cannot express goes through :meth:`Dialect.unsupported`. The procedures and
calls are :mod:`applier.dialects.procedures`', the templated schema statements
:mod:`applier.dialects.schema`'s, the classes of errors :mod:`applier.dialects.conflicts`'.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, ClassVar

import jinja2

from applier.articles import Article, Column, SqlType
from applier.dialects.conflicts import Classified
from applier.dialects.procedures import ProcedureText
from applier.dialects.schema import SchemaStatements
from applier.errors import UnsupportedError
from applier.values import param_converter


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


class Dialect(ProcedureText, SchemaStatements):
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

    # -- rendering -------------------------------------------------------------------
    def render(self, template: str, **ctx: Any) -> str:
        return _env(self.template_dir).get_template(template).render(d=self, **ctx)

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
