"""Non-row events of the change stream: schema changes (op ``DDL``) and SQL statements (op ``SQL``).

Both travel in the canonical record like commands; their payload is the ``after`` column
(JSON text), their keys and ``before`` are NULL. In change files the payload is written
under ``ddl`` / ``sqldml`` (``after`` is accepted too, so a Parquet file round-trips).

Schema change (seed 001): the event carries the article's new ``schema_version`` and one
change. Commands before it keep the old shape, commands after it carry the new version::

    {"action": "add_column", "column": {"name": "note", "type": "nvarchar(40)"}}
    {"action": "drop_column", "column": "note"}
    {"action": "alter_column_type", "column": "qty", "type": "bigint"}

Key columns cannot be dropped or retyped (the key names the row across versions), and an
added column is nullable (the rows already at the subscriber have no value for it).

SQL statement (seed 004, rs_sqldml): operator U, D, I (insert-select) or S (select-into),
category C1 or C2, the statement's clauses as the publisher wrote them, and ``rowcount``
(rs_rowcount). Its affected rows are the ``rowcount`` row commands that follow it in its
transaction (execbegin ... rows ... execend, as Adaptive Server logs them).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from applier import failpoints
from applier.articles import Article, Column, SqlType, parse_type
from applier.errors import ConfigError, InputError
from applier.values import encode, to_param

DDL_ACTIONS = ("add_column", "drop_column", "alter_column_type")
SQL_OPERATORS = ("U", "D", "I", "S")
SQL_CATEGORIES = ("C1", "C2")
_CLAUSES = ("set", "where", "select", "from", "insert_column")


# -- schema changes ----------------------------------------------------------------------
@dataclass(frozen=True)
class SchemaChange:
    """One alter table of one article, at its position in the stream."""

    article: str
    lsn: int
    version: int  # the version it creates
    action: str
    column: str
    type: SqlType | None = None  # add_column / alter_column_type
    nullable: bool = True

    @staticmethod
    def parse(article: str, lsn: int, version: int, payload: Any, where: str) -> SchemaChange:
        failpoints.reach("payload.parse")
        if not isinstance(payload, Mapping):
            raise InputError(f"{where}: a DDL event needs a 'ddl' object with action and column")
        action = payload.get("action")
        if action not in DDL_ACTIONS:
            raise InputError(f"{where}: ddl.action must be one of {', '.join(DDL_ACTIONS)}, got {action!r}")
        col = payload.get("column")
        try:
            if action == "add_column":
                if not isinstance(col, Mapping) or not isinstance(col.get("name"), str):
                    raise InputError(f"{where}: add_column needs column {{name, type}}")
                if col.get("nullable", True) is not True:
                    raise InputError(
                        f"{where}: added column {col['name']!r} must be nullable: rows already at "
                        "the subscriber have no value for it"
                    )
                return SchemaChange(
                    article, lsn, version, action, col["name"], parse_type(str(col.get("type")))
                )
            if not isinstance(col, str):
                raise InputError(f"{where}: {action} needs the column name")
            if action == "drop_column":
                return SchemaChange(article, lsn, version, action, col)
            return SchemaChange(article, lsn, version, action, col, parse_type(str(payload.get("type"))))
        except ConfigError as e:
            raise InputError(f"{where}: {e}") from None

    def payload(self) -> dict[str, Any]:
        if self.action == "add_column":
            return {"action": self.action, "column": {"name": self.column, "type": str(self.type)}}
        if self.action == "drop_column":
            return {"action": self.action, "column": self.column}
        return {"action": self.action, "column": self.column, "type": str(self.type)}


# Type changes whose conversion of existing values is the same on every subscriber (and in
# the oracle): widening numbers, longer text, numbers to text, dates to datetimes.
_CONVERTIBLE = {
    "int": ("int", "decimal", "float", "str"),
    "decimal": ("decimal", "str"),
    "str": ("str",),
    "date": ("datetime",),
}


def convert_value(old: Column, new: Column, value: Any) -> Any:
    """A canonical value of ``old`` -> the canonical value the subscriber holds after the
    column's type became ``new`` (ALTER ... TYPE converts stored values)."""
    if value is None or old.type == new.type:
        return value
    py = to_param(old.type, value)
    if new.type.kind == "str":
        py = format(py, "f") if isinstance(py, decimal.Decimal) else str(py)
    elif new.type.kind == "datetime" and isinstance(py, dt.date):
        py = dt.datetime(py.year, py.month, py.day)
    return encode(new, py)


