"""T-SQL dialect: SQL Server subscribers, with the procedures SQL Server itself generates.

Procedure text is SQL Server 2016+'s generated ``sp_MSins_/sp_MSupd_/sp_MSdel_`` procedures
(``--template 2016``, the default; ``legacy``: the documented older layout with the bare
``exec sp_MSreplraiserror 20598``): ``@c1..@cn``, ``@pkc1..@pkck``, ``@bitmap
binary(ceil(n/8))``, the key-changed branch for a key that is not an identity column (none
when every column is a key column), and after zero rows error 20598 through
``sp_MSreplraiserror @errorid=20598, @param1=N'[schema].[table]', @param2=@primarykey_text,
@param3=13233`` (13234 for deletes) where the server's ``sp_MSreplraiserror`` takes
``@param3``, the bare ``@errorid=20598`` otherwise. Procedures are created where SQL Server
creates them: unqualified, in the default schema of the user applying (dbo unless the
subscription says otherwise), or in the article's ``proc_schema``.

SQL statement delivery (seed 002) sends each update or delete as ``exec sp_executesql
N'<statement + the same zero-row check>', N'<parameters>', ?, ...``: the statement's
variables are its own even in a batch of many calls, and every value stays bound.

Row not found without the replication procedures. ``sp_MSreplraiserror`` is a system
procedure of every SQL Server with replication components; a server without it (an edition
or container without them) gets, from :meth:`TsqlDialect.support_sql`, a ``dbo`` procedure
of that name that raises with ``THROW 120598, <the 20598 message>, 1``
(:data:`ROW_NOT_FOUND_THROWN`): THROW takes any number from 50000 up without a
``sys.messages`` entry ("THROW (Transact-SQL)"), whereas RAISERROR with a number needs the
message in ``sys.messages``. SQL Server looks for an ``sp_`` procedure in ``sys`` first, then
in the database's schemas ("CREATE PROCEDURE", naming): the server's own wins where it
exists, so the generated text stays SQL Server's. :meth:`TsqlDialect.classify` maps both 20598
and 120598 to ROW_NOT_FOUND with code "20598", so error policies such as ``2601:2627:20598``
apply to both. One difference remains: RAISERROR leaves the transaction open, THROW ends the
batch (and under ``XACT_ABORT ON`` rolls back); the apply loop rolls back after any error, so
both end in the same state.

Classification uses SQL Server's native error number and SQLSTATE class 08 for lost
connections, never English text (:mod:`applier.dialects.tsqlerrors`). Rows sent as one JSON
text are read as :mod:`applier.dialects.openjson` says.
"""

from __future__ import annotations

import datetime as dt
import re
import struct
from typing import Any, ClassVar

from applier.articles import Article, SqlType, Syntax
from applier.dialects import tsqlerrors
from applier.dialects.base import Dialect
from applier.dialects.batches import split_batches
from applier.dialects.conflicts import Classified
from applier.dialects.openjson import OpenJson
from applier.dialects.procedures import OPS
from applier.dialects.tsqlerrors import (
    BY_NATIVE,
    NAMED_AT,
    NO_TRANSACTION,
    ROW_NOT_FOUND,
    ROW_NOT_FOUND_THROWN,
    native_code,
)

ROW_NOT_FOUND_PARAM3 = {"U": 13233, "D": 13234}  # sp_MSreplraiserror @param3, as SQL Server 2016+
KEY_TEXT_WIDTH = 100  # @primarykey_text nvarchar(100), as SQL Server 2016+ declares it


_SAVEPOINT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")
_SYSNAME_MAX = 128
# Largest non-max lengths SQL Server accepts.
_MAX_LENGTH = {
    "char": 8000,
    "varchar": 8000,
    "binary": 8000,
    "varbinary": 8000,
    "nchar": 4000,
    "nvarchar": 4000,
}
_MAX_ALLOWED = {"varchar", "nvarchar", "varbinary"}


SQL_SS_TIMESTAMPOFFSET = -155  # the driver's type of a datetimeoffset column (msodbcsql.h)


