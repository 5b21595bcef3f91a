"""The checks across the rows of a validated input: lsn and (xact_seqno, command_id) each name
one command, lsn order is transaction order (one sort, and the ends of its partitions compared
on the driver), and a snapshot key names one row. A small file's rows are checked on the
driver as they are read (:func:`position_faults`, :func:`snapshot_key_faults`); a large one's
by a job over its DataFrame. An error names the input and the places (file:line) of the
rows at fault.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from applier.errors import InputError

PLACE = "_place"  # file:line of a validated row, dropped once the checks across rows are done


class Position(NamedTuple):
    """A command's position, for the check of positions: its ``lsn`` (in a file with
    sub-positions, ``formats.canonical``: (lsn, seq)), its place in the transactions and its
    place in the input (file:line; there, the Change itself)."""

    lsn: Any
    xact_seqno: int
    command_id: int
    place: Any

    @property
    def order(self) -> tuple[int, int]:
        """Its place in transaction order: (xact_seqno, command_id)."""
        return (self.xact_seqno, self.command_id)


class Fault(NamedTuple):
    """The first fault of positions in lsn order: an lsn seen twice (``kind`` "lsn", the first
    two rows, ``times`` its rows) or a (xact_seqno, command_id) not above the one before
    ("order", the two, 0)."""

    kind: str
    before: Position
    after: Position
    times: int


class Ends(NamedTuple):
    """A partition's first and last positions in lsn order and its first fault."""

    idx: int
    first: Position
    last: Position
    fault: Fault | None


def position_ends(idx: int, it: Iterable[Any]) -> Iterator[Ends]:
    """The check of positions: rows (lsn, xact_seqno, command_id, place) in lsn order -> their
    :class:`Ends`. A canonical file's (here) and a file with sub-positions' per transaction
    (``formats.canonical``: (lsn, seq) for the lsn)."""
    first: Position | None = None
    prev: Position | None = None
    fault: Fault | None = None
    for r in it:
        cur = Position(*r)
        if prev is None:
            first = cur
        elif fault is not None and fault.kind == "lsn" and cur.lsn == fault.before.lsn:
            fault = fault._replace(times=fault.times + 1)  # count the lsn's rows
        elif fault is None and cur.lsn == prev.lsn:
            fault = Fault("lsn", prev, cur, 2)
        elif fault is None and cur.order <= prev.order:
            fault = Fault("order", prev, cur, 0)
        prev = cur
    if first is not None and prev is not None:
        yield Ends(idx, first, prev, fault)


def check_positions(df: DataFrame, origin: str, small: bool = False) -> None:
    """lsn and (xact_seqno, command_id) each name one command, and in lsn order (xact_seqno,
    command_id) rises: the apply numbers its rounds by transaction and walks each stream by
    lsn, so a stream where they disagree would be applied in part and then stop. One sort by
    lsn (equal lsns land in one partition); each partition reports its ends and first fault.
    ``small``: the positions are sorted on the driver instead (no shuffle)."""
    cols = df.select("lsn", "xact_seqno", "command_id", PLACE)
    if small:
        position_faults(sorted(Position(*r) for r in cols.collect()), origin)
        return
    parts = max(1, df.rdd.getNumPartitions())
    ranged = cols.repartitionByRange(parts, "lsn").sortWithinPartitions("lsn", PLACE)
    _raise_position_faults(sorted(ranged.rdd.mapPartitionsWithIndex(position_ends).collect()), origin)


def position_faults(rows: list[Position], origin: str) -> None:
    """:func:`check_positions` of positions sorted, on the driver."""
    _raise_position_faults(list(position_ends(0, rows)), origin)


def _raise_position_faults(found: list[Ends], origin: str) -> None:
    faults = [e.fault for e in found if e.fault is not None]
    faults += [
        Fault("order", a.last, b.first, 0)
        for a, b in zip(found, found[1:], strict=False)
        if b.first.order <= a.last.order
    ]
    if not faults:
        return
    fault = min(faults, key=lambda f: f.after.lsn)
    before, after = fault.before, fault.after
    if fault.kind == "lsn":
        raise InputError(
            f"{origin}: lsn={after.lsn} appears {fault.times} times ({before.place}, {after.place}); "
            "positions must be unique"
        )
    if after.order == before.order:
        raise InputError(
            f"{origin}: xact_seqno={after.xact_seqno}, command_id={after.command_id} appears 2 times "
            f"({before.place}, {after.place}); positions must be unique"
        )
    raise InputError(
        f"{after.place}: lsn {after.lsn} (xact_seqno {after.xact_seqno}, command_id {after.command_id}) "
        f"comes after lsn {before.lsn} (xact_seqno {before.xact_seqno}, command_id {before.command_id}, "
        f"{before.place}) but before it in transaction order; lsn order must be (xact_seqno, command_id) order"
    )


def check_snapshot_keys(df: DataFrame, small: bool = False) -> None:
    """A snapshot key names one row (else its load would stop half-way on the primary key).
    ``small``: counted on the driver (no shuffle)."""
    if small:
        snapshot_key_faults([tuple(r) for r in df.select("article", "key", PLACE).collect()])
        return
    dup = (
        df.groupBy("article", "key")
        .agg(F.count("*").alias("count"), F.slice(F.sort_array(F.collect_list(PLACE)), 1, 2).alias("at"))
        .where("count > 1")
        .limit(1)
        .collect()
    )
    _raise_duplicate_key(dup[0] if dup else None)


def snapshot_key_faults(rows: list[tuple[Any, ...]]) -> None:
    """:func:`check_snapshot_keys` of rows (article, key, place), on the driver."""
    seen: dict[tuple[str, str], list[str]] = {}
    for article, key, place in rows:
        seen.setdefault((article, key), []).append(place)
    dup = next(
        (
            {"article": k[0], "key": k[1], "count": len(v), "at": sorted(v)[:2]}
            for k, v in seen.items()
            if len(v) > 1
        ),
        None,
    )
    _raise_duplicate_key(dup)


def _raise_duplicate_key(d: Any) -> None:
    if d is not None:
        raise InputError(
            f"{', '.join(d['at'])}: {d['article']} key {d['key']} appears {d['count']} times "
            "in the snapshot; a key names one row"
        )
