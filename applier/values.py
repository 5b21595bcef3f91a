"""Values: one canonical, JSON-safe encoding of every supported column type.

Images (before/after) travel through Spark as JSON text of {column: encoded value}. The same
functions encode generated values, decode change files (with errors naming the column),
turn encoded values into parameters to bind, and normalise rows read back from a target,
so that a value compares equal to itself whichever way it came.

Encoding by kind: int -> JSON integer; bool -> true/false; decimal -> string with the
column's scale ("12.50"); float -> JSON number; str -> string; bytes -> base64 string;
date/time/datetime -> ISO 8601 text (datetime and time to microseconds); datetimeoffset -> its
instant in UTC, the same text with +00:00 ("2024-03-10T01:59:59-05:00" is
"2024-03-10T06:59:59.000000+00:00"); uuid -> lower-case text; NULL -> null.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
import json
import math
import struct
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from applier.articles import Article, Column, SqlType


class ValueError_(ValueError):
    """A value that does not fit its column type; the message says why. ``column`` and
    ``detail`` (the message without the column: "out of range 0..255, got 300") let a caller
    place it (verify names the article and key)."""

    def __init__(self, message: str, column: Column | None = None, detail: str | None = None) -> None:
        super().__init__(message)
        self.column = column
        self.detail = detail if detail is not None else message


def _fail(col: Column, value: object, why: str) -> ValueError_:
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    detail = f"{why}, got {shown}"
    return ValueError_(f"column {col.name!r} ({col.type}): {detail}", col, detail)


def encode(col: Column, value: Any) -> Any:
    """Python value (from a generator or a driver) -> canonical JSON-safe value."""
    if value is None:
        return None
    t = col.type
    kind = t.kind
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, (str, decimal.Decimal, float)) and _is_integral(value):
                value = int(value)
            else:
                raise _fail(col, value, "expected an integer")
        lo_hi = t.int_range
        if lo_hi and not lo_hi[0] <= value <= lo_hi[1]:
            raise _fail(col, value, f"out of range {lo_hi[0]}..{lo_hi[1]}")
        return value
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value in ("0", "1"):
            return value == "1"
        raise _fail(col, value, "expected a boolean")
    if kind == "decimal":
        try:
            d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
        except (decimal.InvalidOperation, ValueError):
            raise _fail(col, value, "expected a decimal number") from None
        if isinstance(value, bool) or not d.is_finite():
            raise _fail(col, value, "expected a finite decimal number")
        scale = t.scale or 0
        precision = t.precision if t.precision is not None else _MAX_PRECISION
        # Refused before quantize: 1e400 would need 400 digits (InvalidOperation beyond the context's).
        if d != 0 and d.adjusted() >= precision - scale:
            raise _fail(col, value, f"does not fit precision {precision} (scale {scale})")
        q = d.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_EVEN, context=_DECIMALS)
        if len(q.as_tuple().digits) > precision and q != 0:
            raise _fail(col, value, f"does not fit precision {precision} (scale {scale})")
        return format(q, "f")
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal)):
            raise _fail(col, value, "expected a number")
        f = float(value)
        if math.isnan(f) or math.isinf(f):
            raise _fail(col, value, "expected a finite number")
        if t.base == "real":
            try:
                f = struct.unpack("f", struct.pack("f", f))[0]
            except OverflowError:  # older Pythons; newer ones give inf
                f = math.inf
            if math.isinf(f):  # stored as Infinity: not the value given
                raise _fail(col, value, "out of range for real (largest magnitude 3.4028235e+38)")
        return f
    if kind == "str":
        if not isinstance(value, str):
            raise _fail(col, value, "expected text")
        if t.length is not None and t.length > 0 and len(value) > t.length:
            raise _fail(col, value, f"longer than {t.length} characters")
        if t.base in ("char", "nchar"):
            value = value.ljust(t.length or 1)
        return value
    if kind == "bytes":
        if isinstance(value, (bytes, bytearray, memoryview)):
            b = bytes(value)
        else:
            raise _fail(col, value, "expected bytes")
        if t.length is not None and t.length > 0 and len(b) > t.length:
            raise _fail(col, value, f"longer than {t.length} bytes")
        return base64.b64encode(b).decode("ascii")
    if kind == "uuid":
        try:
            return str(uuid.UUID(str(value)))
        except ValueError:
            raise _fail(col, value, "expected a uniqueidentifier") from None
    if kind == "date":
        if isinstance(value, dt.datetime):
            value = value.date()
        if not isinstance(value, dt.date):
            raise _fail(col, value, "expected a date")
        return value.isoformat()
    if kind == "datetime":
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            value = dt.datetime(value.year, value.month, value.day)
        if not isinstance(value, dt.datetime):
            raise _fail(col, value, "expected a datetime")
        value = value.replace(tzinfo=None)
        bounds = _DATETIME_RANGES.get(t.base)
        if bounds and not bounds[0] <= value <= bounds[1]:
            raise _fail(col, value.isoformat(), f"out of range for {t.base} ({bounds[0]} to {bounds[1]})")
        return value.isoformat(timespec="microseconds")
    if kind == "time":
        if isinstance(value, str):  # ISO 8601 text (the value bound as a parameter)
            try:
                value = dt.time.fromisoformat(value)
            except ValueError:
                raise _fail(col, value, "expected a time as ISO 8601 text") from None
        if not isinstance(value, dt.time):
            raise _fail(col, value, "expected a time")
        if value.tzinfo is not None:
            raise _fail(col, value, "expected a time of day without an offset")
        return value.isoformat(timespec="microseconds")
    if kind == "datetimeoffset":
        if isinstance(value, str):  # ISO 8601 text with its offset (PostgreSQL's read-back)
            try:
                value = dt.datetime.fromisoformat(value)
            except ValueError:
                raise _fail(col, value, "expected ISO 8601 text with an offset") from None
        if not isinstance(value, dt.datetime) or value.tzinfo is None:
            raise _fail(col, value, "expected a datetime with offset")
        # An instant, in UTC: a subscriber keeps the instant, not always the offset (PostgreSQL
        # none, reading back UTC), so one instant is one text whatever offset it came with
        # (-05:00 and +00:00 of the same moment compared as different rows before).
        try:
            return value.astimezone(dt.timezone.utc).isoformat(timespec="microseconds")
        except OverflowError:
            raise _fail(col, value, "its instant in UTC is outside years 1 to 9999") from None
    raise _fail(col, value, f"unsupported kind {kind}")


def encoder(col: Column) -> Callable[[Any], Any]:
    """``encode`` for one column with the common cases decided once: the value a driver
    returns for the column's own type takes a short path (same result as ``encode``,
    tests/unit/test_values.py checks it), anything else goes through ``encode``."""
    t = col.type
    kind = t.kind

    def slow(v: Any) -> Any:
        return encode(col, v)

    if kind == "int":
        lo_hi = t.int_range

        def enc_int(v: Any) -> Any:
            if type(v) is int and (lo_hi is None or lo_hi[0] <= v <= lo_hi[1]):
                return v
            return slow(v)

        return enc_int
    if kind == "str" and t.base not in ("char", "nchar"):
        limit = t.length if t.length is not None and t.length > 0 else None

        def enc_str(v: Any) -> Any:
            if type(v) is str and (limit is None or len(v) <= limit):
                return v
            return slow(v)

        return enc_str
    if kind == "decimal":
        exponent = -(t.scale or 0)
        precision = t.precision

        def enc_dec(v: Any) -> Any:
            if type(v) is decimal.Decimal and v.is_finite():
                tup = v.as_tuple()
                if tup.exponent == exponent and (precision is None or len(tup.digits) <= precision):
                    return format(v, "f")
            return slow(v)

        return enc_dec
    return slow


# SQL Server's ranges (datetime2 and date take years 1 to 9999, as Python does):
# https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetime-transact-sql (1753-01-01 through
# 9999-12-31, 00:00:00 through 23:59:59.997) and .../smalldatetime-transact-sql (1900-01-01
# through 2079-06-06; its largest value is 2079-06-06 23:59, seconds round to the minute).
_DATETIME_RANGES = {
    "datetime": (dt.datetime(1753, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 997000)),
    "smalldatetime": (dt.datetime(1900, 1, 1), dt.datetime(2079, 6, 6, 23, 59)),
}
_MAX_PRECISION = 38  # SQL Server's decimal
_DECIMALS = decimal.Context(prec=_MAX_PRECISION + 2)  # enough for any value that fits decimal(38, s)


def _check_text(col: Column, value: str) -> None:
    """Text a subscriber stores as it is given: no NUL (PostgreSQL refuses it and the ODBC driver
    cuts the value there) and no lone surrogate (not encodable as UTF-8)."""
    nul = value.find("\x00")
    if nul >= 0:
        raise _fail(col, value, f"NUL character (U+0000) at position {nul} (a subscriber cannot store it)")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise _fail(
            col, value, f"lone surrogate {value[e.start]!r} at position {e.start} (not Unicode text)"
        ) from None


def utf16_units(text: str) -> int:
    """The length of ``text`` in UTF-16 code units: a character beyond U+FFFF (a surrogate pair)
    counts 2. SQL Server's nchar(n)/nvarchar(n) count n this way."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def check_utf16_length(col: Column, value: Any) -> None:
    """ValueError_ when text longer than the column's n in UTF-16 code units (no length or max:
    any text fits; anything but text is not this check's)."""
    n = col.type.length
    if n is None or n <= 0 or not isinstance(value, str) or len(value) * 2 <= n:
        return
    units = utf16_units(value.rstrip(" ") if col.type.base in ("char", "nchar") else value)
    if units > n:
        raise _fail(
            col, value, f"{units} UTF-16 code units, longer than {n} (a character beyond U+FFFF counts 2)"
        )


