"""A run's schedule as it happened: the steps every stream took, read back from its events.

A step is a chunk of calls sent on one connection (in a controlled schedule: one call), a
commit or a rollback. ``schedule.jsonl`` holds one step per line in the order they ran: a
controlled schedule's own order (the gate numbers its turns), else the order they started in
(free connections race: that order is one serialization of what overlapped)::

    {"step": 0, "stream": 1, "round": 0, "kind": "exec", "lsns": [17, 18], "anchor": 12,
     "result": "ok" | {"class", "code", "message"}, "t0": 1763.2, "t1": 1763.3}

``anchor`` is the lsn of the last command the stream sent before the step: a commit, a
rollback or a progress row is known by it when a shrunk stream follows the recorded order
(:func:`applier.apply.gate.order_of`).

Every command is in some step's ``lsns``, so a schedule grows with the stream: one whose steps'
texts exceed ``KEEP_CHARS`` is not collected to the driver. Each stream task wrote its own
events file, its steps in the order it ran them: the driver merges those files, a batch of each
at a time, into a file (:class:`ScheduleFile`). Where it cannot (a file out of order, or not on
the driver's file system), Spark sorts the steps into range partitions and writes them as
Parquet files (one per partition, named by its index), which the driver reads in order, a
batch at a time, into the file. Either way the file is read back lazily. Neither the driver's
JVM nor its Python holds more than a batch: at 100M commands
``toLocalIterator`` (a partition at a time through the driver's JVM) ran its 2 GiB heap out.
"""

from __future__ import annotations

import heapq
import json
import shutil
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from pathlib import Path
from typing import Any, overload

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from applier import leftovers
from applier.apply.digest import STEP_COLUMNS, EventDigest
from applier.errors import InputError
from applier.sparkenv import write_run_parquet

KEEP_CHARS = 4_000_000  # the steps' texts (lsns, errors) kept in memory at most
READ_ROWS = 256  # steps per batch the driver reads from a spilled schedule's Parquet files
_STEP_COLUMNS = STEP_COLUMNS


