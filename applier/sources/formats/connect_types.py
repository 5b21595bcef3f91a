"""Kafka Connect values as Debezium writes them, read into canonical values, and an event's images.

With the schema envelope each field is read by its schema: ``io.debezium.time.Date``
(days since 1970-01-01), ``Timestamp`` (ms), ``MicroTimestamp`` (µs), ``NanoTimestamp`` (ns),
``ZonedTimestamp`` (ISO text), ``Time`` (ms), ``MicroTime`` (µs), ``NanoTime`` (ns), ``ZonedTime``,
Kafka Connect's ``Date``/``Time``/``Timestamp``, ``Decimal`` (base64 of the big-endian two's
complement unscaled value, ``parameters.scale``), ``VariableScaleDecimal`` (``{"scale",
"value"}``), ``bytes`` (base64), ``Bits``, and text types (``Uuid``, ``Json``, ``Xml``, ``Enum``).
Without the schema a value is read by its article column's kind:

* dates: a number of days since 1970-01-01, or ISO text;
* datetimes: ISO text, or an integer since 1970-01-01 whose magnitude gives its unit: below
  10^14 milliseconds, below 10^17 microseconds, otherwise nanoseconds. Microsecond and
  nanosecond values within about 3 years of 1970 (between 1966-10 and 1973-03) are misread;
  the schema envelope has no such ambiguity;
* times: ISO text, or an integer whose unit is the one Debezium's adaptive time precision
  gives the column's SQL Server type: time(0..3) milliseconds, time(4..6) microseconds, time(7)
  nanoseconds (a time of day's magnitude says nothing about its unit);
* decimals: a number, a decimal text (``decimal.handling.mode=string``), ``{"scale","value"}``,
  or base64 of the unscaled value (``precise``, the default) scaled by the column's scale. A text
  that reads as a decimal number is taken as one: base64 that is only digits (``"1234"``) is
  read as the number 1234. Use the envelope or ``decimal.handling.mode=string`` to avoid this;
* bytes: base64 text; everything else as JSON gives it.

A value the capture left out as unchanged (``UNAVAILABLE``: Debezium's placeholder) is reported
to the caller, which takes it from the row's previous image.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from applier.articles import Article, Column
from applier.errors import InputError
from applier.values import ValueError_, encoder

Decoder = Callable[[Any], Any]

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)
_DECIMAL_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
# Debezium's unavailable.value.placeholder (PostgreSQL's unchanged TOASTed values, Oracle's LOBs),
# as text and, for bytes columns, base64 of its bytes.
UNAVAILABLE = ("__debezium_unavailable_value", "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==")


class _Bad(Exception):
    """A value that cannot be read; the message says why."""


# -- values ----------------------------------------------------------------------------------
def _unscaled(text: Any, scale: int) -> decimal.Decimal:
    if not isinstance(text, str):
        raise _Bad(f"expected base64 of a decimal's unscaled value, got {shown(text)}")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise _Bad(f"expected a decimal (a number, decimal text or base64), got {shown(text)}") from None
    return decimal.Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-scale)


def _decimal(v: Any, scale: int) -> Any:
    if isinstance(v, str):
        if _DECIMAL_TEXT.fullmatch(v):
            return decimal.Decimal(v)
        return _unscaled(v, scale)
    if isinstance(v, dict):
        return _variable_decimal(v)
    if isinstance(v, float):
        return decimal.Decimal(repr(v))
    return v


def _any_decimal(v: Any) -> Any:
    return _variable_decimal(v) if isinstance(v, dict) else _decimal(v, 0)


def _variable_decimal(v: Any) -> decimal.Decimal:
    if not isinstance(v, dict) or "value" not in v:
        raise _Bad(f"expected a VariableScaleDecimal {{scale, value}}, got {shown(v)}")
    scale = v.get("scale")
    if isinstance(scale, bool) or not isinstance(scale, int):
        raise _Bad(f"VariableScaleDecimal scale must be an integer, got {shown(scale)}")
    return _unscaled(v["value"], scale)


def _bytes(v: Any) -> Any:
    if not isinstance(v, str):
        return v
    try:
        return base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        raise _Bad(f"expected base64 text, got {shown(v)}") from None


def _date(v: Any) -> Any:
    if isinstance(v, int) and not isinstance(v, bool):
        return _EPOCH_DATE + dt.timedelta(days=v)
    if isinstance(v, str):
        try:
            return (
                dt.date.fromisoformat(v[:10]) if len(v) > 10 and v[10] in "T " else dt.date.fromisoformat(v)
            )
        except ValueError:
            raise _Bad(f"expected a date (days since 1970-01-01 or ISO text), got {shown(v)}") from None
    return v


def _since_epoch(v: int, unit: str) -> dt.datetime:
    if unit == "ms":
        return _EPOCH + dt.timedelta(milliseconds=v)
    if unit == "us":
        return _EPOCH + dt.timedelta(microseconds=v)
    return _EPOCH + dt.timedelta(microseconds=v // 1000)


def _unit_by_magnitude(v: int) -> str:
    a = abs(v)
    return "ms" if a < 10**14 else "us" if a < 10**17 else "ns"


def _datetime(unit: str | None) -> Decoder:
    return _DATETIMES[unit]


def _make_datetime(unit: str | None) -> Decoder:
    def dec(v: Any) -> Any:
        if isinstance(v, int) and not isinstance(v, bool):
            return _since_epoch(v, unit or _unit_by_magnitude(v))
        if isinstance(v, str):
            try:
                return dt.datetime.fromisoformat(v)
            except ValueError:
                raise _Bad(f"expected a datetime (ISO text or a number since 1970), got {shown(v)}") from None
        return v

    return dec


def _time(unit: str) -> Decoder:
    return _TIMES[unit]


def _make_time(unit: str) -> Decoder:
    def dec(v: Any) -> Any:
        if isinstance(v, int) and not isinstance(v, bool):
            us = v * 1000 if unit == "ms" else v if unit == "us" else v // 1000
            if not 0 <= us < 86_400_000_000:
                raise _Bad(f"a time of day in {unit} must be 0..24h, got {v}")
            return (_EPOCH + dt.timedelta(microseconds=us)).time()
        if isinstance(v, str):
            try:
                t = dt.time.fromisoformat(v[:-1] if v.endswith("Z") else v)
            except ValueError:
                raise _Bad(f"expected a time (ISO text or a number), got {shown(v)}") from None
            return t.replace(tzinfo=None)
        return v

    return dec


_DATETIMES: dict[str | None, Decoder] = {u: _make_datetime(u) for u in (None, "ms", "us", "ns")}
_TIMES: dict[str, Decoder] = {u: _make_time(u) for u in ("ms", "us", "ns")}
_UNIT_US = {"ms": 1000, "us": 1}


def converter(col: Column, dec: Decoder) -> Callable[[Any], Any]:
    """decoder + canonical encoder of one column, with short paths for the common Debezium
    encodings (same results as ``encode(col, dec(v))``)."""
    kind = col.type.kind
    enc = encoder(col)
    if kind == "bool":

        def conv_bool(v: Any) -> Any:
            return v if type(v) is bool else enc(dec(v))

        return conv_bool
    if dec is _date and kind == "date":

        def conv_date(v: Any) -> Any:
            if type(v) is int:
                return (_EPOCH_DATE + dt.timedelta(days=v)).isoformat()
            return enc(dec(v))

        return conv_date
    for unit, us in _UNIT_US.items():
        if dec is _DATETIMES[unit] and kind == "datetime":

            def conv_datetime(v: Any, us: int = us) -> Any:
                if type(v) is int:
                    return (_EPOCH + dt.timedelta(microseconds=v * us)).isoformat(timespec="microseconds")
                return enc(dec(v))

            return conv_datetime
    if dec is _same:
        return enc

    def conv(v: Any) -> Any:
        return enc(dec(v))

    return conv


def _bits(col: Column) -> Decoder:
    def dec(v: Any) -> Any:
        raw = _bytes(v)
        if not isinstance(raw, bytes):
            return raw
        if col.type.kind == "bool":
            return any(raw)
        if col.type.kind == "int":
            return int.from_bytes(raw, "little")
        return raw

    return dec


def _float(v: Any) -> Any:
    if isinstance(v, str):
        if not _DECIMAL_TEXT.fullmatch(v):
            raise _Bad(f"expected a number, got {shown(v)}")
        return decimal.Decimal(v)
    return v


def _same(v: Any) -> Any:
    return v


def _time_unit(col: Column) -> str:
    """Debezium's adaptive time precision for SQL Server's time(p)."""
    p = col.type.precision if col.type.precision is not None else 7
    return "ms" if p <= 3 else "us" if p <= 6 else "ns"


def kind_decoder(col: Column) -> Decoder:
    """A JSON value without its schema -> the Python value for ``encode``, by the column's kind."""
    kind = col.type.kind
    if kind == "decimal":
        scale = col.type.scale or 0
        return lambda v: _decimal(v, scale)
    if kind == "bytes":
        return _bytes
    if kind == "date":
        return _date
    if kind in ("datetime", "datetimeoffset"):
        return _datetime(None)
    if kind == "time":
        return _time(_time_unit(col))
    if kind == "float":
        return _float
    return _same