def _is_integral(v: object) -> bool:
    try:
        d = decimal.Decimal(str(v))
    except decimal.InvalidOperation:
        return False
    return d.is_finite() and d == d.to_integral_value()


def validate_encoded(col: Column, value: Any) -> Any:
    """A value as found in a change file (JSON) -> canonical encoding, or ValueError_."""
    if value is None:
        if not col.nullable:
            raise _fail(col, value, "NULL in a NOT NULL column")
        return None
    kind = col.type.kind
    if kind == "int" and isinstance(value, float):
        raise _fail(col, value, "expected an integer")
    if kind == "int" and isinstance(value, str):
        raise _fail(col, value, "expected an integer")
    if kind == "decimal" and not isinstance(value, (str, int, float)):
        raise _fail(col, value, "expected a decimal (string or number)")
    if kind == "str" and isinstance(value, str):
        _check_text(col, value)
    if kind == "bytes":
        if not isinstance(value, str):
            raise _fail(col, value, "expected base64 text")
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise _fail(col, value, "expected base64 text") from None
        return encode(col, raw)
    if kind in ("date", "datetime", "time", "datetimeoffset"):
        if not isinstance(value, str):
            raise _fail(col, value, "expected ISO 8601 text")
        try:
            parsed: Any
            if kind == "date":
                parsed = dt.date.fromisoformat(value)
            elif kind == "time":
                parsed = dt.time.fromisoformat(value)
            else:
                parsed = dt.datetime.fromisoformat(value)
        except ValueError:
            raise _fail(col, value, "expected ISO 8601 text") from None
        return encode(col, parsed)
    return encode(col, value)


