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

**Values** are read from PostgreSQL's text output by :mod:`applier.sources.formats.pgtext`
(the DateStyles, ``money``, ``bytea``, NaN and infinities). Errors name file:line and the
field (``change[2].columnvalues[4]``, ``columns[3].value``).
"""

from __future__ import annotations

import decimal
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from applier.articles import Article
from applier.errors import InputError
from applier.sources.formats import Begin, Change, Commit, Format, Item
from applier.sources.formats.pgtext import commit_time, read_value


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


CLASSES: dict[str, type[Format]] = {"wal2json": Wal2json, "wal2json2": Wal2json2}
