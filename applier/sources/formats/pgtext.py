"""PostgreSQL's output of values as wal2json writes them, read into canonical values.

Values are read by the article's column kind (the capture's ``columntypes`` / ``type`` is
only used to recognise ``money`` and ``bytea`` texts): numbers as JSON numbers (read
exactly, as decimals) or strings (``numeric-data-types-as-string``, wal2json 2.6 and later, and
a domain over a number in every version); booleans; bit strings (``"0101"``) into text columns;
``bytea`` as hex, with or without wal2json's ``\\x`` (``bytea_output = hex``); ``money`` as
its ``lc_monetary`` text (``"$1,234.50"``, ``"-$3.00"``); dates and timestamps in the
session's DateStyle: ISO (``2013-11-02 17:30:52.5+01``), Postgres
(``Sat Nov 02 17:30:52 2013``, dates ``02-04-2013``), SQL (``11/02/2013``) or German
(``02.11.2013``), month before day when the style leaves it ambiguous (DateStyle's default
MDY); time zones only as numeric offsets (ISO). A ``timestamptz`` is read as its instant in
UTC (``+00:00``): PostgreSQL keeps no offset, and the one in wal2json's text is the decoding
session's ``TimeZone`` (pg_recvlogical's ``PGTZ``, else the server's), not the row's. An
instant whose local text falls outside years 1..9999 (``10000-01-01 05:29:59+05:30``, or
``0001-12-31 20:29:08-03:30:52 BC``) is read as its UTC instant when that is inside them.
Refused, naming the value: BC dates, years past 9999, infinities, a time of 24:00:00, and a
number with more decimals than its column's scale (rather than rounded), and ``"NaN"``,
``"Infinity"``, ``"-Infinity"`` in a decimal or float column (SQL Server's decimal and float hold
neither). Without ``numeric-data-types-as-string`` (wal2json 2.5 has none) wal2json writes a NaN
or ±Infinity of numeric, real and double precision as null: read as NULL, since nothing in the
capture tells them from a NULL (in a NOT NULL column refused, saying so; ``applier capture`` says
which columns this can hit when the plugin lacks the option).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from typing import Any

from applier.articles import Column
from applier.catalog.pgtypes import base_name
from applier.errors import InputError
from applier.values import ValueError_, encode

# -- values ----------------------------------------------------------------------------------
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    )
}
_OFFSET = r"(?P<off>[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?|Z)?"
_TIME = r"(?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2})(?:\.(?P<f>\d+))?)?"
_ISO_TS = re.compile(rf"^(?P<y>\d{{4,}})-(?P<m>\d{{1,2}})-(?P<d>\d{{1,2}})(?:[ T]{_TIME}{_OFFSET})?$")
# Postgres style: "Sat Nov 02 17:30:52.5 2013 [TZ]" (MDY) or "Sat 02 Nov 17:30:52 2013" (DMY).
_PG_TS = re.compile(
    rf"^(?:[A-Za-z]{{3}}\s+)?(?:(?P<mon>[A-Za-z]{{3}})\s+(?P<d>\d{{1,2}})|(?P<d2>\d{{1,2}})\s+(?P<mon2>[A-Za-z]{{3}}))"
    rf"\s+{_TIME}\s+(?P<y>\d{{4,}})(?:\s+(?P<tz>\S+))?$"
)
_SQL_TS = re.compile(
    rf"^(?P<a>\d{{1,2}})(?P<sep>[-/.])(?P<b>\d{{1,2}})(?P=sep)(?P<y>\d{{4,}})(?:\s+{_TIME}{_OFFSET})?$"
)
_TIME_ONLY = re.compile(rf"^{_TIME}$")


class Bad(Exception):
    """A value text that cannot be read; the message says why."""


def _fraction(f: str | None) -> int:
    if not f:
        return 0
    return int((f + "000000")[:6])  # PostgreSQL keeps microseconds at most


def _offset(text: str | None) -> dt.tzinfo | None:
    if text is None:
        return None
    if text == "Z":
        return dt.timezone.utc
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    h, m, s = int(digits[0:2]), int(digits[2:4] or 0), int(digits[4:6] or 0)
    return dt.timezone(sign * dt.timedelta(hours=h, minutes=m, seconds=s))


_OUT_OF_RANGE = "has no equivalent at a subscriber (years 1 to 9999; BC dates and infinities are refused)"
# The Gregorian calendar repeats every 400 years (146,097 days, whole weeks): a date moved by
# 400 years keeps its month, day and leap day.
_CYCLE = 400


def read_moment(text: str, want: str) -> Any:
    """A date/timestamp text in any DateStyle -> date, naive datetime or aware datetime (an
    aware one in UTC when its local year is outside 1..9999 but its instant is not)."""
    t = text.strip()
    if t.lower() in ("infinity", "-infinity"):
        raise Bad(f"{t!r} {_OUT_OF_RANGE}")
    bc = t.endswith(" BC")
    body = t[:-3].rstrip() if bc else t
    m = _ISO_TS.match(body)
    y = mo = d = 0
    tz: dt.tzinfo | None = None
    if m:
        y, mo, d = int(m["y"]), int(m["m"]), int(m["d"])
        tz = _offset(m["off"])
    elif (m := _PG_TS.match(body)) is not None:
        mon = (m["mon"] or m["mon2"]).lower()
        if mon not in _MONTHS:
            raise Bad(f"unknown month in {t!r}")
        y, mo, d = int(m["y"]), _MONTHS[mon], int(m["d"] or m["d2"])
        if m["tz"]:
            if m["tz"].upper() in ("UTC", "GMT"):
                tz = dt.timezone.utc
            else:
                raise Bad(
                    f"time zone {m['tz']!r} in {t!r}: only numeric offsets are read "
                    "(capture with DateStyle ISO: PGOPTIONS='-c DateStyle=ISO' pg_recvlogical ...)"
                )
    elif (m := _SQL_TS.match(body)) is not None:
        a, b = int(m["a"]), int(m["b"])
        y = int(m["y"])
        mo, d = (b, a) if m["sep"] == "." else (a, b)  # German is DMY; SQL and Postgres: MDY
        tz = _offset(m["off"])
    else:
        raise Bad(f"unreadable {want} {t!r}")
    year = 1 - y if bc else y  # astronomical: 1 BC is year 0
    if want == "date" and m["H"] is not None:
        raise Bad(f"expected a date, got {t!r}")
    hour = int(m["H"] or 0)
    if hour == 24:
        raise Bad(f"{t!r}: 24:00:00 has no equivalent at a subscriber")
    if not 1 <= year <= 9999 and (want == "date" or tz is None):
        raise Bad(f"{t!r} {_OUT_OF_RANGE}")
    # An instant written with a local year outside 1..9999 (9999-12-31 23:00+00 decoded at
    # +05:30, 0001-01-01 00:00+00 at -03:30 local mean time, "... BC") may still be one a
    # subscriber holds: read it 400 years inside the range and move its UTC time back.
    shift = 0 if 1 <= year <= 9999 else (_CYCLE if year < 1 else -_CYCLE)
    try:
        if want == "date":
            return dt.date(year, mo, d)
        moment = dt.datetime(
            year + shift, mo, d, hour, int(m["M"] or 0), int(m["S"] or 0), _fraction(m["f"]), tzinfo=tz
        )
    except ValueError as e:
        raise Bad(f"{t!r}: {e}") from None
    if not shift:
        return moment
    utc = moment.astimezone(dt.timezone.utc)
    if not 1 <= utc.year - shift <= 9999:
        raise Bad(f"{t!r} {_OUT_OF_RANGE}")
    return utc.replace(year=utc.year - shift)


def commit_time(v: Any, where: str) -> float | None:
    """wal2json's ``timestamp`` (the transaction's commit, ``include-timestamp``) -> epoch
    seconds; None when the capture has none. A text without an offset is read as UTC."""
    if v is None:
        return None
    if not isinstance(v, str):
        raise InputError(f"{where}: expected the commit time as text, got {type(v).__name__}")
    try:
        moment = read_moment(v, "timestamp with time zone")
    except Bad as e:
        raise InputError(f"{where}: {e}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return float(moment.timestamp())


def _money(text: str) -> decimal.Decimal:
    t = text.strip()
    negative = t.startswith("-") or (t.startswith("(") and t.endswith(")"))
    digits = re.sub(r"[^0-9.]", "", t)
    try:
        d = decimal.Decimal(digits)
    except decimal.InvalidOperation:
        raise Bad(f"unreadable money {text!r}") from None
    return -d if negative else d


def _bytes(text: str) -> bytes:
    t = text[2:] if text.startswith("\\x") else text
    try:
        return bytes.fromhex(t)
    except ValueError:
        raise Bad(f"expected bytea as hex (bytea_output = hex), got {text[:40]!r}") from None


_NOT_FINITE = {"nan": "NaN", "infinity": "Infinity", "+infinity": "Infinity", "-infinity": "-Infinity"}


def _not_finite(v: Any) -> str | None:
    """PostgreSQL's text of a NaN or ±Infinity given as ``v`` (a string as wal2json 2.6's
    ``numeric-data-types-as-string`` and a snapshot give it, a bare JSON ``NaN``), else None."""
    if isinstance(v, str):
        return _NOT_FINITE.get(v.strip().lower())
    if isinstance(v, decimal.Decimal) and not v.is_finite():
        return "NaN" if v.is_nan() else ("-Infinity" if v < 0 else "Infinity")
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("-Infinity" if v < 0 else "Infinity")
    return None


def _python(col: Column, pg_type: str | None, v: Any) -> Any:
    """A wal2json value (JSON-decoded, numbers as Decimal) -> the Python value for encode."""
    kind = col.type.kind
    pg = base_name(pg_type) if pg_type else ""
    if kind in ("decimal", "float") and (special := _not_finite(v)) is not None:
        raise Bad(f"{special!r} has no equivalent at a SQL Server subscriber's decimal/float")
    if kind == "int":
        if isinstance(v, str) and re.fullmatch(r"[+-]?\d+", v.strip()):
            return int(v)
        return v
    if kind == "bool":
        if isinstance(v, str):
            low = v.strip().lower()
            if low in ("t", "true", "1"):
                return True
            if low in ("f", "false", "0"):
                return False
        return v
    if kind == "decimal":
        is_money = pg == "money" or col.type.base in ("money", "smallmoney")
        if isinstance(v, str) and is_money and not re.fullmatch(r"[+-]?\d+(\.\d+)?", v.strip()):
            v = _money(v)
        _whole_decimals(col, v)
        return v
    if kind == "float":
        if isinstance(v, str):
            try:
                return decimal.Decimal(v)
            except decimal.InvalidOperation:
                raise Bad(f"expected a number, got {v[:40]!r}") from None
        return v
    if kind == "str":
        if isinstance(v, (int, decimal.Decimal)) and not isinstance(v, bool):
            return str(v)
        return v
    if not isinstance(v, str):
        return v  # encode says what it expected
    if kind == "bytes":
        return _bytes(v)
    if kind == "date":
        return read_moment(v, "date")
    if kind == "datetime":
        moment = read_moment(v, "timestamp")
        if moment.tzinfo is not None:
            raise Bad(f"{v!r} has a time zone; the column is {col.type} (no zone)")
        return moment
    if kind == "datetimeoffset":
        moment = read_moment(v, "timestamp with time zone")
        if moment.tzinfo is None:
            raise Bad(f"{v!r} has no time zone offset; the column is {col.type}")
        return moment.astimezone(dt.timezone.utc)  # the instant: the offset is the session's
    if kind == "time":
        m = _TIME_ONLY.match(v.strip())
        if not m:
            raise Bad(f"unreadable time {v!r}")
        if int(m["H"]) == 24:  # PostgreSQL's time runs to 24:00:00 inclusive
            raise Bad(f"{v!r} has no equivalent at a subscriber (a time of day ends at 23:59:59.999999)")
        try:
            return dt.time(int(m["H"]), int(m["M"]), int(m["S"] or 0), _fraction(m["f"]))
        except ValueError as e:
            raise Bad(f"{v!r}: {e}") from None
    return v


def _whole_decimals(col: Column, v: Any) -> None:
    """A number with more decimals than the column's scale is refused, not rounded: the
    publisher holds them (an unconstrained ``numeric`` is carried as decimal(38,10))."""
    if isinstance(v, bool) or not isinstance(v, (str, int, decimal.Decimal)):
        return
    try:
        d = decimal.Decimal(v.strip() if isinstance(v, str) else v)
    except decimal.InvalidOperation:
        return  # encode says what it expected
    scale = col.type.scale or 0
    exponent = d.normalize().as_tuple().exponent  # an int for a finite number
    if d != 0 and isinstance(exponent, int) and -exponent > scale:
        raise Bad(
            f"{d:f} has more than {scale} decimals, which {col.type} would round "
            "(the publisher's numeric keeps them)"
        )


# A null where the article allows none: for a number, what wal2json writes for NaN and ±Infinity
# without numeric-data-types-as-string.
_NAN_AS_NULL = (
    " (wal2json writes a numeric NaN, and a real or double NaN or ±Infinity, as null without "
    "numeric-data-types-as-string, which wal2json 2.6 and later take)"
)


def read_value(col: Column, pg_type: str | None, v: Any, where: str) -> Any:
    """A wal2json value (or the same output-function text read elsewhere: ``applier capture``'s
    snapshot) -> its canonical encoding for ``col``; InputError naming ``where``."""
    if v is None:
        if not col.nullable:
            hint = _NAN_AS_NULL if col.type.kind in ("decimal", "float") else ""
            raise InputError(f"{where}: column {col.name!r} ({col.type}): NULL in a NOT NULL column{hint}")
        return None
    try:
        return encode(col, _python(col, pg_type, v))
    except (Bad, ValueError_) as e:
        raise InputError(
            f"{where}: column {col.name!r} ({col.type}): {e}" if isinstance(e, Bad) else f"{where}: {e}"
        ) from None
