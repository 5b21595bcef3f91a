"""Input files checked on the driver before Spark reads them (cheap: no Spark, one read of each
file): they exist, are regular files or folders of them, can be read, JSON Lines files are
UTF-8 text and Parquet files are Parquet. Spark would otherwise turn invalid UTF-8 into
U+FFFD in silence, fail with a Java stack on a fake Parquet file, or wait forever on a FIFO.
Errors name the file (and the line of a bad byte).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from applier.errors import InputError

JSON_SUFFIXES = (".jsonl", ".json", ".ndjson")
PARQUET_SUFFIX = ".parquet"
_MAGIC = b"PAR1"
_CHUNK = 1 << 20
SMALL = 4 << 20  # bytes: below, one Spark partition per file and the checks across rows on the driver


@dataclass(frozen=True)
class InputFiles:
    """The files of a change or snapshot path, checked: ``parquet`` or JSON Lines; ``records``:
    some line holds more than white space (Parquet: not known before Spark reads it)."""

    path: Path
    files: tuple[Path, ...]
    parquet: bool
    records: bool
    size: int = 0  # bytes in all files
    events: tuple[Path, ...] = ()  # the JSON Lines files that mention "DDL" (schema changes)
    subpositions: bool = False  # some JSON Lines file mentions "seq" (commands with a sub-position)

    @property
    def small(self) -> bool:
        """Small enough to check on the driver and to read as one partition per file (Parquet
        holds several times its size in rows)."""
        return self.size <= (SMALL // 8 if self.parquet else SMALL)


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


def input_files(
    path: str | Path, what: str = "change file", suffixes: tuple[str, ...] = JSON_SUFFIXES
) -> InputFiles:
    """The files of a ``--changes`` / ``--snapshot`` path (a file, or a folder of JSON Lines or
    Parquet files; ``suffixes``: the text files a folder is read for), each checked; InputError
    naming the file otherwise."""
    path = Path(path)
    mode = _stat(path, f"{what} or folder").st_mode
    if stat.S_ISDIR(mode):
        parquet = bool(_listed(path, (PARQUET_SUFFIX,)))
        files = _listed(path, (PARQUET_SUFFIX,) if parquet else suffixes)
        if not files:
            shown = " or ".join(s for s in (*suffixes[:1], PARQUET_SUFFIX))
            raise InputError(f"{path}: a folder without {shown} files; expected a {what} or a folder of them")
    else:
        parquet = path.suffix.lower() == PARQUET_SUFFIX
        files = [path]
    records, size, events, seq = False, 0, [], False
    for f in files:
        st = _stat(f, what)
        if not stat.S_ISREG(st.st_mode):
            shown = "a folder" if stat.S_ISDIR(st.st_mode) else _kind(st.st_mode)
            raise InputError(f"{f}: {shown}, expected a {what}")
        size += st.st_size
        if parquet:
            _check_parquet(f, st.st_size, what)
        else:
            any_record, ddl, has_seq = _check_text(f, what)
            records = records or any_record
            seq = seq or has_seq
            if ddl:
                events.append(f)
    return InputFiles(path, tuple(files), parquet, records, size, tuple(events), seq)


def _check_parquet(f: Path, size: int, what: str) -> None:
    try:
        with f.open("rb") as fh:
            head = fh.read(4)
            fh.seek(max(size - 4, 0))
            tail = fh.read(4)
    except OSError as e:
        raise InputError(f"{f}: cannot read the {what}: {e.strerror}") from None
    if size < 12 or head != _MAGIC or tail != _MAGIC:
        raise InputError(f"{f}: not a Parquet file (no PAR1 header and footer); expected a Parquet {what}")


def _check_text(f: Path, what: str) -> tuple[bool, bool, bool]:
    """UTF-8 text throughout (else InputError naming the line); (any line is not blank, some
    line mentions "DDL", some line mentions "seq")."""
    line, records, ddl, seq, rest = 1, False, False, False, b""
    try:
        with f.open("rb") as fh:
            while True:
                chunk = fh.read(_CHUNK)
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
                records = records or bool(text.strip())
                ddl = ddl or b'"DDL"' in whole
                seq = seq or b'"seq"' in whole
                line += whole.count(b"\n")
                if not chunk:
                    return records, ddl, seq
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
) -> None:
    """Every input path of a run checked before anything starts (cheap, no Spark): the change
    and snapshot files as :func:`input_files` checks them, each custom SQL file a readable
    UTF-8 text file. A snapshot without changes is refused: it would be ignored."""
    if snapshot is not None and changes is None:
        raise InputError(
            f"{snapshot}: a snapshot is read with the change files it belongs to; give --changes too"
        )
    if changes is not None:
        change_files(changes, suffixes)
    if snapshot is not None:
        input_files(snapshot, "snapshot")
    for sql in custom_sql:
        f = Path(sql)
        st = _stat(f, "custom SQL file")
        if not stat.S_ISREG(st.st_mode):
            shown = "a folder" if stat.S_ISDIR(st.st_mode) else _kind(st.st_mode)
            raise InputError(f"{f}: {shown}, expected a custom SQL file")
        _check_text(f, "custom SQL file")
