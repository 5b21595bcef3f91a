"""How the T-SQL dialects read rows sent as one JSON text (set-based apply and the snapshot
load, ``sql/tsql/set_apply.sql.j2`` and ``bulk_insert.sql.j2``): OPENJSON ... WITH, the type
each member is read as, its path, and the value the column takes.

:class:`OpenJson` is a base of :class:`applier.dialects.tsql.TsqlDialect`, as
:class:`applier.dialects.schema.SchemaStatements` is of every dialect: the few Dialect methods
these need are declared below and implemented there; an engine that reads JSON otherwise
(:class:`applier.dialects.babelfish.BabelfishDialect`) sets the flags below.
"""

from __future__ import annotations

from typing import Any, ClassVar

from applier.articles import Article, SqlType


def _json_escaped(ch: str) -> str:
    """``ch`` in a JSON string: itself if a letter, a digit or _, else \\uXXXX (a UTF-16
    surrogate pair beyond the Basic Multilingual Plane)."""
    if ch.isalnum() or ch == "_":
        return ch
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


class OpenJson:
    """A T-SQL dialect's reading of JSON rows (see the module's docstring)."""

    # OPENJSON ... WITH (c int N'$.c'): a path may be a Unicode literal (the dialect's flag).
    JSON_PATH_UNICODE: ClassVar[bool]

    # -- what the reading needs from the dialect (implemented by Dialect) --------------
    def quote(self, ident: str) -> str:
        raise NotImplementedError

    def literal(self, text: str) -> str:
        raise NotImplementedError

    def type_sql(self, t: SqlType) -> str:
        raise NotImplementedError

    # The type OPENJSON ... WITH reads a member as where the column's own type cannot read the
    # value as applier encodes it (applier.values): bytes are base64 text, which OPENJSON decodes
    # into varbinary; datetime and smalldatetime refuse text with more than three fractional
    # digits (datetime2 reads all six, then rounds to the column as a bound value does); text,
    # ntext, image, xml and hierarchyid are read as the text or bytes they convert from.
    JSON_READ_TYPES: ClassVar[dict[str, str]] = {
        "binary": "varbinary(max)",
        "varbinary": "varbinary(max)",
        "image": "varbinary(max)",
        "timestamp": "varbinary(max)",
        "rowversion": "varbinary(max)",
        "text": "varchar(max)",
        "ntext": "nvarchar(max)",
        "xml": "nvarchar(max)",
        "hierarchyid": "nvarchar(4000)",
        "datetime": "datetime2(7)",
        "smalldatetime": "datetime2(7)",
    }
    # A table variable's column for a type it cannot hold (the deprecated LOB types).
    HELD_TYPES: ClassVar[dict[str, str]] = {
        "text": "varchar(max)",
        "ntext": "nvarchar(max)",
        "image": "varbinary(max)",
    }

    # How a base64 member read as text becomes bytes, where OPENJSON ... WITH does not decode
    # base64 into varbinary itself ({}: the member; None: it does, as SQL Server's does).
    JSON_BASE64_DECODE: ClassVar[str | None] = None

    def json_type(self, t: SqlType) -> str:
        """The type OPENJSON ... WITH reads a column's JSON member as."""
        if self.JSON_BASE64_DECODE and t.kind == "bytes":
            return "nvarchar(max)"
        return self.JSON_READ_TYPES.get(t.base) or self.type_sql(t)

    # Whether OPENJSON ... WITH gives a string member's text unescaped, as SQL Server does.
    # Where it does not (Babelfish 4.3 returns x\"y for "x\"y", even for \u0022), the row's
    # object is read too (AS JSON) and a string member is taken from it by JSON_TEXT_SQL ({row}:
    # the object, {name}: the member's name as a literal).
    JSON_TEXT_UNESCAPED: ClassVar[bool] = True
    JSON_TEXT_SQL: ClassVar[str] = ""

    def json_value(self, alias: str, c: dict[str, Any], row: str) -> str:
        """The value of column ``c`` (a template column) in the OPENJSON row ``alias`` as the
        column takes it; ``row``: the member holding the row's object where that is read."""
        t: SqlType = c["col"].type
        if self.JSON_BASE64_DECODE and t.kind == "bytes":
            return self.JSON_BASE64_DECODE.format(f"{alias}.{c['q']}")
        if not self.JSON_TEXT_UNESCAPED and t.kind == "str":
            return self.JSON_TEXT_SQL.format(row=f"{alias}.{self.quote(row)}", name=self.literal(c["name"]))
        return f"{alias}.{c['q']}"

    def json_row_name(self, article: Article) -> str:
        """The OPENJSON member holding a row's whole object: a name no column has."""
        name = "_row"
        while name in article.column_names:
            name = "_" + name
        return name

    def held_type(self, t: SqlType) -> str:
        """A set procedure's table variable column for a column of type t."""
        return self.HELD_TYPES.get(t.base) or self.type_sql(t)

    def json_path(self, name: str) -> str:
        """The JSON path of the image member ``name``: ``$."name"``, the name written as a JSON
        string ("JSON Path expressions": a key with special characters is quoted), so any
        column name reaches its member; the path travels as a literal (:meth:`literal`)."""
        import json

        return '$."' + json.dumps(name, ensure_ascii=False)[1:-1] + '"'

    def json_path_literal(self, name: str) -> str:
        """:meth:`json_path` as the literal OPENJSON ... WITH takes: N'...' (any name), or '...'
        where the engine takes no Unicode literal there (:attr:`JSON_PATH_UNICODE`)."""
        if self.JSON_PATH_UNICODE:
            return self.literal(self.json_path(name))
        # There (Babelfish) a space or a quote in a path also ends the engine's jsonpath text
        # early: every character but a letter, a digit or _ travels as its JSON escape.
        return "'$.\"" + "".join(_json_escaped(ch) for ch in name) + "\"'"