_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "decimal": decimal.Decimal,
    "bytes": base64.b64decode,
    "date": dt.date.fromisoformat,
    "datetime": dt.datetime.fromisoformat,
}


def param_converter(t: SqlType) -> Callable[[Any], Any] | None:
    """How a canonical value of type t becomes the Python value to bind, decided once per
    column (None: it binds as it is). Planning calls this per column, not per value.

    A datetimeoffset binds as its text: pyodbc binds a datetime without its tzinfo (a
    SQL_TYPE_TIMESTAMP), which PostgreSQL then reads in the session's TimeZone and SQL Server
    as +00:00, another instant; the ISO 8601 text keeps the instant (and SQL Server the offset).
    A time binds as its text too: pyodbc binds a ``datetime.time`` as a SQL_TIME_STRUCT, which
    has no fraction of a second (23:59:59.999999 was stored as 23:59:59, measured on psqlODBC);
    ``'23:59:59.999999'`` converts to PostgreSQL's time and SQL Server's time(7) exactly."""
    return _CONVERTERS.get(t.kind)


def to_param(t: SqlType, value: Any) -> Any:
    """Canonical value -> Python value to bind as a parameter."""
    f = param_converter(t)
    return value if value is None or f is None else f(value)


_compact = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def dumps_image(image: Mapping[str, Any]) -> str:
    """Canonical JSON text of an image (keys sorted, compact): equal rows, equal text."""
    return json.dumps(image, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def dumps_sorted_image(image: Mapping[str, Any]) -> str:
    """``dumps_image`` of an image whose keys are already in sorted order (no sort per row)."""
    return _compact(image)


def encode_row(article: Article, row: Mapping[str, Any]) -> dict[str, Any]:
    return {c.name: encode(c, row.get(c.name)) for c in article.replicated}


def key_text(article: Article, image: Mapping[str, Any]) -> str:
    """Normalised key of an image: JSON array of the key values in key order."""
    return _compact([image[k] for k in article.key])
