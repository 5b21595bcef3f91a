"""Maxwell's daemon (zendesk/maxwell) JSON rows as capture items.

**Files.** One row per line, as Maxwell's stdout, file or Kafka producers write it
(``{"database", "table", "type", "ts", "xid", "xoffset" | "commit", "position", "data",
"old"}``); a console consumer's ``key<TAB>value`` lines are read by their value. Types
``insert`` and ``bootstrap-insert`` are inserts of ``data``; ``update`` an update to ``data``
whose before image is ``data`` overlaid with ``old`` (Maxwell gives the old values of the
changed columns only); ``delete`` a delete of ``data``. ``bootstrap-start`` and
``bootstrap-complete`` are skipped; schema changes (``table-create``, ``table-alter``, ...) are
refused with the line named.

**Transactions.** A row's transaction is its ``xid`` (required: Maxwell writes it unless
``output_commit_info=false``). Transactions are ordered by their ``xid``. MySQL gives a
transaction its xid when it starts, while the binlog (and Maxwell's output) holds transactions in
commit order; the two differ for transactions that overlap in time. The binlog order would need
the position of a transaction's first row, which no other row of it carries, so it is not
known from one line: this is the format's known limit (rows of one transaction are never split).

**Order in a transaction**: ``position`` (``master.000006:800911``, with
``output_binlog_position``: the binlog file's number, then the offset of the row's event), then
``xoffset`` (the row's number in its transaction; the last row has ``"commit": true`` instead
and comes last), then the row's key (rows of one event). A row with neither ``position`` nor
``xoffset`` is placed by its line in the file (such rows delivered twice are then not recognised
as duplicates). Equal position, type and images: a duplicate delivery, dropped and counted.

**Values** by the article column's kind: numbers as JSON gives them (read exactly, as decimals);
dates, times and datetimes as Maxwell's text (``2016-10-21 05:33:37.523000``); bytes as base64;
bits as booleans or numbers. Errors name file:line and the field (``data.comment``,
``old.m``, ``xid``).
"""

from __future__ import annotations

import decimal
import json
from collections.abc import Iterator
from typing import Any, ClassVar

from applier.articles import Article
from applier.errors import InputError
from applier.sources.formats import Change, Format, Item
from applier.sources.formats.connect_types import Image, make_image
from applier.values import key_text

_LAST = 2**62  # the commit row of a transaction: after every xoffset
_SKIPPED = ("bootstrap-start", "bootstrap-complete")
_OPS = {"insert": "I", "bootstrap-insert": "I", "update": "U", "delete": "D"}


def _shown(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _line(place: str) -> int:
    tail = place.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _int(obj: dict[str, Any], name: str, place: str) -> int | None:
    v = obj.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, decimal.Decimal)) or v != int(v):
        raise InputError(f"{place}: {name}: expected an integer, got {_shown(v)}")
    return int(v)


class MaxwellFormat(Format):
    name: ClassVar[str] = "maxwell"
    positional: ClassVar[bool | None] = False
    dedup: ClassVar[bool] = True

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_images", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _image(self, article: Article) -> Image:
        images: dict[str, Image] = self.__dict__.setdefault("_images", {})
        got = images.get(article.name)
        if got is None:
            got = images[article.name] = make_image(article, None)
        return got

    def _load(self, text: str, place: str) -> Any:
        try:
            return json.loads(text, parse_float=decimal.Decimal)
        except json.JSONDecodeError as e:
            if "\t" in text:
                return self._load(text.split("\t", 1)[1], place)
            raise InputError(f"{place}: malformed JSON: {e.msg} at column {e.colno}") from None

    def parse(self, text: str, place: str) -> Iterator[Item]:
        row = self._load(text.strip(), place)
        if row is None:
            return
        if not isinstance(row, dict):
            raise InputError(f"{place}: expected a JSON object (a Maxwell row), got {_shown(row)}")
        kind = row.get("type")
        if kind in _SKIPPED:
            return
        if kind not in _OPS:
            if isinstance(kind, str) and ("-" in kind or "sql" in row):
                raise InputError(
                    f"{place}: type: {kind!r} is a schema change; applier reads row changes only "
                    "(insert, update, delete)"
                )
            got = "missing" if kind is None else f"{_shown(kind)} is not insert, update or delete"
            raise InputError(f"{place}: type: {got}")
        op = _OPS[kind]
        for name in ("database", "table"):
            if not isinstance(row.get(name), str):
                got = "missing" if row.get(name) is None else f"expected a name, got {_shown(row.get(name))}"
                raise InputError(f"{place}: {name}: {got}")
        article = self.article(row["database"], row["table"], place)
        image = self._image(article)
        data = row.get("data")
        if data is None:
            raise InputError(f"{place}: data: missing")
        values = image.read(data, "data", place, before=op == "D")
        before = after = None
        if op == "I":
            after = values
        elif op == "D":
            before = values
        else:
            after = values
            old = row.get("old")
            before = dict(values)
            if old is not None:
                before.update(image.read(old, "old", place, before=True))
        xid = _int(row, "xid", place)
        if xid is None:
            raise InputError(f"{place}: xid: missing (Maxwell's output_commit_info must be on)")
        xoffset = _int(row, "xoffset", place)
        commit = row.get("commit") is True
        position = row.get("position")
        fnum = offset = 0
        if position is not None:
            if not isinstance(position, str) or ":" not in position:
                raise InputError(f"{place}: position: expected binlog_file:offset, got {_shown(position)}")
            name, off = position.rsplit(":", 1)
            tail = name.rsplit(".", 1)[-1]
            if not tail.isdigit() or not off.isdigit():
                raise InputError(
                    f"{place}: position: expected binlog_file.NNNNNN:offset, got {_shown(position)}"
                )
            fnum, offset = int(tail), int(off)
        order = xoffset if xoffset is not None else _LAST if commit else 0
        line = _line(place) if position is None and xoffset is None else 0
        shown = after if after is not None else before
        key = key_text(article, shown) if shown is not None and _has_key(article, shown) else ""
        source = (
            f"xid {xid}"
            + (f" {position}" if position is not None else "")
            + (f" xoffset {xoffset}" if xoffset is not None else " commit" if commit else "")
        )
        ts = _int(row, "ts", place)  # the binlog event's time, whole seconds
        yield Change(
            article.name,
            op,
            before,
            after,
            (xid,),
            (fnum, offset, order, line, key),
            source,
            place,
            committed=float(ts) if ts is not None else None,
        )


def _has_key(article: Article, image: dict[str, Any]) -> bool:
    return all(image.get(k) is not None for k in article.key)


CLASSES: dict[str, type[Format]] = {"maxwell": MaxwellFormat}
