"""Input files checked on the driver before Spark reads them (cheap: no Spark, one read of each
file): they exist, are regular files or folders of them, can be read, JSON Lines files are
UTF-8 text and Parquet files are Parquet. Spark would otherwise turn invalid UTF-8 into
U+FFFD in silence, fail with a Java stack on a fake Parquet file, or wait forever on a FIFO.
Errors name the file (and the line of a bad byte).

That one reading is the driver's only one (:func:`check_inputs` returns it, and the run passes
it on): it also digests the files (the run's identity) and notes what the stream holds (its
schema changes' lines, whether commands carry sub-positions), so that Spark reads a canonical
file once, in its validation, and no job sniffs it first.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from applier.errors import InputError

JSON_SUFFIXES = (".jsonl", ".json", ".ndjson")
PARQUET_SUFFIX = ".parquet"
_MAGIC = b"PAR1"
_CHUNK = 1 << 20
SMALL = 4 << 20  # bytes: below, one Spark partition per file and the checks across rows on the driver
DDL_KEPT = 10_000  # lines that mention "DDL" the scan keeps (schema changes are few); more: Spark finds them
SEQ_PARSED = 10_000  # lines that mention "seq" the scan parses for a sub-position; more: Spark looks


@dataclass(frozen=True)
class InputFiles:
    """The files of a change or snapshot path, checked: ``parquet`` or JSON Lines; ``records``:
    some line holds more than white space (Parquet: not known before Spark reads it). What the
    driver's one reading of each file found besides (:func:`input_files`): their size, digest,
    and the lines that say what the stream holds, so that nothing reads them again to find out."""

    path: Path
    files: tuple[Path, ...]
    parquet: bool
    records: bool
    size: int = 0  # bytes in all files
    events: tuple[Path, ...] = ()  # the JSON Lines files that mention "DDL" (schema changes)
    # Some command carries a top-level ``seq`` (a sub-position): False where no JSON Lines line
    # mentions "seq" or each that does was read; None: too many mention it to read on the driver.
    subpositions: bool | None = False
    # The (file:line, text) of every JSON Lines line that mentions "DDL", in file order (a schema
    # change is one of them); None: not kept (too many, or line ends Spark counts otherwise).
    ddl_lines: tuple[tuple[str, str], ...] | None = ()
    # sha256 of the path as :func:`file_digest` computes it (a run's identity); None: a file
    # beside the inputs could not be read (the identity reads them again).
    digest: str | None = None

    @property
    def small(self) -> bool:
        """Small enough to check on the driver and to read as one partition per file (Parquet
        holds several times its size in rows)."""
        return self.size <= (SMALL // 8 if self.parquet else SMALL)


@dataclass(frozen=True)
class Inputs:
    """A run's input paths as the driver's scan found them (:func:`check_inputs`): passed on to
    the reading and the run's identity, so that each file is opened once."""

    changes: InputFiles | None = None
    snapshot: InputFiles | None = None


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device")):
        if test(mode):
            return name
    return "a device" if stat.S_ISBLK(mode) else "not a regular file"


def _stat(path: Path, what: str) -> os.stat_result:
    try:
        return path.stat()
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what}") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read the {what}: {e.strerror}") from None


def _listed(path: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """A folder's files with these suffixes (below it too), not hidden nor Spark's ``_SUCCESS``."""
    try:
        return sorted(
            p
            for p in path.rglob("*")
            if p.suffix.lower() in suffixes and not p.name.startswith((".", "_")) and not p.is_dir()
        )
    except OSError as e:
        raise InputError(f"{path}: cannot list the folder: {e.strerror}") from None


def _digested(root: Path) -> list[Path]:
    """The files a path's digest covers: the file, or every file below the folder."""
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]


def _named(root: Path, f: Path) -> bytes:
    return str(f.relative_to(root) if root.is_dir() else f.name).encode() + b"\0"


def file_digest(path: str | Path) -> str:
    """sha256 over a file, or over a folder's files (their relative names, then contents): what
    :func:`input_files` computes as it checks them (a run's identity, :mod:`applier.pipeline.identity`)."""
    root = Path(path)
    h = hashlib.sha256()
    for f in _digested(root):
        _feed(h, root, f)
    return h.hexdigest()