def datetimeoffset_of(raw: bytes) -> dt.datetime:
    """An SQL_SS_TIMESTAMPOFFSET_STRUCT as the aware datetime it is (microseconds: the
    canonical precision)."""
    y, mo, d, h, mi, sec, ns, oh, om = struct.unpack("<6hI2h", raw)
    tz = dt.timezone(dt.timedelta(hours=oh, minutes=om))  # the minutes carry the hours' sign
    return dt.datetime(y, mo, d, h, mi, sec, ns // 1000, tz)


class TsqlDialect(Dialect, OpenJson):
    name: ClassVar[str] = "tsql"
    language: ClassVar[str] = "tsql"
    template_dir: ClassVar[str] = "tsql"
    SCRIPT_SEPARATOR: ClassVar[str] = "\ngo\n"  # sqlcmd and SSMS run a script batch by batch
    STATEMENT_END: ClassVar[str] = ""
    KNOWN_CODES: ClassVar[frozenset[str]] = frozenset(str(n) for n in BY_NATIVE)
    ODBC_DRIVER_HINTS: ClassVar[tuple[str, ...]] = ("sql server", "freetds", "tdsodbc", "msodbcsql")
    ZERO_ROW_TEST: ClassVar[re.Pattern[str]] = re.compile(r"@@rowcount|\browcount_big\s*\(", re.I)
    RAISE_TEST: ClassVar[re.Pattern[str]] = re.compile(
        r"\braiserror\b|\bthrow\b|\bsp_msreplraiserror\b", re.I
    )
    ZERO_ROW_ADVICE: ClassVar[str] = "@@ROWCOUNT = 0"
    # SQL Server takes at most 2100 parameters per request; leave room for the statement's own.
    MAX_PARAMS_PER_BATCH: ClassVar[int] = 2000
    # SQL Server's own convention for a primary key's name; sysname is 128 characters.
    PRIMARY_KEY_NAME: ClassVar[str] = "PK_{table}"
    MAX_IDENTIFIER_BYTES: ClassVar[int] = 128
    # nchar(n)/nvarchar(n): "n defines the string size in byte-pairs": under UTF-16 a supplementary
    # character (an emoji) is a surrogate pair and takes 2 of the n
    # (https://learn.microsoft.com/en-us/sql/t-sql/data-types/nchar-and-nvarchar-transact-sql).
    UTF16_LENGTHS: ClassVar[frozenset[str]] = frozenset({"nchar", "nvarchar"})

    # -- the engine's capabilities: SQL Server's here, the reference text; an engine that
    # speaks T-SQL but lacks one (applier.dialects.babelfish) turns its flag off, and the text
    # takes another way only there (README, "SQL Server": each difference with its test).
    # [a]]b] names a]b (QUOTENAME's escape).
    BRACKET_ESCAPES: ClassVar[bool] = True
    # OPENJSON ... WITH (c int N'$.c'): a path may be a Unicode literal.
    JSON_PATH_UNICODE: ClassVar[bool] = True
    # UPDATE t SET ... OUTPUT inserted.k INTO @found FROM tbl AS t JOIN @v AS v ON ...
    UPDATE_OUTPUT_FROM_JOIN: ClassVar[bool] = True
    # How the stand-in sp_MSreplraiserror raises 20598 (support_sql): THROW with the message
    # SQL Server gives (as 120598), or RAISERROR(20598, 16, 1) where THROW from an sp_ procedure
    # harms the session (Babelfish: current_user empty afterwards, in autocommit mode).
    STAND_IN_THROWS: ClassVar[bool] = True
    # ALTER TABLE ... ALTER COLUMN restates NULL / NOT NULL (SQL Server makes the column
    # nullable otherwise); where the engine keeps it and refuses it restated, the type alone.
    ALTER_COLUMN_RESTATES_NULL: ClassVar[bool] = True
    # ALTER TABLE ... DROP COLUMN drops the column's indexes and constraints itself (PostgreSQL
    # does; SQL Server refuses: drop_column.sql.j2 drops them first from the catalog).
    DROP_COLUMN_DROPS_DEPENDENTS: ClassVar[bool] = False
    # Where a duplicate's (2627, 2601) or a foreign key's (547) message names the constraint:
    # (pattern, which match), on the first diagnostic record.
    CONSTRAINT_NAMED_AT: ClassVar[dict[int, tuple[re.Pattern[str], int]]] = NAMED_AT
    # The view that says which session blocks which (controlled schedules' lock observation).
    LOCK_WAITS_SQL: ClassVar[str] = (
        "SELECT r.session_id, CAST(r.blocking_session_id AS varchar(12)) FROM sys.dm_exec_requests r "
        "WHERE r.blocking_session_id <> 0 AND r.session_id IN ({marks})"
    )
    # sys.tables and sys.columns name tables and columns as they were declared (None). Where
    # they do not, a query of (schema, table as sys.tables names it, column as sys.columns
    # names it, declared table, declared column) that ``applier articles --from-target``
    # renames them by (applier.catalog.target.mssql_tables).
    CATALOG_DECLARED_NAMES_SQL: ClassVar[str | None] = None

    # SQL Server's own names: a subscriber column has the publisher's type. timestamp and
    # rowversion values cannot be written, so a subscriber holds them as binary(8), as
    # SQL Server's snapshot scripts do unless the article asks to replicate timestamps.
    TYPE_MAP: ClassVar[dict[str, str]] = {
        "bit": "bit",
        "tinyint": "tinyint",
        "smallint": "smallint",
        "int": "int",
        "bigint": "bigint",
        "decimal": "decimal({precision},{scale})",
        "numeric": "numeric({precision},{scale})",
        "money": "money",
        "smallmoney": "smallmoney",
        "float": "float",
        "real": "real",
        "char": "char({length})",
        "varchar": "varchar({length})",
        "nchar": "nchar({length})",
        "nvarchar": "nvarchar({length})",
        "text": "text",
        "ntext": "ntext",
        "xml": "xml",
        "date": "date",
        "time": "time({precision})",
        "datetime": "datetime",
        "datetime2": "datetime2({precision})",
        "smalldatetime": "smalldatetime",
        "datetimeoffset": "datetimeoffset({precision})",
        "uniqueidentifier": "uniqueidentifier",
        "binary": "binary({length})",
        "varbinary": "varbinary({length})",
        "image": "image",
        "timestamp": "binary(8)",
        "rowversion": "binary(8)",
        "hierarchyid": "hierarchyid",  # bound as its text form '/1/2/' (implicit Parse)
    }

    # -- identifiers and literals ------------------------------------------------------
    def quote(self, ident: str) -> str:
        """[ident] with ] doubled: the one quoting function (QUOTENAME's rule). An engine whose
        parser does not read ]] inside brackets (:attr:`BRACKET_ESCAPES`) gets a name holding ]
        as "ident" (QUOTED_IDENTIFIER is ON on every ODBC connection); one holding both ] and "
        it cannot name at all."""
        if "\x00" in ident:
            raise self.unsupported(f"identifier with a NUL character: {ident!r}")
        if ident == "":
            raise self.unsupported("empty identifier (SQL Server rejects [] names)")
        if len(ident) > _SYSNAME_MAX:
            raise self.unsupported(f"identifier longer than {_SYSNAME_MAX} characters: {ident[:40]!r}...")
        if "]" in ident and not self.BRACKET_ESCAPES:
            if '"' in ident:
                raise self.unsupported(
                    f'identifier with both ] and " (the engine reads neither escaped): {ident!r}'
                )
            return '"' + ident + '"'
        return "[" + ident.replace("]", "]]") + "]"

    def literal(self, text: str) -> str:
        """N'...' with quotes doubled (Unicode literal: identifiers may be any script)."""
        if "\x00" in text:
            raise self.unsupported(f"string literal with a NUL character: {text!r}")
        return "N'" + text.replace("'", "''") + "'"

    BEGIN_SQL: ClassVar[str] = "BEGIN TRANSACTION"

    def bool_literal(self, value: bool) -> str:
        return "1" if value else "0"  # bit

    def bytes_literal(self, value: bytes) -> str:
        return f"0x{value.hex()}"

    # -- types -----------------------------------------------------------------------
    def type_sql(self, t: SqlType) -> str:
        if t.length is not None and t.base in _MAX_LENGTH:
            if t.length == -1 and t.base not in _MAX_ALLOWED:
                raise self.unsupported(f"column type {t}: (max) is only for varchar, nvarchar, varbinary")
            if t.length != -1 and not 1 <= t.length <= _MAX_LENGTH[t.base]:
                raise self.unsupported(f"column type {t}: length must be 1..{_MAX_LENGTH[t.base]} or max")
        return super().type_sql(t)

    def null_param(self, t: SqlType | None) -> Any:
        """A binary column's NULL binds as binary (pyodbc.BinaryNull): FreeTDS cannot describe
        parameters, so pyodbc binds a plain None as varchar, which converts to no binary type
        implicitly (SQL Server: error 257; Babelfish: 206, "implicit casting is not allowed")."""
        if t is not None and t.kind == "bytes":
            import pyodbc

            return pyodbc.BinaryNull
        return None

    def param_type(self, t: SqlType | None, width: int = 1) -> str:
        """Declared type of a procedure parameter; None is the SCALL/MCALL bitmap."""
        return f"binary({width})" if t is None else self.type_sql(t)

    # -- procedures ------------------------------------------------------------------
    def template_context(self, article: Article, op: str) -> dict[str, Any]:
        ctx = super().template_context(article, op)
        ctx["table_literal"] = self.literal(ctx["table_text"])
        ctx["row_not_found"] = ROW_NOT_FOUND
        ctx["param3"] = ROW_NOT_FOUND_PARAM3.get(op)
        ctx["command"] = OPS[op].upper()
        ctx["key_text_width"] = KEY_TEXT_WIDTH
        ctx["json_row"] = self.json_row_name(article)
        return ctx

    def template_name(self, article: Article, op: str) -> str:
        name = f"{OPS[op]}_{article.delivery(op).syntax.value.lower()}.sql.j2"
        return f"legacy_{name}" if article.proc_template == "legacy" else name

    def key_text_literal(self, text: str) -> str:
        """A piece of @primarykey_text: '...' as SQL Server writes it; N'...' when the name is
        not ASCII (a varchar literal would turn its letters into '?')."""
        return self.literal(text) if not text.isascii() else "'" + text.replace("'", "''") + "'"

    def procedure_sql(self, article: Article, op: str) -> str | None:
        """drop-if-exists, GO, then ``create procedure`` as SQL Server writes it.

        A script of two batches (CREATE PROCEDURE must start its batch); installers run it
        through :meth:`split_script`. None when op is not applied by a default procedure.
        """
        d = article.delivery(op)
        if d.syntax in (Syntax.SQL, Syntax.NONE) or d.procedure:
            return None
        template = self.template_name(article, op)
        from importlib import resources

        if not (resources.files("applier.sql") / self.template_dir / template).is_file():
            raise self.unsupported(f"{OPS[op]} procedures with {d.syntax.value} syntax are not generated yet")
        create = self.render(template, **self.template_context(article, op))
        return f"{self._drop_if_exists_sql(article, op)}\ngo\n{create}"

    def statement_context(self, ctx: dict[str, Any]) -> dict[str, Any]:
        """sp_executesql's parameter list and markers: the changed columns, then the key."""
        decl = [f"@c{c['i']} {c['type']}" for c in ctx["set_cols"]]
        decl += [f"@{k['param']} {k['type']}" for k in ctx["keys"]]
        return {"param_decl": ",".join(decl), "markers": ", ".join("?" for _ in decl)}

    def procedure_exists_sql(self) -> str:
        # schema NULL: an unqualified name, in the user's default schema (SCHEMA_NAME())
        return (
            "SELECT count(*) FROM sys.procedures p JOIN sys.schemas s ON s.schema_id = p.schema_id "
            "WHERE s.name = COALESCE(?, SCHEMA_NAME()) AND p.name = ?"
        )

    def support_sql(self) -> list[str]:
        """The stand-in ``dbo.sp_MSreplraiserror`` where the server has none (module docstring):
        created only when neither ``sys`` nor ``dbo`` has one, through EXEC since CREATE
        PROCEDURE must open its batch."""
        return [
            self.render(
                "replraiserror.sql.j2",
                thrown=ROW_NOT_FOUND_THROWN if self.STAND_IN_THROWS else None,
                row_not_found=ROW_NOT_FOUND,
            ).strip()
        ]

    def _drop_if_exists_sql(self, article: Article, op: str) -> str:
        """The drop that opens an install script, as SQL Server's own scripts write it."""
        ref = self.proc_ref(article, op)
        return f"if object_id({self.literal(ref)}, N'P') is not null drop procedure {ref}"

    def split_script(self, text: str) -> list[str]:
        """Batches of a script separated by GO lines (as sqlcmd and SSMS split them)."""
        return split_batches(text)

    # -- calls -----------------------------------------------------------------------
    def key_hash_sql(self, article: Article) -> str:
        # CHECKSUM over the key columns ("CHECKSUM (Transact-SQL)"): an int, masked non-negative.
        keys = ", ".join(self.quote(k) for k in article.key)
        return f"(CAST(CHECKSUM({keys}) AS bigint) & 2147483647)"

    def call_sql(self, article: Article, op: str) -> str:
        marks = ",".join("?" for _ in self.proc_params(article, op))
        return f"EXEC {self.proc_ref(article, op)} {marks}"

    # -- verify in proportion to the change (applier.verify.scope) -------------------------
    # How a row's hash (row_hash.sql.j2) writes a column as text, by type ({}: the column): a
    # type not listed goes as CONCAT converts it, which keeps every digit of an integer, decimal
    # and bit, and every character of a string and a uniqueidentifier. CONCAT converts float and
    # real with 6 digits, money with 2 decimals and datetime to the minute (style 0, "CAST and
    # CONVERT (Transact-SQL)"): style 3 ("always 17 digits. Use for lossless conversion"; 9 for
    # real, SQL Server 2016+), 121 (ODBC canonical, every fractional digit) and decimal instead.
    # A binary value has no text: its own SHA2_256 stands in for it, as a bigint.
    ROW_TEXT_SQL: ClassVar[dict[str, str]] = {
        "float": "CONVERT(nvarchar(30), {}, 3)",
        "real": "CONVERT(nvarchar(30), {}, 3)",
        "money": "CAST({} AS decimal(19,4))",
        "smallmoney": "CAST({} AS decimal(10,4))",
        **{t: "CONVERT(nvarchar(40), {}, 121)" for t in ("date", "time", "datetime", "datetime2")},
        **{t: "CONVERT(nvarchar(40), {}, 121)" for t in ("smalldatetime", "datetimeoffset")},
        "text": "CAST({} AS varchar(max))",
        "ntext": "CAST({} AS nvarchar(max))",
        "xml": "CAST({} AS nvarchar(max))",
        "hierarchyid": "CAST({} AS nvarchar(4000))",
        **{
            t: "CAST(CAST(HASHBYTES('SHA2_256', CAST({} AS varbinary(max))) AS binary(8)) AS bigint)"
            for t in ("binary", "varbinary", "image", "timestamp", "rowversion")
        },
    }
    _CONCAT_ARGS = 250  # CONCAT takes 2 to 254 arguments

    def row_hash_sql(self, article: Article, alias: str) -> str:
        args: list[str] = []
        for c in article.replicated:
            col = f"{alias}.{self.quote(c.name)}"
            if c.type.kind == "str" and c.type.base != "hierarchyid":
                # its length first: a | inside a string cannot make two rows one text; a NULL
                # has none (CONCAT writes NULL as ''), an empty string 0
                args += [f"DATALENGTH({col})", "N':'"]
            args += [self.ROW_TEXT_SQL.get(c.type.base, "{}").format(col), "N'|'"]
        n = self._CONCAT_ARGS
        groups = [args[i : i + n] for i in range(0, len(args), n)]  # pieces come in pairs: >= 2 each
        return self.render("row_hash.sql.j2", groups=groups).strip()

    # -- errors (applier.dialects.tsqlerrors) ------------------------------------------
    def classify(self, exc: BaseException) -> Classified:
        return tsqlerrors.classify(exc, self.CONSTRAINT_NAMED_AT)

    def ambiguous(self, c: Classified) -> bool:
        return tsqlerrors.ambiguous(c)

    # -- connections and bookkeeping -------------------------------------------------
    def on_connect(self, conn: Any) -> None:
        # pyodbc cannot read a datetimeoffset ("ODBC SQL type -155 is not yet supported"):
        # the driver's SQL_SS_TIMESTAMPOFFSET_STRUCT is decoded here (year, month, day, hour,
        # minute, second, fraction in nanoseconds, offset hours and minutes), as pyodbc's
        # documentation shows (https://github.com/mkleehammer/pyodbc/wiki/Using-an-Output-Converter-function).
        conn.add_output_converter(SQL_SS_TIMESTAMPOFFSET, datetimeoffset_of)

    def session_setup(self, lock_timeout_ms: int) -> list[str]:
        return [
            # Any run-time error rolls the whole transaction back and ends the batch, so a
            # failed call can never leave half a transaction to be committed with the rest
            # (dbt-sqlserver sets XACT_ABORT ON for the same reason). Without it, most
            # statement errors only end the statement and the transaction stays open.
            "SET XACT_ABORT ON",
            # Milliseconds to wait for a lock before error 1222 (-1: forever, 0: not at all).
            f"SET LOCK_TIMEOUT {int(lock_timeout_ms)}",
            # No DONE_IN_PROC row counts: a batch of calls returns one result, and errors are
            # not hidden behind row-count results. @@ROWCOUNT is still maintained.
            "SET NOCOUNT ON",
        ]

    def rollback(self, conn: Any) -> None:
        """Roll back; where the server already did (XACT_ABORT ON, or an error Babelfish aborts
        the transaction on), FreeTDS still asks it to and gets 3903 ("ROLLBACK can only be used
        in transaction blocks"), then opens no transaction for what follows: the connection's
        next statements would commit one by one (seen on Babelfish: an insert after it outlived
        the next rollback). The transaction the driver believes open is begun here instead."""
        import pyodbc

        try:
            conn.rollback()
        except pyodbc.Error as e:
            if native_code(str(e.args[1]) if len(e.args) > 1 else str(e)) != NO_TRANSACTION:
                raise
            conn.cursor().execute("IF @@TRANCOUNT = 0 BEGIN TRANSACTION")

    def release_savepoint_sql(self, name: str) -> str | None:
        return None  # T-SQL has no RELEASE: a savepoint lives until the transaction ends

    def savepoint_sql(self, name: str) -> str:
        # Note: under XACT_ABORT ON an error dooms the whole transaction, so rolling back to a
        # savepoint only helps for work undone on purpose, not after an error.
        return f"SAVE TRANSACTION {self._savepoint(name)}"

    def rollback_to_savepoint_sql(self, name: str) -> str:
        return f"ROLLBACK TRANSACTION {self._savepoint(name)}"

    def _savepoint(self, name: str) -> str:
        if not _SAVEPOINT_RE.match(name):
            raise self.unsupported(f"savepoint name {name!r} (a regular identifier of at most 32 characters)")
        return name

    def create_schema_sql(self, schema: str) -> str:
        # CREATE SCHEMA must be alone in its batch: run it through EXEC.
        inner = f"CREATE SCHEMA {self.quote(schema)}"
        return f"IF SCHEMA_ID({self.literal(schema)}) IS NULL EXEC({self.literal(inner)})"

    def drop_table_sql(self, article: Article) -> list[str]:
        table = self.table(article)
        return [f"IF OBJECT_ID({self.literal(table)}, N'U') IS NOT NULL DROP TABLE {table}"]

    def backend_id_sql(self) -> str | None:
        return "SELECT @@SPID"

    def lock_waits_sql(self, sessions: int) -> str | None:
        return self.LOCK_WAITS_SQL.format(marks=", ".join("?" for _ in range(sessions)))

    # -- set-based apply and the skip policy --
    # Set-based apply (sql/tsql/set_apply.sql.j2, bulk_insert.sql.j2): the rows travel as one
    # JSON text read by OPENJSON ... WITH (SQL Server 2016+, database compatibility level 130+),
    # as applier.dialects.openjson writes it.
    SET_APPLY: ClassVar[bool] = True
    # The error the skip policy's rollback raises when the savepoint cannot be rolled back to.
    SKIP_NOT_HONOURED: ClassVar[int] = 50000

    def set_procedure_sql(self, article: Article, op: str) -> str | None:
        """drop-if-exists, GO, then the set procedure of op (one parameter, ``@rows
        nvarchar(max)``): installers run it through :meth:`split_script`."""
        if not self.set_eligible(article, op):
            return None
        ctx = self.template_context(article, op)
        ctx.update(
            op=op,
            command=OPS[op].upper(),
            set_proc=self.qualified(*self.set_proc_name(article, op)),
            mask=self.set_mask_name(article),
            row_not_found=ROW_NOT_FOUND,
            param3=ROW_NOT_FOUND_PARAM3.get(op),
        )
        return self.render("set_apply.sql.j2", **ctx)

    def set_call_sql(self, article: Article, op: str) -> str:
        return f"EXEC {self.qualified(*self.set_proc_name(article, op))} ?"

    # The skip policy (Sender.savepoint_each). Under SET XACT_ABORT ON (session_setup) any
    # run-time error rolls the whole transaction back, so no savepoint survives it. While the
    # policy applies calls one at a time, XACT_ABORT is OFF: a statement error (2627, 2601, 547;
    # sp_MSreplraiserror's RAISERROR; THROW, which "honors SET XACT_ABORT") then rolls back at
    # most its statement and leaves the transaction open ("SET XACT_ABORT"), and the skipped
    # call is undone with ROLLBACK TRANSACTION <savepoint> ("SAVE TRANSACTION"). An error that
    # left the transaction uncommittable (XACT_STATE() = -1: "can't commit the transaction or
    # roll back to a savepoint; it can only request a full rollback") or rolled it back
    # (XACT_STATE() = 0) cannot be skipped: the rollback raises, and the error stands.
    # SAVE TRANSACTION needs an open transaction, and in ODBC's manual-commit mode the driver
    # runs SET IMPLICIT_TRANSACTIONS ON, under which SAVE TRANSACTION opens none: the loop opens
    # one with BEGIN TRANSACTION (@@TRANCOUNT 2 under implicit transactions, whose COMMIT at the
    # loop's end only takes it back to 1: the caller's commit is the real one).
    def skip_loop_sql(self) -> tuple[list[str], list[str]]:
        return (
            ["SET XACT_ABORT OFF", "IF @@TRANCOUNT = 0 BEGIN TRANSACTION"],
            ["IF @@TRANCOUNT > 1 AND XACT_STATE() = 1 COMMIT TRANSACTION", "SET XACT_ABORT ON"],
        )

    def skip_rollback_sql(self, name: str) -> str:
        sp, n = self._savepoint(name), self.SKIP_NOT_HONOURED
        why = "the error policy skips the error, but it {} (XACT_STATE() = {}): SQL Server cannot roll back to a savepoint, so the skip is not honoured and the error stands"
        doomed = self.literal(why.format("left the transaction uncommittable", -1))
        gone = self.literal(why.format("rolled the whole transaction back", 0))
        return (
            f"IF XACT_STATE() = -1 THROW {n}, {doomed}, 1;\n"
            f"IF XACT_STATE() = 0 THROW {n}, {gone}, 1;\n"
            f"ROLLBACK TRANSACTION {sp}"
        )
