"""Articles: published tables, their columns and key, and how each operation is delivered.

Column types are written as SQL Server type names (the product speaks SQL Server
replication first); each dialect maps them. An article is validated once, here.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from functools import cached_property

from applier.errors import ConfigError

# base name -> (kind, takes_length, takes_precision_scale)
_BASES: dict[str, str] = {
    "bit": "bool",
    "tinyint": "int",
    "smallint": "int",
    "int": "int",
    "bigint": "int",
    "decimal": "decimal",
    "numeric": "decimal",
    "money": "decimal",
    "smallmoney": "decimal",
    "float": "float",
    "real": "float",
    "char": "str",
    "varchar": "str",
    "nchar": "str",
    "nvarchar": "str",
    "text": "str",
    "ntext": "str",
    "xml": "str",
    "date": "date",
    "time": "time",
    "datetime": "datetime",
    "datetime2": "datetime",
    "smalldatetime": "datetime",
    "datetimeoffset": "datetimeoffset",
    "uniqueidentifier": "uuid",
    "binary": "bytes",
    "varbinary": "bytes",
    "image": "bytes",
    "timestamp": "bytes",
    "rowversion": "bytes",
    # hierarchyid travels in its canonical text form ('/1/2/', hierarchyid::ToString()):
    # SQL Server converts that text to hierarchyid implicitly (hierarchyid::Parse) when it is
    # bound to a hierarchyid parameter; PostgreSQL, which has no such type, stores the text.
    "hierarchyid": "str",
}
_INT_RANGES = {
    "tinyint": (0, 255),
    "smallint": (-(2**15), 2**15 - 1),
    "int": (-(2**31), 2**31 - 1),
    "bigint": (-(2**63), 2**63 - 1),
}
_LOB = {"text", "ntext", "image", "xml"}
_TYPE_RE = re.compile(r"^\s*([a-z0-9]+)\s*(?:\(\s*(max|\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*$", re.I)


@dataclass(frozen=True)
class SqlType:
    """A column type in SQL Server's vocabulary, e.g. nvarchar(50), decimal(12,2)."""

    base: str
    length: int | None = None  # None = default, -1 = max
    precision: int | None = None
    scale: int | None = None

    @property
    def kind(self) -> str:
        return _BASES[self.base]

    @property
    def is_lob(self) -> bool:
        """text/image-like columns: XCALL before images of these are NULL."""
        return self.base in _LOB or self.length == -1

    @property
    def int_range(self) -> tuple[int, int] | None:
        return _INT_RANGES.get(self.base)

    def __str__(self) -> str:
        if self.precision is not None:
            if self.scale is not None:
                return f"{self.base}({self.precision},{self.scale})"
            return f"{self.base}({self.precision})"
        if self.length is not None:
            return f"{self.base}({'max' if self.length == -1 else self.length})"
        return self.base


def parse_type(text: str) -> SqlType:
    m = _TYPE_RE.match(text)
    if not m:
        raise ConfigError(f"unreadable column type {text!r}")
    base, a, b = m.group(1).lower(), m.group(2), m.group(3)
    if base not in _BASES:
        raise ConfigError(f"unknown column type {text!r} (known: {', '.join(sorted(_BASES))})")
    kind = _BASES[base]
    if kind == "decimal" and base in ("decimal", "numeric"):
        precision = int(a) if a and a != "max" else 18
        scale = int(b) if b else 0
        if not 1 <= precision <= 38 or not 0 <= scale <= precision:
            raise ConfigError(f"bad precision/scale in {text!r}")
        return SqlType(base, precision=precision, scale=scale)
    if base == "money":
        return SqlType(base, precision=19, scale=4)
    if base == "smallmoney":
        return SqlType(base, precision=10, scale=4)
    if base in ("datetime2", "time", "datetimeoffset"):
        return SqlType(base, precision=int(a) if a else 7)
    if base in ("char", "varchar", "nchar", "nvarchar", "binary", "varbinary"):
        if b:
            raise ConfigError(f"{base} takes one length, not two: {text!r}")
        length = -1 if a and a.lower() == "max" else (int(a) if a else 1)
        return SqlType(base, length=length)
    if a:
        raise ConfigError(f"{base} takes no length: {text!r}")
    return SqlType(base)


@dataclass(frozen=True)
class Column:
    name: str
    type: SqlType
    nullable: bool = True
    identity: bool = False
    computed: bool = False  # computed columns are not replicated