def apply_change(article: Article, ch: SchemaChange, where: str) -> Article:
    """The article's shape after the change, or InputError saying why it cannot be."""
    names = [c.name for c in article.columns]
    if ch.action == "add_column":
        if ch.column in names:
            raise InputError(f"{where}: add_column {ch.column!r}: {article.name} already has it")
        assert ch.type is not None
        cols = (*article.columns, Column(ch.column, ch.type, nullable=True))
        return replace(article, columns=cols)
    if ch.column not in names:
        raise InputError(f"{where}: {ch.action} {ch.column!r}: not a column of {article.name}")
    if ch.column in article.key:
        raise InputError(f"{where}: {ch.action} of key column {ch.column!r} is not supported")
    if ch.action == "drop_column":
        return replace(article, columns=tuple(c for c in article.columns if c.name != ch.column))
    assert ch.type is not None
    old = article.column(ch.column)
    if ch.type.kind not in _CONVERTIBLE.get(old.type.kind, ()):
        raise InputError(
            f"{where}: type change of {ch.column!r} from {old.type} to {ch.type} is not supported "
            "(the subscriber's conversion of existing values could not be predicted)"
        )
    cols = tuple(replace(c, type=ch.type) if c.name == ch.column else c for c in article.columns)
    return replace(article, columns=cols)


@dataclass(frozen=True)
class Schemas:
    """Every article at every schema version, and where in the stream each version starts.

    Pickled to executors (plain data). Version 1 is the article as configured.
    """

    versions: dict[str, tuple[Article, ...]]
    starts: dict[str, tuple[int, ...]] = field(default_factory=dict)  # lsn where version v+1 starts
    changes: tuple[SchemaChange, ...] = ()

    @staticmethod
    def build(articles: Mapping[str, Article], changes: list[SchemaChange]) -> Schemas:
        versions = {n: [a] for n, a in articles.items()}
        starts: dict[str, list[int]] = {n: [] for n in articles}
        ordered = sorted(changes, key=lambda c: c.lsn)
        for ch in ordered:
            where = f"lsn {ch.lsn}"
            if ch.article not in versions:
                raise InputError(f"{where}: DDL event of unknown article {ch.article!r}")
            have = versions[ch.article]
            if ch.version != len(have) + 1:
                raise InputError(
                    f"{where}: DDL event of {ch.article} creates schema_version {ch.version}, "
                    f"expected {len(have) + 1} (versions go up by one, in stream order)"
                )
            have.append(apply_change(have[-1], ch, where))
            starts[ch.article].append(ch.lsn)
        return Schemas(
            {n: tuple(v) for n, v in versions.items()},
            {n: tuple(s) for n, s in starts.items()},
            tuple(ordered),
        )

    def at(self, name: str, version: int) -> Article | None:
        vs = self.versions.get(name)
        if vs is None or not 1 <= version <= len(vs):
            return None
        return vs[version - 1]

    def final(self, name: str) -> Article:
        return self.versions[name][-1]

    def first(self, name: str) -> Article:
        return self.versions[name][0]

    def version_at(self, name: str, lsn: int) -> int:
        """The version in effect for a command at lsn (after every DDL event before it)."""
        return 1 + sum(1 for s in self.starts.get(name, ()) if s < lsn)

    def has_changes(self, name: str) -> bool:
        return bool(self.starts.get(name))

    def change(self, name: str, lsn: int) -> SchemaChange | None:
        """The schema change of ``name`` at ``lsn``, where these schemas hold one."""
        return next((c for c in self.changes if c.article == name and c.lsn == lsn), None)