_SCHEMA_NAMES: dict[str, Callable[[Column, Mapping[str, Any]], Decoder]] = {
    "io.debezium.time.Date": lambda c, p: _date,
    "org.apache.kafka.connect.data.Date": lambda c, p: _date,
    "io.debezium.time.Timestamp": lambda c, p: _datetime("ms"),
    "org.apache.kafka.connect.data.Timestamp": lambda c, p: _datetime("ms"),
    "io.debezium.time.MicroTimestamp": lambda c, p: _datetime("us"),
    "io.debezium.time.NanoTimestamp": lambda c, p: _datetime("ns"),
    "io.debezium.time.ZonedTimestamp": lambda c, p: _datetime(None),
    "io.debezium.time.Time": lambda c, p: _time("ms"),
    "org.apache.kafka.connect.data.Time": lambda c, p: _time("ms"),
    "io.debezium.time.MicroTime": lambda c, p: _time("us"),
    "io.debezium.time.NanoTime": lambda c, p: _time("ns"),
    "io.debezium.time.ZonedTime": lambda c, p: _time("us"),
    "org.apache.kafka.connect.data.Decimal": lambda c, p: _connect_decimal(p),
    "io.debezium.data.VariableScaleDecimal": lambda c, p: _any_decimal,
    "io.debezium.data.Bits": lambda c, p: _bits(c),
    "io.debezium.data.Uuid": lambda c, p: _same,
    "io.debezium.data.Json": lambda c, p: _same,
    "io.debezium.data.Xml": lambda c, p: _same,
    "io.debezium.data.Enum": lambda c, p: _same,
    "io.debezium.data.EnumSet": lambda c, p: _same,
    "io.debezium.time.Year": lambda c, p: _same,
}