def _feed(h: Any, root: Path, f: Path) -> None:
    """``f``'s name (relative to ``root``), bytes and a separator into the digest ``h``."""
    with f.open("rb") as fh:
        h.update(_named(root, f))
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
        h.update(b"\0")


def input_files(
    path: str | Path, what: str = "change file", suffixes: tuple[str, ...] = JSON_SUFFIXES
) -> InputFiles:
    """The files of a ``--changes`` / ``--snapshot`` path (a file, or a folder of JSON Lines or
    Parquet files; ``suffixes``: the text files a folder is read for), each checked; InputError
    naming the file otherwise. One reading of each file checks it, digests it (with the folder's
    other files, as :func:`file_digest`) and finds what its lines hold (:class:`_Lines`)."""
    path = Path(path)
    mode = _stat(path, f"{what} or folder").st_mode
    if stat.S_ISDIR(mode):
        parquet = bool(_listed(path, (PARQUET_SUFFIX,)))
        files = _listed(path, (PARQUET_SUFFIX,) if parquet else suffixes)
        if not files:
            shown = " or ".join(s for s in (*suffixes[:1], PARQUET_SUFFIX))
            raise InputError(f"{path}: a folder without {shown} files; expected a {what} or a folder of them")
        beside = _digested(path)
    else:
        parquet = path.suffix.lower() == PARQUET_SUFFIX
        files = [path]
        beside = []
    h, digested = hashlib.sha256(), True
    size, found = 0, []
    for f in sorted({*files, *beside}):
        if f not in files:  # a file beside the inputs (Spark's _SUCCESS, a .crc): in the digest only
            digested = digested and _digest_into(h, path, f)
            continue
        st = _stat(f, what)
        if not stat.S_ISREG(st.st_mode):
            shown = "a folder" if stat.S_ISDIR(st.st_mode) else _kind(st.st_mode)
            raise InputError(f"{f}: {shown}, expected a {what}")
        size += st.st_size
        h.update(_named(path, f))
        if parquet:
            _check_parquet(f, st.st_size, what, h)
        else:
            found.append(_check_text(f, what, h))
        h.update(b"\0")
    seqs, kept = [lines.seq for lines in found], [lines.ddl for lines in found]
    return InputFiles(
        path,
        tuple(files),
        parquet,
        any(lines.records for lines in found),
        size,
        tuple(lines.f for lines in found if lines.ddl_mentioned),
        True if True in seqs else None if None in seqs else False,
        None if None in kept else tuple(x for ddl in kept if ddl is not None for x in ddl),
        h.hexdigest() if digested else None,
    )


def _digest_into(h: Any, root: Path, f: Path) -> bool:
    """``f``'s name and bytes into the digest; False where it cannot be read."""
    try:
        _feed(h, root, f)
        return True
    except OSError:
        return False


def _check_parquet(f: Path, size: int, what: str, h: Any) -> None:
    head = tail = b""
    try:
        with f.open("rb") as fh:
            while chunk := fh.read(_CHUNK):
                h.update(chunk)
                head = head or chunk[:4]
                tail = (tail + chunk)[-4:]
    except OSError as e:
        raise InputError(f"{f}: cannot read the {what}: {e.strerror}") from None
    if size < 12 or head != _MAGIC or tail != _MAGIC:
        raise InputError(f"{f}: not a Parquet file (no PAR1 header and footer); expected a Parquet {what}")


class _Lines:
    """What a JSON Lines file holds, fed its whole lines as it is read: a record (a line not
    blank), the lines that mention "DDL" (a schema change is one: kept with their place, at most
    :data:`DDL_KEPT`), and whether a record carries a top-level "seq" (the lines that mention it
    parsed until one does, at most :data:`SEQ_PARSED`). Where Spark would count lines otherwise (a
    carriage return alone ends a line there), neither is decided here."""

    def __init__(self, f: Path) -> None:
        self.f = f
        self.records = self.ddl_mentioned = False
        self.ddl: list[tuple[str, str]] | None = []
        self.seq: bool | None = False
        self.parsed = 0

    def feed(self, whole: bytes, text: str, line: int) -> None:
        """``whole``: whole lines (``text`` decoded), the first of them line ``line``."""
        self.records = self.records or bool(text.strip())
        lone_cr = whole.count(b"\r") != whole.count(b"\r\n")
        if b'"DDL"' in whole:
            self.ddl_mentioned = True
            if lone_cr:
                self.ddl = None
            kept = self.ddl
            if kept is not None:
                kept += ((f"{self.f}:{at}", t) for at, t in _mentioning(whole, b'"DDL"', line))
                if len(kept) > DDL_KEPT:
                    self.ddl = None
        if self.seq is False and b'"seq"' in whole:
            if lone_cr:
                self.seq = None
                return
            for _, t in _mentioning(whole, b'"seq"', line):
                if self.parsed >= SEQ_PARSED:
                    self.seq = None
                    return
                self.parsed += 1
                if _top_level_seq(t):
                    self.seq = True
                    return


