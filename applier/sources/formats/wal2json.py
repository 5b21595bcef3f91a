"""wal2json (PostgreSQL logical decoding) captures: format versions 1 and 2.

**Files.** What ``pg_recvlogical --plugin=wal2json -o format-version=N -f FILE`` writes: one
JSON document per line (the plugin's default; ``pretty-print`` output spans lines and is
refused with that advice). Blank lines are skipped.

**Version 1** (``--format wal2json``): one document per transaction,
``{"xid", "nextlsn", "timestamp", "change": [{"kind", "schema", "table", "columnnames",
"columntypes", "columnvalues", "oldkeys": {"keynames", "keytypes", "keyvalues"}, "pk"}]}``;
``xid``, ``nextlsn``, ``timestamp``, ``columntypes``, ``pk`` and ``schema`` are optional
(``include-xids``, ``include-lsn``, ``include-timestamp``, ``include-types``, ``include-pk``,
``include-schemas``). With ``nextlsn`` the transaction is known by it (its commit's end LSN:
commit order, and a transaction delivered twice, as pg_recvlogical does after a restart, is
recognised and dropped); without it, by its line (file order is commit order). ``xid`` is
never used to order: transactions commit in another order than their ids.

**Version 2** (``--format wal2json2``): one document per action: ``{"action":"B"}``,
``{"action":"I"|"U"|"D", "schema", "table", "columns": [{"name","type","value"}],
"identity": [...], "pk": [...]}``, ``{"action":"C"}``. Transactions are the B..C spans in file
order (changes carry no transaction of their own; ``xid``/``lsn`` are kept as the change's
source text). ``"M"`` (logical messages, ``pg_logical_emit_message``) are skipped: they change
no row. ``"T"`` (truncate) is refused with the line named: applier has no truncate operation
and skipping it would leave the subscriber's rows different from the publisher's (filter
them at the slot with ``-o actions=insert,update,delete``). Version 1's ``"kind":"message"``
is skipped and ``"kind":"truncate"`` refused likewise.

**Images.** Inserts: the new row. Updates: the new row, and as before image the old keys
(``oldkeys`` / ``identity``: the replica identity's columns, or the whole old row with
REPLICA IDENTITY FULL; wal2json leaves NULLs out of it) or, when wal2json gives none (the
key did not change), the article's key columns taken from the new row. Deletes: the old keys.
Before images hold only what wal2json gave (the canonical record allows partial before
images). The article's key must be among the identity columns. A column wal2json leaves out
of an update's new row (an unchanged TOASTed value: both format versions leave the column out,
whether or not the update moves the key) is taken from the old row when it is there (REPLICA
IDENTITY FULL), otherwise from the row's previous image in the capture or its snapshot
(:mod:`applier.sources.formats.unchanged`; the change carries it as ``unchanged``). Columns the
article marks computed are dropped; a column the article does not have is an error.

**Values** are read by the article's column kind (the capture's ``columntypes`` / ``type`` is
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
which columns this can hit when the plugin lacks the option). Errors name file:line and the
field (``change[2].columnvalues[4]``, ``columns[3].value``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from applier.articles import Article, Column
from applier.catalog.pgtypes import base_name
from applier.errors import InputError
from applier.sources.formats import Begin, Change, Commit, Format, Item
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


class _Bad(Exception):
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


def _moment(text: str, want: str) -> Any:
    """A date/timestamp text in any DateStyle -> date, naive datetime or aware datetime (an
    aware one in UTC when its local year is outside 1..9999 but its instant is not)."""
    t = text.strip()
    if t.lower() in ("infinity", "-infinity"):
        raise _Bad(f"{t!r} {_OUT_OF_RANGE}")
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
            raise _Bad(f"unknown month in {t!r}")
        y, mo, d = int(m["y"]), _MONTHS[mon], int(m["d"] or m["d2"])
        if m["tz"]:
            if m["tz"].upper() in ("UTC", "GMT"):
                tz = dt.timezone.utc
            else:
                raise _Bad(
                    f"time zone {m['tz']!r} in {t!r}: only numeric offsets are read "
                    "(capture with DateStyle ISO: PGOPTIONS='-c DateStyle=ISO' pg_recvlogical ...)"
                )
    elif (m := _SQL_TS.match(body)) is not None:
        a, b = int(m["a"]), int(m["b"])
        y = int(m["y"])
        mo, d = (b, a) if m["sep"] == "." else (a, b)  # German is DMY; SQL and Postgres: MDY
        tz = _offset(m["off"])
    else:
        raise _Bad(f"unreadable {want} {t!r}")
    year = 1 - y if bc else y  # astronomical: 1 BC is year 0
    if want == "date" and m["H"] is not None:
        raise _Bad(f"expected a date, got {t!r}")
    hour = int(m["H"] or 0)
    if hour == 24:
        raise _Bad(f"{t!r}: 24:00:00 has no equivalent at a subscriber")
    if not 1 <= year <= 9999 and (want == "date" or tz is None):
        raise _Bad(f"{t!r} {_OUT_OF_RANGE}")
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
        raise _Bad(f"{t!r}: {e}") from None
    if not shift:
        return moment
    utc = moment.astimezone(dt.timezone.utc)
    if not 1 <= utc.year - shift <= 9999:
        raise _Bad(f"{t!r} {_OUT_OF_RANGE}")
    return utc.replace(year=utc.year - shift)


def commit_time(v: Any, where: str) -> float | None:
    """wal2json's ``timestamp`` (the transaction's commit, ``include-timestamp``) -> epoch
    seconds; None when the capture has none. A text without an offset is read as UTC."""
    if v is None:
        return None
    if not isinstance(v, str):
        raise InputError(f"{where}: expected the commit time as text, got {type(v).__name__}")
    try:
        moment = _moment(v, "timestamp with time zone")
    except _Bad as e:
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
        raise _Bad(f"unreadable money {text!r}") from None
    return -d if negative else d


def _bytes(text: str) -> bytes:
    t = text[2:] if text.startswith("\\x") else text
    try:
        return bytes.fromhex(t)
    except ValueError:
        raise _Bad(f"expected bytea as hex (bytea_output = hex), got {text[:40]!r}") from None


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
        raise _Bad(f"{special!r} has no equivalent at a SQL Server subscriber's decimal/float")
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
                raise _Bad(f"expected a number, got {v[:40]!r}") from None
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
        return _moment(v, "date")
    if kind == "datetime":
        moment = _moment(v, "timestamp")
        if moment.tzinfo is not None:
            raise _Bad(f"{v!r} has a time zone; the column is {col.type} (no zone)")
        return moment
    if kind == "datetimeoffset":
        moment = _moment(v, "timestamp with time zone")
        if moment.tzinfo is None:
            raise _Bad(f"{v!r} has no time zone offset; the column is {col.type}")
        return moment.astimezone(dt.timezone.utc)  # the instant: the offset is the session's
    if kind == "time":
        m = _TIME_ONLY.match(v.strip())
        if not m:
            raise _Bad(f"unreadable time {v!r}")
        if int(m["H"]) == 24:  # PostgreSQL's time runs to 24:00:00 inclusive
            raise _Bad(f"{v!r} has no equivalent at a subscriber (a time of day ends at 23:59:59.999999)")
        try:
            return dt.time(int(m["H"]), int(m["M"]), int(m["S"] or 0), _fraction(m["f"]))
        except ValueError as e:
            raise _Bad(f"{v!r}: {e}") from None
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
        raise _Bad(
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
    except (_Bad, ValueError_) as e:
        raise InputError(
            f"{where}: column {col.name!r} ({col.type}): {e}" if isinstance(e, _Bad) else f"{where}: {e}"
        ) from None


# -- documents -------------------------------------------------------------------------------
def _load(text: str, place: str) -> Any:
    try:
        return json.loads(text, parse_float=decimal.Decimal, parse_int=_json_int)
    except json.JSONDecodeError as e:
        hint = ""
        if text.strip() in ("{", "[") or text.rstrip().endswith(("{", "[", ",")):
            hint = " (one JSON document per line is expected: capture without pretty-print)"
        raise InputError(f"{place}: not JSON: {e.msg} at column {e.colno}{hint}") from None


def _json_int(text: str) -> int | decimal.Decimal:
    """A JSON integer: an int, but ``-0`` (a real or double negative zero, as wal2json writes
    it) a Decimal that keeps its sign (``int('-0')`` is 0)."""
    return decimal.Decimal(text) if text == "-0" else int(text)


def _lsn(v: Any, where: str) -> int:
    if not isinstance(v, str) or not re.fullmatch(r"[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}", v):
        raise InputError(f"{where}: expected an LSN as X/X text, got {str(v)[:40]!r}")
    hi, lo = v.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def _line(place: str) -> int:
    tail = place.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _str_list(doc: Mapping[str, Any], key: str, where: str, n: int | None = None) -> list[Any] | None:
    v = doc.get(key)
    if v is None:
        return None
    if not isinstance(v, list):
        raise InputError(f"{where}.{key}: expected a list, got {type(v).__name__}")
    if n is not None and len(v) != n:
        raise InputError(f"{where}.{key}: {len(v)} entries for {n} column names")
    return v


@dataclass
class _Image:
    """Names, types and values of one tuple as wal2json gave them, with where each came from."""

    names: list[str]
    types: list[str | None]
    values: list[Any]
    places: list[str]


class _Wal2json(Format):
    def _decode(self, article: Article, image: _Image, where: str) -> dict[str, Any]:
        cols = {c.name: c for c in article.columns}
        out: dict[str, Any] = {}
        for name, pg_type, v, at in zip(image.names, image.types, image.values, image.places, strict=True):
            col = cols.get(name)
            if col is None:
                raise InputError(f"{at}: column {name!r} is not a column of article {article.name}")
            if col.computed:
                continue
            if name in out:
                raise InputError(f"{at}: column {name!r} appears twice")
            out[name] = read_value(col, pg_type, v, at)
        return out

    def _change(
        self,
        kind: str,
        schema: Any,
        table: Any,
        new: _Image | None,
        old: _Image | None,
        where: str,
        place: str,
        tx: tuple[Any, ...] | None,
        pos: tuple[Any, ...],
        source: str,
    ) -> Change:
        if not isinstance(table, str):
            raise InputError(f"{where}.table: missing or not text")
        if schema is not None and not isinstance(schema, str):
            raise InputError(f"{where}.schema: not text")
        article = self.article(schema, table, where)
        op = {"insert": "I", "update": "U", "delete": "D"}[kind]
        after = self._decode(article, new, where) if new is not None else None
        before = self._decode(article, old, where) if old is not None else None
        if op in ("I", "U") and after is None:
            raise InputError(f"{where}: an {kind} without the new row")
        if op == "D" and not before:
            raise InputError(
                f"{where}: a delete without old keys (the table's REPLICA IDENTITY is NOTHING, "
                "or DEFAULT without a primary key): the row to delete is unknown"
            )
        unchanged: list[str] = []
        if op == "U" and after is not None:
            if not before:
                before = {}
                for k in article.key:
                    if k not in after:
                        raise InputError(f"{where}: key column {k!r} is missing from the new row")
                    before[k] = after[k]
            for c in article.replicated:
                if c.name not in after:
                    if c.name in before:
                        after[c.name] = before[c.name]  # unchanged TOAST value, old row has it
                    else:
                        unchanged.append(c.name)  # from the row's previous image (formats.unchanged)
        if before is not None:
            missing = [k for k in article.key if before.get(k) is None]
            if missing:
                raise InputError(
                    f"{where}: key column {missing[0]!r} of article {article.name} is not among the "
                    "old keys wal2json gave (the table's replica identity must cover the article's key)"
                )
        if op == "I" and after is not None:
            missing_cols = [c.name for c in article.replicated if c.name not in after]
            if missing_cols:
                raise InputError(f"{where}: column {missing_cols[0]!r} is absent from the inserted row")
        return Change(article.name, op, before, after, tx, pos, source, place, unchanged=tuple(unchanged))


class Wal2json(_Wal2json):
    """Format version 1: one transaction per line."""

    name: ClassVar[str] = "wal2json"

    def parse(self, text: str, place: str) -> Iterator[Item]:
        if not text.strip():
            return
        doc = _load(text, place)
        if not isinstance(doc, dict) or "change" not in doc:
            what = "an object" if isinstance(doc, dict) else type(doc).__name__
            raise InputError(
                f"{place}: expected a wal2json format-version 1 transaction "
                f'{{"change": [...]}}, got {what}'
                + (
                    " (format-version 2 lines have an 'action': use --format wal2json2)"
                    if isinstance(doc, dict) and "action" in doc
                    else ""
                )
            )
        changes = doc["change"]
        if not isinstance(changes, list):
            raise InputError(f"{place}: change: expected a list")
        tx: tuple[Any, ...] | None = None
        source = []
        if doc.get("xid") is not None:
            source.append(f"xid {doc['xid']}")
        if doc.get("nextlsn") is not None:
            lsn = _lsn(doc["nextlsn"], f"{place}: nextlsn")
            tx = (lsn,)
            source.append(f"nextlsn {doc['nextlsn']}")
        at = commit_time(doc.get("timestamp"), f"{place}: timestamp")
        out: list[Item] = []
        for i, ch in enumerate(changes):
            where = f"{place}: change[{i}]"
            if not isinstance(ch, dict):
                raise InputError(f"{where}: expected an object")
            kind = ch.get("kind")
            if kind == "message":
                continue
            if kind == "truncate":
                raise InputError(
                    f"{where}: truncate of {ch.get('schema')}.{ch.get('table')}: applier has no truncate "
                    "operation (capture with -o actions=insert,update,delete)"
                )
            if kind not in ("insert", "update", "delete"):
                raise InputError(f"{where}.kind: expected insert, update or delete, got {kind!r}")
            new = None
            if kind != "delete":
                names = _str_list(ch, "columnnames", where)
                if names is None:
                    raise InputError(f"{where}: an {kind} without columnnames")
                values = _str_list(ch, "columnvalues", where, len(names))
                if values is None:
                    raise InputError(f"{where}: an {kind} without columnvalues")
                types = _str_list(ch, "columntypes", where, len(names)) or [None] * len(names)
                self._names(names, f"{where}.columnnames")
                new = _Image(names, types, values, [f"{where}.columnvalues[{j}]" for j in range(len(names))])
            old = None
            ok = ch.get("oldkeys")
            if ok is not None:
                if not isinstance(ok, dict):
                    raise InputError(f"{where}.oldkeys: expected an object")
                w = f"{where}.oldkeys"
                names = _str_list(ok, "keynames", w) or []
                values = _str_list(ok, "keyvalues", w, len(names)) or [None] * len(names)
                types = _str_list(ok, "keytypes", w, len(names)) or [None] * len(names)
                self._names(names, f"{w}.keynames")
                old = _Image(names, types, values, [f"{w}.keyvalues[{j}]" for j in range(len(names))])
            src = " ".join([*source, f"change[{i}]"]) if source else f"line {_line(place)} change[{i}]"
            c = self._change(kind, ch.get("schema"), ch.get("table"), new, old, where, place, tx, (i,), src)
            out.append(replace(c, committed=at) if at is not None else c)
        if tx is None:
            yield Begin(place, at)
            yield from out
            yield Commit(place)
        else:
            yield from out

    @staticmethod
    def _names(names: Sequence[Any], where: str) -> None:
        for j, n in enumerate(names):
            if not isinstance(n, str):
                raise InputError(f"{where}[{j}]: expected a column name")


class Wal2json2(_Wal2json):
    """Format version 2: one action per line, transactions from the B..C lines."""

    name: ClassVar[str] = "wal2json2"
    positional: ClassVar[bool | None] = True

    def parse(self, text: str, place: str) -> Iterator[Item]:
        if not text.strip():
            return
        doc = _load(text, place)
        if not isinstance(doc, dict) or "action" not in doc:
            raise InputError(
                f"{place}: expected a wal2json format-version 2 object with an 'action'"
                + (
                    " (a format-version 1 transaction: use --format wal2json)"
                    if isinstance(doc, dict) and "change" in doc
                    else ""
                )
            )
        action = doc["action"]
        if action == "B":  # include-timestamp: the commit time, on the B (and the C) line
            yield Begin(place, commit_time(doc.get("timestamp"), f"{place}: timestamp"))
            return
        if action == "C":
            yield Commit(place)
            return
        if action == "M":
            return
        if action == "T":
            raise InputError(
                f"{place}: truncate of {doc.get('schema')}.{doc.get('table')}: applier has no truncate "
                "operation (capture with -o actions=insert,update,delete)"
            )
        kinds = {"I": "insert", "U": "update", "D": "delete"}
        if action not in kinds:
            raise InputError(f"{place}: action: expected B, C, I, U, D, M or T, got {str(action)[:20]!r}")
        kind = kinds[action]
        new = self._tuple(doc, "columns", place) if kind != "delete" else None
        if kind != "delete" and new is None:
            raise InputError(f"{place}: an {kind} without columns")
        old = self._tuple(doc, "identity", place)
        source = [f"line {_line(place)}"]
        if doc.get("xid") is not None:
            source.append(f"xid {doc['xid']}")
        if doc.get("lsn") is not None:
            _lsn(doc["lsn"], f"{place}: lsn")
            source.append(f"lsn {doc['lsn']}")
        yield self._change(
            kind,
            doc.get("schema"),
            doc.get("table"),
            new,
            old,
            place,
            place,
            None,
            (_line(place),),
            " ".join(source),
        )

    @staticmethod
    def _tuple(doc: Mapping[str, Any], key: str, place: str) -> _Image | None:
        raw = doc.get(key)
        if raw is None:
            return None
        if not isinstance(raw, list):
            raise InputError(f"{place}: {key}: expected a list")
        img = _Image([], [], [], [])
        for j, c in enumerate(raw):
            w = f"{place}: {key}[{j}]"
            if not isinstance(c, dict):
                raise InputError(f"{w}: expected an object")
            name = c.get("name")
            if not isinstance(name, str):
                raise InputError(f"{w}.name: expected a column name")
            if "value" not in c:
                raise InputError(f"{w}.value: missing")
            t = c.get("type")
            img.names.append(name)
            img.types.append(t if isinstance(t, str) else None)
            img.values.append(c["value"])
            img.places.append(f"{w}.value")
        return img


FORMATS: dict[str, type[Format]] = {"wal2json": Wal2json, "wal2json2": Wal2json2}