def _connect_decimal(params: Mapping[str, Any]) -> Decoder:
    try:
        scale = int(params.get("scale", 0))
    except (TypeError, ValueError):
        scale = 0

    def dec(v: Any) -> Any:
        # Kafka Connect's JSON converter writes a Decimal as base64 of its unscaled bytes
        # (decimal.format BASE64, the default) or as a JSON number (NUMERIC): a string is always
        # base64, even one that reads as a number ("+200" is -2997.24 at scale 2).
        if isinstance(v, str):
            return _unscaled(v, scale)
        return _decimal(v, scale)

    return dec


def schema_decoder(col: Column, field_schema: Mapping[str, Any] | None) -> Decoder:
    """A JSON value with its Kafka Connect field schema -> the Python value for ``encode``."""
    if field_schema is None:
        return kind_decoder(col)
    name = field_schema.get("name")
    if isinstance(name, str) and name in _SCHEMA_NAMES:
        params = field_schema.get("parameters")
        return _SCHEMA_NAMES[name](col, params if isinstance(params, Mapping) else {})
    if field_schema.get("type") == "bytes":
        if col.type.kind == "decimal":
            scale = col.type.scale or 0
            return lambda v: _unscaled(v, scale)
        return _bytes
    return kind_decoder(col)


def shown(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


# -- images ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Image:
    """How the images of one article are read (with one schema, or without): JSON field ->
    (column, decoder + canonical encoder)."""

    article: Article
    fields: Mapping[str, tuple[Column, Callable[[Any], Any]]]

    def read(
        self, raw: Any, where: str, place: str, *, before: bool, unavailable: list[str] | None = None
    ) -> dict[str, Any]:
        """The image in canonical encoding. Values Debezium marks unavailable are left out (a
        before image is partial) or, with ``unavailable``, their columns listed there."""
        if type(raw) is dict:
            out: dict[str, Any] = {}
            fields = self.fields
            try:  # the common case, tight; anything else (or any error) read again carefully
                for name, v in raw.items():
                    col, conv = fields[name]
                    if v is None:
                        if not col.nullable:
                            break
                        out[col.name] = None
                    elif type(v) is str and v in UNAVAILABLE:
                        break
                    else:
                        out[col.name] = conv(v)
                else:
                    return out
            except Exception:  # noqa: BLE001, S110 - _careful says what it was
                pass
        return self._careful(raw, where, place, before=before, unavailable=unavailable)

    def _careful(
        self, raw: Any, where: str, place: str, *, before: bool, unavailable: list[str] | None = None
    ) -> dict[str, Any]:
        if not isinstance(raw, dict):
            raise InputError(f"{place}: {where}: expected an object of column values, got {shown(raw)}")
        out: dict[str, Any] = {}
        fields = self.fields
        for name, v in raw.items():
            f = fields.get(name)
            if f is None:
                f = self._fold(name)
                if f is None:
                    raise InputError(
                        f"{place}: {where}.{name}: not a column of article {self.article.name} "
                        f"(columns: {', '.join(self.article.column_names)})"
                    )
            col, conv = f
            if type(v) is str and v in UNAVAILABLE:
                if before:
                    continue
                if unavailable is None:
                    raise InputError(f"{place}: {where}.{name}: {v} (a value the capture does not hold)")
                unavailable.append(col.name)
                continue
            if v is None:
                if not col.nullable:
                    if before:
                        continue  # a partial before image (PostgreSQL's default replica identity)
                    raise InputError(f"{place}: {where}.{name}: NULL in NOT NULL column {col.name!r}")
                out[col.name] = None
                continue
            try:
                out[col.name] = conv(v)
            except ValueError_ as e:
                raise InputError(f"{place}: {where}.{name}: {e}") from None
            except _Bad as e:
                raise InputError(f"{place}: {where}.{name}: column {col.name!r} ({col.type}): {e}") from None
            except (OverflowError, ValueError, TypeError, decimal.InvalidOperation) as e:
                raise InputError(
                    f"{place}: {where}.{name}: column {col.name!r} ({col.type}): cannot read {shown(v)}: {e}"
                ) from None
        return out

    def _fold(self, name: str) -> tuple[Column, Callable[[Any], Any]] | None:
        low = name.lower()
        found = [f for k, f in self.fields.items() if k.lower() == low]
        return found[0] if len(found) == 1 else None


def make_image(article: Article, schemas: Mapping[str, Mapping[str, Any]] | None) -> Image:
    """Readers of an article's columns: by the field schemas given (name -> schema), else by kind."""
    fields: dict[str, tuple[Column, Callable[[Any], Any]]] = {}
    for col in article.replicated:
        fs = None
        if schemas is not None:
            fs = schemas.get(col.name)
            if fs is None:
                low = col.name.lower()
                fs = next((s for k, s in schemas.items() if k.lower() == low), None)
        fields[col.name] = (col, converter(col, schema_decoder(col, fs)))
    return Image(article, fields)


def value_fields(schema: Any) -> dict[str, dict[str, Any]] | None:
    """The envelope schema -> {column: field schema} of its before/after struct (None: none)."""
    if not isinstance(schema, dict):
        return None
    out: dict[str, dict[str, Any]] = {}
    for f in schema.get("fields") or ():
        if isinstance(f, dict) and f.get("field") in ("before", "after"):
            for c in f.get("fields") or ():
                if isinstance(c, dict) and isinstance(c.get("field"), str):
                    out.setdefault(c["field"], c)
    return out or None