def _mentioning(whole: bytes, needle: bytes, first: int) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line of ``whole`` holding ``needle``; its first line is
    ``first``. The text as Spark's textFile gives it: without its line end, nor a file's BOM."""
    at, line, pos = 0, first, whole.find(needle)
    while pos >= 0:
        start = whole.rfind(b"\n", 0, pos) + 1
        end = whole.find(b"\n", pos)
        end = len(whole) if end < 0 else end
        line += whole.count(b"\n", at, start)
        at = start
        text = whole[start:end].decode("utf-8").rstrip("\r")
        yield line, text.removeprefix("\ufeff") if line == 1 else text
        pos = whole.find(needle, end)


def _top_level_seq(text: str) -> bool:
    try:
        rec = json.loads(text)
    except (ValueError, RecursionError):
        return False  # reported with its line by the validation
    return isinstance(rec, dict) and rec.get("seq") is not None


def _check_text(f: Path, what: str, h: Any = None) -> _Lines:
    """UTF-8 text throughout (else InputError naming the line), its bytes into the digest ``h``;
    what its lines hold."""
    line, rest, lines = 1, b"", _Lines(f)
    try:
        with f.open("rb") as fh:
            while True:
                chunk = fh.read(_CHUNK)
                if h is not None:
                    h.update(chunk)
                buf = rest + chunk
                cut = len(buf) if not chunk else buf.rfind(b"\n") + 1
                whole, rest = buf[:cut], buf[cut:]
                try:
                    text = whole.decode("utf-8")
                except UnicodeDecodeError as e:
                    at = line + whole.count(b"\n", 0, e.start)
                    col = e.start - (whole.rfind(b"\n", 0, e.start) + 1) + 1
                    bad = whole[e.start : e.start + 1].hex()
                    raise InputError(
                        f"{f}:{at}: not UTF-8 text (byte 0x{bad} at column {col}); a {what} is UTF-8"
                    ) from None
                lines.feed(whole, text, line)
                line += whole.count(b"\n")
                if not chunk:
                    return lines
    except OSError as e:
        raise InputError(f"{f}: cannot read the {what}: {e.strerror}") from None


def change_files(path: str | Path, suffixes: tuple[str, ...] = JSON_SUFFIXES) -> InputFiles:
    """``input_files`` of a change path that holds at least one record."""
    found = input_files(path, "change file", suffixes)
    if not found.parquet and not found.records:
        raise InputError(f"{found.path}: no change records (the file is empty or blank); nothing to apply")
    return found


def check_inputs(
    changes: str | Path | None,
    snapshot: str | Path | None,
    custom_sql: Sequence[str | Path] = (),
    suffixes: tuple[str, ...] = JSON_SUFFIXES,
) -> Inputs:
    """Every input path of a run checked before anything starts (cheap, no Spark): the change
    and snapshot files as :func:`input_files` checks them, each custom SQL file a readable
    UTF-8 text file. A snapshot without changes is refused: it would be ignored. The scan of
    the change and snapshot files is returned: the run reads and digests them from it."""
    if snapshot is not None and changes is None:
        raise InputError(
            f"{snapshot}: a snapshot is read with the change files it belongs to; give --changes too"
        )
    found = Inputs(
        change_files(changes, suffixes) if changes is not None else None,
        input_files(snapshot, "snapshot") if snapshot is not None else None,
    )
    for sql in custom_sql:
        f = Path(sql)
        st = _stat(f, "custom SQL file")
        if not stat.S_ISREG(st.st_mode):
            shown = "a folder" if stat.S_ISDIR(st.st_mode) else _kind(st.st_mode)
            raise InputError(f"{f}: {shown}, expected a custom SQL file")
        _check_text(f, "custom SQL file")
    return found