# -- SQL statements ----------------------------------------------------------------------
@dataclass(frozen=True)
class SqlStatement:
    """rs_sqldml: one SQL DML statement of the publisher with its row count."""

    operator: str
    category: str
    rowcount: int
    set: str | None = None
    where: str | None = None
    select: str | None = None
    from_: str | None = None
    insert_column: str | None = None

    @staticmethod
    def parse(payload: Any, where: str) -> SqlStatement:
        failpoints.reach("payload.parse")
        if not isinstance(payload, Mapping):
            raise InputError(f"{where}: a SQL event needs a 'sqldml' object")
        op = payload.get("operator")
        if op not in SQL_OPERATORS:
            raise InputError(f"{where}: sqldml.operator must be one of U, D, I, S, got {op!r}")
        cat = payload.get("category")
        if cat not in SQL_CATEGORIES:
            raise InputError(f"{where}: sqldml.category must be C1 or C2, got {cat!r}")
        n = payload.get("rowcount")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InputError(f"{where}: sqldml.rowcount must be a non-negative integer, got {n!r}")
        clauses: dict[str, str | None] = {}
        for c in _CLAUSES:
            v = payload.get(c)
            if v is not None and not isinstance(v, str):
                raise InputError(f"{where}: sqldml.{c} must be SQL text or null")
            clauses[c] = v
        need = {"U": ("set",), "D": (), "I": ("select",), "S": ("select",)}[op]
        for c in need:
            if not clauses[c]:
                raise InputError(f"{where}: operator {op} needs sqldml.{c}")
        return SqlStatement(
            op,
            cat,
            n,
            clauses["set"],
            clauses["where"],
            clauses["select"],
            clauses["from"],
            clauses["insert_column"],
        )

    def payload(self) -> dict[str, Any]:
        return {
            "operator": self.operator,
            "category": self.category,
            "rowcount": self.rowcount,
            "set": self.set,
            "where": self.where,
            "select": self.select,
            "from": self.from_,
            "insert_column": self.insert_column,
        }


# -- applied procedures ------------------------------------------------------------------
@dataclass(frozen=True)
class AppliedProcedure:
    """A replicated (applied) stored procedure: its name, its parameter values (bound as
    parameters at the subscriber) and how many row operations it performed; those rows follow
    it in its transaction, as a statement's do."""

    procedure: str
    params: tuple[Any, ...]
    rowcount: int

    @staticmethod
    def parse(payload: Any, where: str) -> AppliedProcedure:
        failpoints.reach("payload.parse")
        if not isinstance(payload, Mapping):
            raise InputError(f"{where}: a PROC event needs a 'procedure' object")
        name = payload.get("procedure")
        if not isinstance(name, str) or not name.strip():
            raise InputError(f"{where}: procedure.procedure must name the procedure")
        params = payload.get("params", [])
        if not isinstance(params, list) or any(isinstance(p, (dict, list)) for p in params):
            raise InputError(f"{where}: procedure.params must be a list of scalar values")
        n = payload.get("rowcount")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InputError(
                f"{where}: procedure.rowcount must be the number of its row operations (1 or more)"
            )
        return AppliedProcedure(name, tuple(params), n)

    def payload(self) -> dict[str, Any]:
        return {"procedure": self.procedure, "params": list(self.params), "rowcount": self.rowcount}


# -- the stream's events, decoded once ---------------------------------------------------
Payload = SchemaChange | SqlStatement | AppliedProcedure


@dataclass(frozen=True)
class StreamEvent:
    """One DDL, SQL or PROC event of a validated stream (its row collected to the driver), its
    payload decoded once: the planning of barriers and their apply read ``payload``, never the
    JSON text again."""

    lsn: int
    xact_seqno: int
    article: str
    op: str
    schema_version: int
    payload: Payload


def stream_events(rows: Iterable[Any], schemas: Schemas | None = None) -> tuple[StreamEvent, ...]:
    """The validated EVENT_OPS rows (``lsn``, ``article``, ``op``, ``schema_version``, ``after``:
    the canonical payload JSON) -> :class:`StreamEvent`, each payload decoded once. A schema
    change is the one ``schemas`` already holds for its (article, lsn), not decoded again."""
    out: list[StreamEvent] = []
    for r in rows:
        lsn, name, op, version = int(r["lsn"]), str(r["article"]), str(r["op"]), int(r["schema_version"])
        where = f"lsn {lsn}"
        payload: Payload
        if op == "DDL":
            held = schemas.change(name, lsn) if schemas is not None else None
            payload = held if held is not None else SchemaChange.parse(name, lsn, version, _decode(r), where)
        elif op == "PROC":
            payload = AppliedProcedure.parse(_decode(r), where)
        else:
            payload = SqlStatement.parse(_decode(r), where)
        out.append(StreamEvent(lsn, int(r["xact_seqno"]), name, op, version, payload))
    return tuple(out)


def _decode(row: Any) -> Any:
    return json.loads(row["after"])
