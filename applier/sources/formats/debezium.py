"""Debezium change events (JSON) as capture items.

**Files.** One event per line, as Kafka's JSON converter writes it with the schema envelope
(``{"schema": {...}, "payload": {...}}``: Debezium Server's file sink, ``kafka-console-consumer``)
or without it (the bare payload, ``schemas.enable=false``). A console consumer run with
``print.key=true`` writes ``key<TAB>value``: a line that is not one JSON document but has a tab
is read as its value after the first tab. Tombstones (a line ``null``, ``"payload": null``, an
empty payload) are skipped: the delete before them carries the change. Heartbeats (a payload
with nothing but ``ts_ms``) and logical messages (``op`` ``m``) are skipped; truncates (``op``
``t``) and schema change events (``ddl``) are refused with the line named, as applier has no
operation for them.

**Operations.** ``c`` and ``r`` (a snapshot read) are inserts of ``after``; ``u`` an update from
``before`` to ``after`` (without ``before``, PostgreSQL's default replica identity, the before
image is the article's key taken from ``after``); ``d`` a delete of ``before``. A NULL in a
before image for a NOT NULL column (PostgreSQL's default replica identity sends only the key's
values) is left out of it: the canonical record allows partial before images. A value Debezium
gives as ``__debezium_unavailable_value`` (PostgreSQL's unchanged TOASTed column) is left out of a
before image and taken from the before image into an update's after image; when the before image
does not have it (REPLICA IDENTITY DEFAULT), from the row's previous image in the capture or its
snapshot (:mod:`applier.sources.formats.unchanged`). In a new row of an insert it is refused.

**Positions**, by the connector (``source.connector``, or the fields that are there):

* SQL Server (and Db2): the transaction is ``commit_lsn`` (commit order), the change in it
  ``change_lsn`` then ``event_serial_no``; LSNs (``00000027:00000758:0003``) compare as tuples
  of hex numbers. A snapshot read (no ``change_lsn``) is placed by its key.
* PostgreSQL: the transaction is ``txId``. Transaction ids are given at a transaction's start,
  not its commit, so they are not commit order: when the event has ``source.sequence``
  (``["lastCommitLsn", "lsn"]``, Debezium 1.4 and later) the transaction is ordered by
  ``lastCommitLsn``, the LSN of the commit before it, which every event of a transaction
  shares and which grows with each commit (the logical decoding stream delivers whole
  transactions in commit order). Without ``sequence`` transactions are ordered by ``txId``, which
  is the commit order only for transactions that do not overlap in time; the smallest ``lsn``
  of a transaction would not be better (changes of concurrent transactions interleave in the
  WAL) and cannot be known from one line. The change in a transaction: ``lsn``.
* MySQL: with ``gtid`` the transaction is its GTID (``uuid:N``, ordered by server and N). Without
  it, nothing on a line names its transaction: each binlog event (``file``, ``pos``) is taken as
  a transaction of its own (still in binlog order, i.e. commit order; a transaction of several
  statements is split). The change: ``file`` (its numeric suffix), ``pos``, ``row``.

Within one source position a delete comes before a create (a key change: SQL Server gives
them ``event_serial_no`` 1 and 2; PostgreSQL and MySQL one ``lsn`` / ``pos``+``row``). An event
delivered twice (at-least-once) has the same position, operation and images: the conversion
drops it and counts it.

**Transaction metadata.** An ``END`` event (``{"status": "END", "id", "event_count"}``) announces
its transaction's number of data events, checked once duplicates are dropped (tombstones do
not count). The id is matched to the transaction as the data events name it: SQL Server's id is
the commit LSN, MySQL's the GTID. PostgreSQL's id is ``txId:lsn`` with an LSN that differs
between BEGIN and END and cannot give ``lastCommitLsn``, and MySQL's without GTIDs names a
binlog position where its data events are grouped by their own: such END events are checked
to be well formed (an id, a number of events) but their counts are not checked. BEGIN events
are skipped.

**Key changes.** Debezium delivers a change of a row's key as a delete and a create at one
source position (SQL Server also writes a tombstone between them). They are applied as
delivered; with ``Options.fold_key_changes`` (``--fold-key-changes``) such a pair is folded into
one update (before: the delete's, after: the create's), which is how a replication
distributor delivers a key update and what raises error 20598 when streams race.

**Values** are read by :mod:`applier.sources.formats.connect_types` (Kafka Connect's and Debezium's
logical types by the envelope's field schemas, or by the article column's kind without it).

**Speed.** With the envelope most of a line is its schema, the same for every event of a table:
the text before ``"payload"`` is remembered with the decoders built from it, and a line that
starts with a known one has only its payload parsed.

Errors name file:line and the field (``payload.source.commit_lsn``, ``payload.after.email``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from applier.articles import Article
from applier.errors import InputError
from applier.sources.formats import Change, Expect, Format, Item
from applier.sources.formats.connect_types import UNAVAILABLE, Image, make_image, shown, value_fields
from applier.values import key_text

_HEX_LSN = re.compile(r"[0-9A-Fa-f]+(?::[0-9A-Fa-f]+)+")
_GTID = re.compile(
    r"([0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}):(\d+)(?:-\d+)?"
)
_DECODE = json.JSONDecoder()
_MAX_PREFIXES = 64


# -- positions -------------------------------------------------------------------------------
def _lsn(text: Any, field: str, place: str) -> tuple[int, ...]:
    if type(text) is str:
        parts = text.split(":")
        if len(parts) == 3:  # SQL Server's, the common case
            try:
                return (int(parts[0], 16), int(parts[1], 16), int(parts[2], 16))
            except ValueError:
                pass
        elif _HEX_LSN.fullmatch(text):
            return tuple(int(p, 16) for p in parts)
    raise InputError(f"{place}: {field}: expected an LSN (hex parts joined by ':'), got {shown(text)}")


def _int(v: Any, field: str, place: str) -> int:
    if isinstance(v, bool):
        raise InputError(f"{place}: {field}: expected an integer, got {shown(v)}")
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    got = "missing" if v is None else f"expected an integer, got {shown(v)}"
    raise InputError(f"{place}: {field}: {got}")


def _binlog_number(v: Any, field: str, place: str) -> int:
    if isinstance(v, str):
        tail = v.rsplit(".", 1)[-1]
        if tail.isdigit():
            return int(tail)
    got = "missing" if v is None else f"expected a binlog file name (name.000123), got {shown(v)}"
    raise InputError(f"{place}: {field}: {got}")


def _expected_tx(tid: str) -> tuple[Any, ...] | None:
    """A transaction id of an END event -> the transaction key its data events have (None: not
    known from the id alone: PostgreSQL's)."""
    m = _GTID.fullmatch(tid)
    if m:
        return (m.group(1).lower(), int(m.group(2)), 0, 0)
    if _HEX_LSN.fullmatch(tid) and tid.count(":") >= 2:
        return tuple(int(p, 16) for p in tid.split(":"))
    return None


# -- the format ------------------------------------------------------------------------------
class DebeziumFormat(Format):
    name: ClassVar[str] = "debezium"
    positional: ClassVar[bool | None] = False
    dedup: ClassVar[bool] = True
    encoded: ClassVar[bool] = True  # images: Image.read, every value through encode

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_cache", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    @property
    def _caches(self) -> dict[str, Any]:
        c: dict[str, Any] | None = self.__dict__.get("_cache")
        if c is None:
            c = {"prefixes": [], "images": {}}
            self.__dict__["_cache"] = c
        return c

    # -- reading a line --------------------------------------------------------------------
    def _load(self, text: str, place: str) -> tuple[Any, Any, str]:
        """A line -> (payload or None for a tombstone, schema key, field prefix)."""
        line = text.strip()
        prefixes: list[tuple[str, Any]] = self._caches["prefixes"]
        for i, (prefix, key) in enumerate(prefixes):
            if line.startswith(prefix):
                try:
                    payload, end = _DECODE.raw_decode(line, len(prefix))
                except json.JSONDecodeError:
                    break
                if line[end:].strip() == "}":
                    if i:
                        prefixes.insert(0, prefixes.pop(i))
                    return payload, key, "payload."
                break
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            if "\t" in line:  # key<TAB>value from a console consumer
                return self._load(line.split("\t", 1)[1], place)
            raise InputError(f"{place}: malformed JSON: {e.msg} at column {e.colno}") from None
        if obj is None:
            return None, None, ""
        if not isinstance(obj, dict):
            raise InputError(f"{place}: expected a JSON object (a Debezium event), got {shown(obj)}")
        if "payload" in obj and set(obj) <= {"schema", "payload"}:
            schema = obj.get("schema")
            key = self._remember(line, schema) if isinstance(schema, dict) else None
            return obj["payload"], key, "payload."
        return obj, None, ""

    def _remember(self, line: str, schema: dict[str, Any]) -> Any:
        """The schema's key for image readers; the line's text before the payload remembered so
        that the next line with this schema skips parsing it."""
        fields = value_fields(schema)
        key = json.dumps(fields, sort_keys=True) if fields is not None else None
        self._caches["images"].setdefault(("schema", key), fields)
        head = '{"schema":'
        if line.startswith(head):
            try:
                _, end = _DECODE.raw_decode(line, len(head))
            except json.JSONDecodeError:
                return key
            m = re.compile(r'\s*,\s*"payload"\s*:\s*').match(line, end)
            if m:
                prefixes: list[tuple[str, Any]] = self._caches["prefixes"]
                prefixes.insert(0, (line[: m.end()], key))
                del prefixes[_MAX_PREFIXES:]
        return key

    def _image(self, article: Article, key: Any) -> Image:
        images: dict[Any, Any] = self._caches["images"]
        got: Image | None = images.get((article.name, key))
        if got is None:
            got = make_image(article, images.get(("schema", key)) if key is not None else None)
            images[(article.name, key)] = got
        return got

    def parse(self, text: str, place: str) -> Iterator[Item]:
        payload, key, at = self._load(text, place)
        if payload is None or payload == {}:
            return  # a tombstone
        if not isinstance(payload, dict):
            raise InputError(f"{place}: {at or 'the event'}: expected an object, got {shown(payload)}")
        op = payload.get("op")
        if op is None:
            status = payload.get("status")
            if status is not None:
                yield from self._boundary(payload, status, at, place)
                return
            if set(payload) <= {"ts_ms", "ts_us", "ts_ns"}:
                return  # a heartbeat
            if "ddl" in payload or "tableChanges" in payload:
                raise InputError(
                    f"{place}: {at}ddl: a schema change event; applier reads row changes only "
                    "(leave the schema history topic out of the capture)"
                )
            raise InputError(f"{place}: {at}op: missing (not a Debezium change event)")
        if op == "m":
            return  # a logical decoding message: no row changes
        if op not in ("c", "r", "u", "d"):
            what = "a truncate: applier has no truncate operation" if op == "t" else "unknown operation"
            raise InputError(f"{place}: {at}op: {shown(op)} is {what} (c, r, u or d)")
        src = payload.get("source")
        if not isinstance(src, dict):
            got = "missing" if src is None else f"expected an object, got {shown(src)}"
            raise InputError(f"{place}: {at}source: {got}")
        table = src.get("table")
        if not isinstance(table, str):
            got = "missing" if table is None else f"expected a table name, got {shown(table)}"
            raise InputError(f"{place}: {at}source.table: {got}")
        schema = src.get("schema")
        if not isinstance(schema, str):
            schema = src.get("db") if isinstance(src.get("db"), str) else None
        article = self.article(schema, table, place)
        image = self._image(article, key)
        before = after = None
        unchanged: list[str] = []
        if op in ("u", "d"):
            raw = payload.get("before")
            if raw is not None:
                before = image.read(raw, f"{at}before", place, before=True)
            elif op == "d":
                raise InputError(
                    f"{place}: {at}before: missing (a delete needs the row's key; PostgreSQL: "
                    "REPLICA IDENTITY DEFAULT or FULL)"
                )
        if op != "d":
            raw = payload.get("after")
            if raw is None:
                raise InputError(f"{place}: {at}after: missing (op {op!r} needs the new row)")
            missing: list[str] = []
            after = image.read(raw, f"{at}after", place, before=False, unavailable=missing)
            for name in missing:  # an unchanged TOASTed value: the old row's, when it is there
                if op != "u":
                    raise InputError(
                        f"{place}: {at}after.{name}: {UNAVAILABLE[0]} in a new row (op {op!r}): "
                        "only an update may leave a value out as unchanged"
                    )
                if before is not None and name in before:
                    after[name] = before[name]
                else:
                    unchanged.append(name)  # from the row's previous image (formats.unchanged)
            if op == "u" and before is None:
                before = {k: after.get(k) for k in article.key}
        tx, position, source = self._position(src, payload, op, at, place)
        snap = (
            key_text(article, after) if op == "r" and after is not None and _has_key(article, after) else ""
        )
        rank = 0 if op == "d" else 1
        yield Change(
            article.name,
            "I" if op in ("c", "r") else "U" if op == "u" else "D",
            before,
            after,
            tx,
            (*position, rank, snap),
            source,
            place,
            unchanged=tuple(unchanged),
            committed=_committed(src, f"{at}source.", place),
        )

    def _boundary(self, payload: dict[str, Any], status: Any, at: str, place: str) -> Iterator[Item]:
        if status == "BEGIN":
            return
        if status != "END":
            raise InputError(f"{place}: {at}status: expected BEGIN or END, got {shown(status)}")
        tid = payload.get("id")
        if not isinstance(tid, str):
            got = "missing" if tid is None else f"expected the transaction id as text, got {shown(tid)}"
            raise InputError(f"{place}: {at}id: {got}")
        count = payload.get("event_count")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            got = "missing" if count is None else f"expected a number of events, got {shown(count)}"
            raise InputError(f"{place}: {at}event_count: {got}")
        tx = _expected_tx(tid)
        if tx is None:
            return  # PostgreSQL's txId:lsn, MySQL without GTIDs: see the module's docstring
        yield Expect(tx, count, place)

    def _position(
        self, src: dict[str, Any], payload: dict[str, Any], op: str, at: str, place: str
    ) -> tuple[tuple[Any, ...], tuple[Any, ...], str]:
        """(transaction, position in it without rank and key, source text) by the connector."""
        connector = src.get("connector")
        s = f"{at}source."
        if connector in ("sqlserver", "db2") or "commit_lsn" in src:
            commit_text = src.get("commit_lsn")
            if commit_text is None:
                raise InputError(f"{place}: {s}commit_lsn: missing")
            commit = _lsn(commit_text, f"{s}commit_lsn", place)
            change_text = src.get("change_lsn")
            if change_text is None and op != "r":
                raise InputError(f"{place}: {s}change_lsn: missing")
            change = (
                _lsn(change_text, f"{s}change_lsn", place) if change_text is not None else (0,) * len(commit)
            )
            serial_raw = src.get("event_serial_no")
            serial = _int(serial_raw, f"{s}event_serial_no", place) if serial_raw is not None else 0
            text = f"commit_lsn {commit_text} change_lsn {change_text} event_serial_no {serial_raw}"
            return commit, (*change, serial), text
        if connector == "postgresql" or ("txId" in src and "lsn" in src):
            txid = _int(src.get("txId"), f"{s}txId", place)
            lsn = _int(src.get("lsn"), f"{s}lsn", place)
            last_commit = 0
            seq = src.get("sequence")
            if seq is not None:
                try:
                    parts = json.loads(seq) if isinstance(seq, str) else seq
                    first = parts[0]
                    last_commit = 0 if first is None else int(first)
                except (ValueError, TypeError, IndexError, KeyError):
                    raise InputError(
                        f'{place}: {s}sequence: expected ["lastCommitLsn","lsn"], got {shown(seq)}'
                    ) from None
            return (last_commit, txid), (lsn, 0), f"txId {txid} lsn {lsn}"
        if connector == "mysql" or "file" in src:
            fnum = _binlog_number(src.get("file"), f"{s}file", place)
            pos = _int(src.get("pos"), f"{s}pos", place)
            row_raw = src.get("row")
            row = _int(row_raw, f"{s}row", place) if row_raw is not None else 0
            gtid = src.get("gtid")
            text = f"{src.get('file')}:{pos} row {row}"
            if gtid is not None:
                m = _GTID.fullmatch(gtid) if isinstance(gtid, str) else None
                if m is None:
                    raise InputError(f"{place}: {s}gtid: expected server_uuid:N, got {shown(gtid)}")
                return (m.group(1).lower(), int(m.group(2)), 0, 0), (fnum, pos, row, 0), f"{text} gtid {gtid}"
            return ("", 0, fnum, pos), (fnum, pos, row, 0), text
        raise InputError(
            f"{place}: {s}: no source position applier knows (SQL Server commit_lsn/change_lsn, "
            f"PostgreSQL txId/lsn, MySQL file/pos; connector {shown(connector)})"
        )

    # -- a transaction ---------------------------------------------------------------------
    def combine(self, changes: list[Change]) -> list[Change]:
        """With ``fold_key_changes``: a delete followed by a create of the same article at the
        same source position (a key change) -> one update."""
        if not self.options.fold_key_changes:
            return changes
        out: list[Change] = []
        i = 0
        n = len(changes)
        while i < n:
            c = changes[i]
            if i + 1 < n and c.op == "D" and not c.pos[-1]:
                nxt = changes[i + 1]
                if (
                    nxt.op == "I"
                    and nxt.article == c.article
                    and nxt.pos[:-3] == c.pos[:-3]
                    and not nxt.pos[-1]
                ):
                    out.append(
                        Change(
                            c.article,
                            "U",
                            c.before,
                            nxt.after,
                            c.tx,
                            c.pos,
                            f"{c.source} + {nxt.source} (key change folded)",
                            c.place,
                            committed=nxt.committed if nxt.committed is not None else c.committed,
                        )
                    )
                    i += 2
                    continue
            out.append(c)
            i += 1
        return out


def _committed(src: Mapping[str, Any], s: str, place: str) -> float | None:
    """The change's commit time at the source database, epoch seconds: ``source.ts_us`` /
    ``ts_ns`` (Debezium 2.x) or ``ts_ms``; None when the event has none."""
    for name, scale in (("ts_us", 1e6), ("ts_ns", 1e9), ("ts_ms", 1e3)):
        v = src.get(name)
        if v is not None:
            return _int(v, f"{s}{name}", place) / scale
    return None


def _has_key(article: Article, image: Mapping[str, Any]) -> bool:
    return all(image.get(k) is not None for k in article.key)


CLASSES: dict[str, type[Format]] = {"debezium": DebeziumFormat}