class Syntax(str, enum.Enum):
    """How an operation is delivered (seed 003: CALL, SCALL, MCALL, XCALL, SQL statement, NONE)."""

    CALL = "CALL"
    SCALL = "SCALL"
    MCALL = "MCALL"
    XCALL = "XCALL"
    SQL = "SQL"
    NONE = "NONE"


# How generated procedures are written: as SQL Server 2016 and later generate them (one
# parameter per line, @primarykey_text, sp_MSreplraiserror with the table and key), or the
# documented older form (one-line parameter list, bare ``exec sp_MSreplraiserror 20598``).
PROC_TEMPLATES = ("2016", "legacy")

_ALLOWED = {
    "insert": {Syntax.CALL, Syntax.SQL, Syntax.NONE},
    "update": {Syntax.CALL, Syntax.SCALL, Syntax.MCALL, Syntax.XCALL, Syntax.SQL, Syntax.NONE},
    "delete": {Syntax.CALL, Syntax.XCALL, Syntax.SQL, Syntax.NONE},
}


@dataclass(frozen=True)
class Delivery:
    """The call syntax of one operation and, for a custom procedure, its name."""

    syntax: Syntax
    procedure: str | None = None  # None: the default sp_MS*_ name

    @staticmethod
    def parse(op: str, text: str) -> Delivery:
        """'SCALL', 'CALL sp_MyUpd', 'XCALL dbo.my_del', 'SQL', 'NONE'."""
        parts = text.split(None, 1)
        if not parts:
            raise ConfigError(f"empty delivery for {op}")
        try:
            syntax = Syntax(parts[0].upper())
        except ValueError:
            raise ConfigError(
                f"{op}: unknown call syntax {parts[0]!r} (one of {', '.join(s.value for s in Syntax)})"
            ) from None
        if syntax not in _ALLOWED[op]:
            raise ConfigError(f"{op}: {syntax.value} is not allowed for {op} (seed 003)")
        proc = parts[1].strip() if len(parts) > 1 else None
        if proc and syntax in (Syntax.SQL, Syntax.NONE):
            raise ConfigError(f"{op}: {syntax.value} takes no procedure name")
        return Delivery(syntax, proc)


@dataclass(frozen=True)
class Article:
    schema: str
    table: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    insert: Delivery = field(default_factory=lambda: Delivery(Syntax.CALL))
    update: Delivery = field(default_factory=lambda: Delivery(Syntax.SCALL))
    delete: Delivery = field(default_factory=lambda: Delivery(Syntax.CALL))
    # Constraints the subscriber has besides the primary key (a unique index, a foreign key
    # added at the subscriber): they create ordering hazards, and writeset partitioning
    # treats their values as keys. references: (columns, parent article, parent columns).
    unique: tuple[tuple[str, ...], ...] = ()
    references: tuple[tuple[tuple[str, ...], str, tuple[str, ...]], ...] = ()
    # Where the apply procedures live and how their text is laid out. None: the subscriber's
    # default schema, as SQL Server creates them (``create procedure [sp_MSins_...]``, in the
    # agent user's default schema, dbo unless the subscription says otherwise; on PostgreSQL
    # the first schema of the search_path); an unqualified custom procedure resolves there too.
    proc_schema: str | None = None
    proc_template: str = "2016"  # PROC_TEMPLATES: SQL Server 2016+'s text, or the documented older one

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        if self.proc_template not in PROC_TEMPLATES:
            raise ConfigError(
                f"article {self.name}: procedure template {self.proc_template!r} "
                f"(one of {', '.join(PROC_TEMPLATES)})"
            )
        if self.proc_schema == "":
            raise ConfigError(f"article {self.name}: empty procedure schema")
        if not self.columns:
            raise ConfigError(f"article {self.name}: no columns")
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ConfigError(f"article {self.name}: duplicate columns {sorted(dup)}")
        if not self.key:
            raise ConfigError(f"article {self.name}: no key columns (replication needs a primary key)")
        for k in self.key:
            if k not in names:
                raise ConfigError(f"article {self.name}: key column {k!r} is not a column")

    @property
    def name(self) -> str:
        """Qualified name as the change stream names it: schema.table."""
        return f"{self.schema}.{self.table}"

    @cached_property
    def replicated(self) -> tuple[Column, ...]:
        """Columns that travel (computed columns never do)."""
        return tuple(c for c in self.columns if not c.computed)

    @cached_property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.replicated)

    @cached_property
    def key_columns(self) -> tuple[Column, ...]:
        by_name = {c.name: c for c in self.columns}
        return tuple(by_name[k] for k in self.key)

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    def delivery(self, op: str) -> Delivery:
        return {"I": self.insert, "U": self.update, "D": self.delete}[op]
