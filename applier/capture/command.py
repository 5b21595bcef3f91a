"""``applier capture``: a publisher's wal2json slot read into a file ``applier run --format
wal2json|wal2json2 --changes FILE`` reads, and with ``--snapshot`` the published tables at the
slot's consistent point.

**Exactly once, across kills.** Changes are peeked, written and fsynced to ``--out``, and only
then confirmed on the slot (applier.capture.slot): a kill -9 at any moment loses nothing (the
slot still holds what was not confirmed) and doubles nothing: an existing ``--out`` is a capture
to continue, its last whole transaction's end LSN is read back (version 1: the last line's
``nextlsn``; version 2: the last ``C`` line's), anything after it (a line or a transaction cut
by the kill) is truncated, and the slot is advanced to that LSN before anything is read, so a
batch written but not yet confirmed when the kill came is not written again.

**NaN and ±Infinity** (issue 31). The slot is read with ``numeric-data-types-as-string`` where
its wal2json takes it (2.6 and later: tried once, applier.capture.slot.takes_numbers_as_strings),
so a NaN or ±Infinity arrives as its text, which the readers refuse naming the line, column and
value (SQL Server's decimal and float hold neither). Where it does not (2.5, Debian bookworm's),
wal2json writes them as null, which nothing tells from a NULL: the command says so once, on
stderr, naming the published numeric / real / double precision columns it can hit, and how to
avoid it. Each run of the command appends what it asked the slot for to ``FILE.meta`` beside
``--out`` (JSON Lines: the options, whether numbers came as strings, those columns, the
warning). The ``--snapshot`` reads every value as text, so a NaN or ±Infinity already in a
table is refused there with its table, key and column, and the new slot is dropped again.

**Stops**: at ``--until-lsn`` (every transaction committing before it, once the publisher's
flushed WAL has reached it), after ``--duration`` seconds, or, with neither, when no change is
pending. SIGINT (Ctrl-C) and SIGTERM stop after the batch in hand is written and confirmed;
the exit code is then 130 / 143 as for ``applier run``. Refusals (exit 2, one line naming the
option): an unknown ``--format``, a missing slot without ``--create-slot``, a slot of another
plugin, a publisher without ``wal_level = logical``, a source that is not PostgreSQL.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from applier import failpoints
from applier.capture import slot as pub
from applier.capture.meta import meta_path
from applier.capture.snapshot import published, write_snapshot
from applier.errors import ApplierError, ConfigError, TargetError, did_you_mean
from applier.targets.connstr import redact
from applier.targets.endpoint import Endpoint, preflight

BATCH = 2000  # rows a peek returns at most (whole transactions: more when one is larger)
POLL_S = 0.2  # sleep between peeks that found nothing
PROGRESS_S = 2.0  # a progress line at most this often
SHOWN_COLUMNS = 8  # columns a NaN warning names on the console (FILE.meta has them all)


@dataclass
class Tally:
    """Changes and transactions written (a transaction whose changes --tables left out, which
    wal2json still delivers empty, is not counted)."""

    transactions: int = 0
    changes: int = 0
    last_lsn: int | None = None
    _open: int = 0  # version 2: changes since the last B

    def count(self, version: int, data: str) -> None:
        doc = json.loads(data)
        if version == 1:
            n = sum(1 for c in doc.get("change", ()) if c.get("kind") in ("insert", "update", "delete"))
            self.changes += n
            self.transactions += n > 0
        elif doc.get("action") == "B":
            self._open = 0
        elif doc.get("action") == "C":
            self.transactions += self._open > 0
        elif doc.get("action") in ("I", "U", "D"):
            self.changes += 1
            self._open += 1


@dataclass(frozen=True)
class Numbers:
    """How the slot's wal2json writes NaN and ±Infinity: as strings (``numeric-data-types-as-
    string`` taken), or as null in these columns (``schema.table.column (type)``)."""

    as_strings: bool
    nan_as_null: tuple[str, ...] = ()

    def warning(self, shown: int = SHOWN_COLUMNS, meta: str = "FILE.meta") -> str | None:
        """One line; None when nothing can be lost. ``shown``: the columns named, the rest counted."""
        if self.as_strings or not self.nan_as_null:
            return None
        cols = ", ".join(self.nan_as_null[:shown])
        more = len(self.nan_as_null) - shown
        if more > 0:
            cols += f" and {more} more (every one in {meta})"
        return (
            f"this wal2json does not take {pub.NUMBERS_AS_STRINGS} (wal2json 2.6 and later do): a NaN "
            f"or ±Infinity in {cols} arrives as NULL, which nothing tells from a NULL, so the subscriber "
            "would differ from the publisher unseen (and SQL Server's decimal/float hold neither); with "
            "wal2json 2.6 or later they arrive as text, which applier refuses naming the line and column"
        )


def _numbers(cur: Any, slot: str, version: int, tables: list[str] | None) -> Numbers:
    if pub.takes_numbers_as_strings(cur, slot, pub.wal2json_options(version, tables)):
        return Numbers(True)
    return Numbers(False, tuple(pub.nan_as_null_columns(cur, tables)))


def _options(a: argparse.Namespace) -> tuple[int, list[str] | None, int | None, float | None]:
    """--format, --tables, --until-lsn, --duration checked before anything is reached."""
    version = pub.FORMAT_VERSIONS.get(a.capture_format)
    if version is None:
        hint = did_you_mean(a.capture_format, pub.FORMAT_VERSIONS)
        hint = f"; {hint}" if hint else ""
        raise ConfigError(f"--format: unknown format {a.capture_format!r} (wal2json or wal2json2){hint}")
    pub.check_slot_name(a.slot)
    tables = [t.strip() for t in a.tables.split(",") if t.strip()] if a.tables else None
    for t in tables or ():
        if "." not in t:
            raise ConfigError(f"--tables: {t!r}: name each table as schema.table")
    if a.until_lsn is not None and a.duration is not None:
        raise ConfigError(
            "--until-lsn, --duration: give one of them (or neither: stop when nothing is pending)"
        )
    until = pub.lsn_int(a.until_lsn, "--until-lsn") if a.until_lsn is not None else None
    if a.duration is not None and not a.duration > 0:
        raise ConfigError(f"--duration: expected seconds above 0, got {a.duration}")
    if a.snapshot and not a.create_slot:
        raise ConfigError("--snapshot: the snapshot is taken where a new slot starts: give --create-slot too")
    return version, tables, until, a.duration


def _reach(source: str) -> Endpoint:
    """The publisher, reached once; a PostgreSQL driver is required. Messages are redacted."""
    try:
        endpoint = preflight(source, role="publisher")
    except TargetError as e:
        raise TargetError(f"--source: {e}") from None
    if endpoint.dialect_name != "postgres":
        raise TargetError(
            f"--source: {endpoint.description} is {endpoint.dialect_name}; capture reads PostgreSQL's "
            "logical decoding (SQL Server: --format mssql-cdc --source on `applier run`)"
        )
    return endpoint


def resume_point(out: Path, version: int) -> tuple[int | None, int]:
    """(end LSN of the last whole transaction in an earlier capture ``out``, its transactions),
    the file truncated after that transaction; (None, 0) for a new or empty file."""
    if not out.exists():
        return None, 0
    last: int | None = None
    keep = 0  # bytes up to the end of the last whole transaction
    transactions = 0
    pos = 0
    with out.open("rb") as f:
        for number, raw in enumerate(f, 1):
            pos += len(raw)
            if not raw.endswith(b"\n"):
                break  # cut by a kill: dropped
            if not raw.strip():
                continue
            try:
                doc = json.loads(raw)
            except ValueError:
                raise ConfigError(
                    f"--out: {out}:{number}: not a wal2json line: not an earlier capture"
                ) from None
            if not isinstance(doc, dict) or (version == 1) != ("change" in doc):
                other = "wal2json2" if version == 1 else "wal2json"
                raise ConfigError(f"--out: {out} holds a capture in another format (--format {other}?)")
            if version == 1 or doc.get("action") == "C":
                nextlsn = doc.get("nextlsn")
                if not isinstance(nextlsn, str):
                    raise ConfigError(f"--out: {out}:{number}: no nextlsn (not written by applier capture)")
                last, keep = pub.lsn_int(nextlsn, f"--out: {out}:{number}: nextlsn"), pos
                transactions += 1
    if keep < out.stat().st_size:
        with out.open("r+b") as f:
            f.truncate(keep)
            os.fsync(f.fileno())
    return last, transactions


@contextmanager
def _signals() -> Iterator[list[int]]:
    """SIGINT and SIGTERM noted instead of raised: the loop stops between batches."""
    got: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield got
        return

    def note(signum: int, frame: object) -> None:
        got.append(signum)

    previous = {s: signal.signal(s, note) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield got
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _progress(started: float, tally: Tally, final: bool = False) -> str:
    seconds = max(time.monotonic() - started, 1e-9)
    at = f", at {pub.lsn_text(tally.last_lsn)}" if tally.last_lsn is not None else ""
    head = "captured" if final else "capturing:"
    return (
        f"{head} {tally.changes:,} changes in {tally.transactions:,} transactions "
        f"({tally.changes / seconds:,.0f} changes/s){at}"
    )


def capture(a: argparse.Namespace, say: Callable[[str], None], stop: list[int]) -> int:
    """The command's work; ``stop`` fills with a signal's number when one arrives (checked
    between batches: a slot created and its snapshot written are always finished)."""
    version, tables, until, duration = _options(a)
    out = Path(a.out)
    if a.snapshot and out.exists() and out.stat().st_size > 0:
        raise ConfigError(f"--out: {out} holds an earlier capture; a new slot and --snapshot start a new one")
    endpoint = _reach(a.source)
    conn = endpoint.connect()
    conn.autocommit = True
    try:
        cur = conn.cursor()
        pub.setup_session(cur)
        pub.check_logical(cur)
        database = cur.execute("SELECT current_database()").fetchone()[0]
        found = pub.find_slot(cur, a.slot)
        if a.create_slot:
            if found is not None:
                raise ConfigError(
                    f"--create-slot: slot {a.slot!r} exists already (read it without --create-slot, or "
                    f"drop it: SELECT pg_drop_replication_slot('{a.slot}'))"
                )
            if a.snapshot:
                created = False
                try:
                    with pub.exported_slot(endpoint, a.slot) as (point, snapshot):
                        created = True
                        done = _snapshot(endpoint, snapshot, Path(a.snapshot), tables)
                except ApplierError as e:
                    if not created or pub.find_slot(cur, a.slot) is not None:
                        raise
                    raise type(e)(f"{e} (slot {a.slot} dropped again: nothing was captured)") from None
                say(
                    f"slot {a.slot} created at {pub.lsn_text(point)}; snapshot: {done.rows:,} rows of "
                    f"{len(done.articles)} table(s) in {done.path}"
                )
            else:
                point = pub.create_slot(cur, a.slot)
                say(f"slot {a.slot} created at {pub.lsn_text(point)}")
        else:
            pub.check_slot(found, a.slot, database)
        numbers = _numbers(cur, a.slot, version, tables)
        warning = numbers.warning(meta=str(meta_path(out)))
        if warning is not None:
            print(f"applier capture: warning: {warning}", file=sys.stderr)
        return _consume(cur, a.slot, out, version, tables, until, duration, say, stop, numbers)
    finally:
        conn.close()


def _snapshot(endpoint: Endpoint, snapshot: str, path: Path, tables: list[str] | None) -> Any:
    import pyodbc

    conn = pyodbc.connect(endpoint.connection_string, autocommit=True, timeout=30)
    try:
        pub.setup_session(conn.cursor())
        conn.autocommit = False
        pub.adopt_snapshot(conn, snapshot, endpoint.dialect.literal)
        catalog = published(conn, endpoint.description, tables)
        for m in catalog.problems:
            print(f"applier capture: not carried: {m}", file=sys.stderr)
        done = write_snapshot(conn, catalog.articles, path, endpoint.dialect)
        conn.commit()
        return done
    finally:
        conn.close()


def _consume(
    cur: Any,
    slot: str,
    out: Path,
    version: int,
    tables: list[str] | None,
    until: int | None,
    duration: float | None,
    say: Callable[[str], None],
    stop: list[int],
    numbers: Numbers,
) -> int:
    options = pub.wal2json_options(version, tables, numbers.as_strings)
    resumed, earlier = resume_point(out, version)
    _record(out, slot, version, options, numbers)
    if resumed is not None:
        confirmed = pub.find_slot(cur, slot)
        if confirmed is not None and (confirmed.confirmed or 0) < resumed:
            pub.advance(cur, slot, resumed)  # written before a kill, not confirmed then
        say(f"continuing {out} after {pub.lsn_text(resumed)} ({earlier:,} transactions in it)")
    started = time.monotonic()
    shown = started
    tally = Tally()
    with out.open("a", encoding="utf-8") as f:
        while not stop:
            batch = pub.peek(cur, slot, options, until, BATCH)
            if batch:
                f.writelines(data + "\n" for _, data in batch)
                f.flush()
                os.fsync(f.fileno())
                failpoints.reach("capture.written")  # written, not confirmed: a kill here is resumed
                pub.advance(cur, slot, batch[-1][0])
                for _, data in batch:
                    tally.count(version, data)
                tally.last_lsn = batch[-1][0]
            elif until is not None:
                if pub.current_lsn(cur) >= until:
                    break
            elif duration is None:
                break
            now = time.monotonic()
            if duration is not None and now - started >= duration:
                break
            if now - shown >= PROGRESS_S:
                print(_progress(started, tally), file=sys.stderr, flush=True)
                shown = now
            if not batch:
                time.sleep(POLL_S)
    say(f"{_progress(started, tally, final=True)} to {out}")
    if stop:
        name = signal.Signals(stop[0]).name
        print(f"stopped by {name}: everything consumed from the slot is in {out}", file=sys.stderr)
        return 128 + stop[0]
    return 0


def _record(out: Path, slot: str, version: int, options: tuple[str, ...], numbers: Numbers) -> None:
    """What this run asked the slot for, appended to ``FILE.meta`` (one line a run: a capture
    continued by a later run under another wal2json says so)."""
    entry = {
        "slot": slot,
        "format": next(name for name, v in pub.FORMAT_VERSIONS.items() if v == version),
        "wal2json_options": dict(zip(options[::2], options[1::2], strict=True)),
        pub.NUMBERS_AS_STRINGS: numbers.as_strings,
        "nan_as_null_columns": list(numbers.nan_as_null),
        "warning": numbers.warning(shown=len(numbers.nan_as_null)),
    }
    with meta_path(out).open("a", encoding="utf-8") as f:
        f.write(json.dumps(entry, ensure_ascii=False) + "\n")


def cmd_capture(a: argparse.Namespace) -> int:
    try:
        with _signals() as stop:
            return capture(a, print, stop)
    except ApplierError as e:
        text = " ".join(ln.strip() for ln in str(e).splitlines() if ln.strip())  # a driver's text spans lines
        print(f"applier capture: {redact(text)}", file=sys.stderr)
        return 2


def register(subparsers: Any) -> str:
    p = subparsers.add_parser(
        "capture",
        help="record a PostgreSQL publisher's changes from a wal2json slot (and its snapshot) for a run",
        description="Read a wal2json logical replication slot through SQL over ODBC and write what "
        "`applier run --format wal2json|wal2json2 --changes FILE` reads; with --create-slot "
        "--snapshot, also the published tables at the slot's consistent point (`--snapshot`).",
    )
    p.add_argument("--source", required=True, help="ODBC connection string of the publisher (PostgreSQL)")
    p.add_argument("--slot", required=True, help="the logical replication slot to read")
    p.add_argument("--create-slot", action="store_true", help="create the slot (wal2json) first")
    p.add_argument(
        "--format",
        dest="capture_format",
        required=True,
        help="wal2json (format-version 1: a transaction a line) or wal2json2 (format-version 2)",
    )
    p.add_argument(
        "--out",
        required=True,
        help="the capture file (an existing one is continued); FILE.meta beside it records each run's options",
    )
    p.add_argument(
        "--until-lsn", metavar="LSN", help="stop once every transaction committing before LSN is in"
    )
    p.add_argument("--duration", type=float, metavar="SECONDS", help="stop after SECONDS")
    p.add_argument(
        "--snapshot",
        metavar="FILE",
        help="with --create-slot: write the published tables as of the slot's start (applier run --snapshot)",
    )
    p.add_argument("--tables", help="only these tables: schema.table,schema.table (default: every table)")
    p.set_defaults(func=cmd_capture)
    return "capture"