class ScheduleFile(Sequence[Mapping[str, Any]]):
    """A schedule written to ``path`` (JSON Lines, one step a line), read back lazily; the
    folder it lives in is removed with the object (or at exit) when ``owned``. A copy (pickled,
    deep-copied) reads the same file and owns nothing."""

    def __init__(self, path: Path, steps: int, owned: bool = True) -> None:
        self.path = path
        self.steps = steps
        if owned:
            weakref.finalize(self, shutil.rmtree, path.parent, True)

    def __reduce__(self) -> tuple[Any, ...]:
        return (ScheduleFile, (self.path, self.steps, False))

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        with self.path.open(encoding="utf-8") as f:
            for line in f:
                yield json.loads(line)

    @overload
    def __getitem__(self, i: int) -> Mapping[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Mapping[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> Mapping[str, Any] | Sequence[Mapping[str, Any]]:
        if isinstance(i, slice):
            return list(self)[i]
        j = i + self.steps if i < 0 else i
        if not 0 <= j < self.steps:
            raise IndexError(i)
        return next(islice(iter(self), j, None))

    def __repr__(self) -> str:
        return f"ScheduleFile({str(self.path)!r}, {self.steps} steps)"


def _step(i: int, r: Any) -> dict[str, Any]:
    detail = json.loads(r["message"] or "{}")
    result: Any = "ok"
    if r["class"] is not None:
        result = {"class": r["class"], "code": r["code"], "message": detail.get("error")}
    return {
        "step": i,
        "stream": r["stream"],
        "round": r["round"],
        "kind": r["outcome"],
        "lsns": detail.get("lsns") or [],
        "anchor": detail.get("anchor"),
        "result": result,
        "t0": r["t_exec"],
        "t1": r["t_commit"],
    }


def schedule_rows(
    events: DataFrame,
    keep_chars: int = KEEP_CHARS,
    part_chars: int = KEEP_CHARS,
    work: str | Path | None = None,
    digest: EventDigest | None = None,
    files: Sequence[str | Path] = (),
) -> Sequence[Mapping[str, Any]]:
    """The steps of the run's events, in the order they ran (a controlled schedule's own
    order; else by start time, then stream). A schedule longer than ``keep_chars`` is a
    :class:`ScheduleFile`. ``files``: the Parquet files that hold every step of ``events``
    (the stream tasks' own, :func:`event_files`): where each one's steps are in order, the
    driver merges them into the schedule's file. Otherwise Spark writes the steps sorted, in
    range partitions of about ``part_chars`` characters of texts, as Parquet under ``work`` (a
    folder the executors and the driver share, as the run's events; default: a new local one;
    removed once read), and the driver streams those files in order into the schedule's file."""
    steps = events.where("kind = 'step'").select(*_STEP_COLUMNS)
    if digest is None:
        size = steps.agg(
            F.count("*").alias("steps"),
            F.count("n").alias("numbered"),
            F.coalesce(F.sum(F.length("message")), F.lit(0)).alias("chars"),
        ).collect()[0]
        n_steps, numbered, chars = int(size["steps"]), int(size["numbered"]), int(size["chars"])
    else:  # the events' digest has counted them already
        n_steps, numbered, chars = digest.steps, digest.numbered_steps, digest.step_chars
    controlled = n_steps > 0 and numbered == n_steps
    if not n_steps:
        return []
    if chars <= keep_chars:
        # the digest carries the steps where they were few; else one job collects them
        rows: list[Any] = (
            digest.step_rows if digest is not None and digest.step_rows is not None else steps.collect()
        )
        rows = list(rows)
        rows.sort(
            key=(lambda r: (r["n"], 0.0, r["stream"]))
            if controlled
            else (lambda r: (0, r["t_exec"], r["stream"]))
        )
        return [_step(i, r) for i, r in enumerate(rows)]
    by = ("n", "stream") if controlled else ("t_exec", "stream", "round")
    if files and _in_step_order(files, by, n_steps):
        # Each stream task wrote its own events file, its steps in the order it ran them: the
        # driver merges those files (no Spark job: sorting them cost a shuffle, a Parquet
        # write and a read, ~0.8 s at 1M commands).
        folder = leftovers.owned_dir("applier-work-")
        path = folder / "schedule.jsonl"
        try:
            write_schedule((_step(i, r) for i, r in enumerate(_merged(files, by))), path)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return ScheduleFile(path, n_steps)
    parts = max(1, -(-chars // max(part_chars, 1)))
    ordered = steps.repartitionByRange(parts, *by).sortWithinPartitions(*by)
    folder = leftovers.owned_dir("applier-work-")
    path = folder / "schedule.jsonl"
    spill = Path(work) if work is not None else folder / "steps"
    try:
        write_run_parquet(ordered, spill)
        write_schedule((_step(i, r) for i, r in enumerate(_in_order(spill))), path)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    return ScheduleFile(path, n_steps)


def _in_order(folder: Path) -> Iterator[Mapping[str, Any]]:
    """The rows of a sorted DataFrame written as Parquet: its part files in partition order
    (``part-NNNNN-...``: an empty partition writes none), each read ``READ_ROWS`` at a time."""
    import pyarrow.parquet as pq

    for f in sorted(folder.glob("part-*.parquet"), key=lambda p: int(p.name.split("-")[1])):
        with pq.ParquetFile(f) as pf:
            for batch in pf.iter_batches(batch_size=READ_ROWS):
                yield from batch.to_pylist()


def event_files(folders: Iterable[str | Path]) -> list[Path]:
    """The Parquet files of the events the stage of each folder wrote (one per stream task)."""
    return [f for d in folders for f in sorted(Path(d).glob("part-*.parquet"))]


def _file_steps(f: str | Path, columns: Sequence[str]) -> Iterator[dict[str, Any]]:
    """The step events of one events file, in the file's order, ``READ_ROWS`` at a time."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    with pq.ParquetFile(f) as pf:
        for batch in pf.iter_batches(batch_size=READ_ROWS, columns=["kind", *columns]):
            yield from batch.filter(pc.equal(batch.column("kind"), "step")).drop_columns("kind").to_pylist()


def _order(by: Sequence[str]) -> Any:
    """The sort key of a step, as Spark's ascending sort orders it (NULL first)."""
    return lambda r: tuple((0, 0) if r[c] is None else (1, r[c]) for c in by)


def _in_order_each(f: str | Path, by: Sequence[str]) -> int | None:
    """The steps of file ``f`` if they are in order by ``by`` (read without their texts);
    None when one is not."""
    key, last, n = _order(by), None, 0
    for r in _file_steps(f, by):
        k = key(r)
        if last is not None and k < last:
            return None
        last, n = k, n + 1
    return n


def _in_step_order(files: Sequence[str | Path], by: Sequence[str], steps: int) -> bool:
    """Whether the ``files`` hold the ``steps`` steps, each file's in order by ``by``."""
    try:
        counts = [_in_order_each(f, by) for f in files]
    except OSError:  # a file the driver cannot read (not on its file system)
        return False
    return all(c is not None for c in counts) and sum(c or 0 for c in counts) == steps


def _merged(files: Sequence[str | Path], by: Sequence[str]) -> Iterator[dict[str, Any]]:
    """The steps of ``files`` (each in order) merged in order: ties in file order."""
    return heapq.merge(*(_file_steps(f, list(_STEP_COLUMNS)) for f in files), key=_order(by))


def conflict_rows(
    events: DataFrame, digest: EventDigest | None = None
) -> list[tuple[int | None, int | None, str]]:
    """(lsn, stream, class) of every conflict, sorted: what a replay compares (from the events'
    digest where the caller has it)."""
    if digest is not None:
        rows: list[Any] = digest.of("conflict")
    else:
        rows = events.where("kind = 'conflict'").select("lsn", "stream", "class").collect()
    return sorted(
        ((r["lsn"], r["stream"], r["class"]) for r in rows),
        key=lambda x: (x[0] or -1, x[1] or -1, x[2] or ""),
    )


def write_schedule(steps: Iterable[Mapping[str, Any]], path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(steps, ScheduleFile):
        if steps.path.resolve() != p.resolve():
            shutil.copyfile(steps.path, p)
        return p
    with p.open("w", encoding="utf-8") as f:
        for st in steps:
            f.write(json.dumps(st, default=str) + "\n")
    return p


def read_schedule(path: str | Path) -> list[dict[str, Any]]:
    """A recorded schedule.jsonl; an error names the file and line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"schedule file {p}: {e.strerror or e}") from None
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            st = json.loads(line)
        except ValueError as e:
            raise InputError(f"{p}:{n}: not JSON ({e})") from None
        if not isinstance(st, dict) or "kind" not in st or not isinstance(st.get("lsns", []), list):
            raise InputError(f"{p}:{n}: not a schedule step (an object with kind and lsns)")
        out.append(st)
    return out
