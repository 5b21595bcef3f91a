"""A stream's rows as they arrive (Arrow batches), cut into rounds without a dict per command.

A :class:`Share` is one round's rows of one stream as Arrow columns. It is a sequence of rows
(dicts with the laid-out fields, built on first use, as the stream task always built them),
so every path that reads rows reads it; the hot path reads columns instead: the planner takes
the typed value columns (:mod:`applier.plan.columns`), the progress row the largest lsn, the
chunks their lsns.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from applier.plan.columns import is_value_column

Row = dict[str, Any]


def column_values(col: pa.Array) -> list[Any]:
    """A column as Python values; list columns through their flat values and offsets
    (pyarrow's per-row list conversion costs ~3 µs a row, a third of a stream's Python)."""
    if pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
        offsets = col.offsets.to_pylist()  # of a sliced array: positions in the whole values
        base = offsets[0]
        flat = col.values.slice(base, offsets[-1] - base).to_pylist()
        out: list[Any] = [flat[offsets[i] - base : offsets[i + 1] - base] for i in range(len(col))]
        if col.null_count:
            for i, valid in enumerate(col.is_valid().to_pylist()):
                if not valid:
                    out[i] = None
        return out
    values: list[Any] = col.to_pylist()
    return values


def _chunked_values(col: pa.ChunkedArray) -> list[Any]:
    if col.num_chunks == 1:
        return column_values(col.chunk(0))
    out: list[Any] = []
    for chunk in col.chunks:
        out.extend(column_values(chunk))
    return out


class Share(Sequence[Row]):
    """One round's rows of one stream (``parts``: slices of the stream's batches, in order)."""

    def __init__(self, parts: Sequence[pa.RecordBatch], schema: pa.Schema | None) -> None:
        self.table = pa.Table.from_batches(list(parts), schema) if schema is not None else None
        self._values: dict[str, list[Any]] = {}
        self._rows: list[Row] | None = None

    def __len__(self) -> int:
        return self.table.num_rows if self.table is not None else 0

    @property
    def names(self) -> list[str]:
        """The fields of a row: the laid-out columns but the value columns."""
        return [n for n in self.table.schema.names if not is_value_column(n)] if self.table else []

    def has(self, name: str) -> bool:
        return self.table is not None and name in self.table.schema.names

    def values(self, name: str) -> list[Any]:
        """Column ``name`` as Python values (converted once)."""
        v = self._values.get(name)
        if v is None:
            assert self.table is not None
            v = self._values[name] = _chunked_values(self.table.column(name))
        return v

    def arrow(self, name: str, start: int, stop: int) -> pa.Array:
        """Column ``name`` of rows start..stop-1."""
        assert self.table is not None
        return self.table.column(name).slice(start, stop - start).combine_chunks()

    def runs(self, *names: str) -> list[tuple[tuple[Any, ...], int, int]]:
        """The share cut where any of the columns ``names`` changes value: per run its values
        and its rows [start, stop), in row order (as ``itertools.groupby`` over the rows' values
        groups them, two NULLs equal), found by Arrow over the whole columns."""
        n = len(self)
        if not n:
            return []
        assert self.table is not None
        cut = np.zeros(n, dtype=bool)  # cut[i]: row i starts a run
        cut[0] = True
        columns = [self.table.column(name).combine_chunks() for name in names]
        if n > 1:
            for col in columns:
                a, b = col.slice(1), col.slice(0, n - 1)
                differ = pc.not_equal(a, b)
                if differ.null_count:  # a NULL beside a value differs; two NULLs do not
                    differ = pc.if_else(pc.is_valid(differ), differ, pc.xor(pc.is_null(a), pc.is_null(b)))
                cut[1:] |= differ.to_numpy(zero_copy_only=False)
        starts = np.flatnonzero(cut)
        firsts = [pc.take(col, pa.array(starts)).to_pylist() for col in columns]
        bounds = [*starts.tolist(), n]
        return [
            (tuple(values), bounds[i], bounds[i + 1]) for i, values in enumerate(zip(*firsts, strict=True))
        ]

    def max_lsn(self) -> int:
        top: int = max(self.values("lsn"))
        return top

    @property
    def rows(self) -> list[Row]:
        if self._rows is None:
            names = self.names
            columns = [self.values(n) for n in names]
            self._rows = [dict(zip(names, vals, strict=True)) for vals in zip(*columns, strict=True)]
        return self._rows

    def row(self, i: int) -> Row:
        """Row i, without building the others."""
        if self._rows is not None:
            return self._rows[i]
        assert self.table is not None
        return {n: column_values(self.table.column(n).slice(i, 1).combine_chunks())[0] for n in self.names}

    @overload
    def __getitem__(self, i: int) -> Row: ...

    @overload
    def __getitem__(self, i: slice) -> list[Row]: ...

    def __getitem__(self, i: int | slice) -> Row | list[Row]:
        if isinstance(i, slice):
            return self.rows[i]
        return self.row(i if i >= 0 else len(self) + i)

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)


class Shares:
    """The stream's batches cut into rounds: :meth:`take_round` is the next round's share (rows
    arrive in lsn order, so rounds ascend)."""

    def __init__(self, batches: Iterator[pa.RecordBatch]) -> None:
        self.it = batches
        self.schema: pa.Schema | None = None
        self.batch: pa.RecordBatch | None = None
        self.rounds: np.ndarray[Any, Any] = np.zeros(0, dtype=np.int32)  # the batch's rounds
        self.pos = 0
        self._next()

    def _next(self) -> None:
        self.batch, self.pos = None, 0
        for b in self.it:
            if self.schema is None:
                self.schema = b.schema
            if b.num_rows:
                self.batch = b
                self.rounds = b.column("round").to_numpy(zero_copy_only=False)
                return

    def take_round(self, r: int) -> Share:
        parts: list[pa.RecordBatch] = []
        while self.batch is not None:
            differ = self.rounds[self.pos :] != r
            other = int(differ.argmax())  # the first row of another round (0 when there is none)
            if not differ[other]:  # every row left in the batch is of round r
                parts.append(self.batch.slice(self.pos))
                self._next()
                continue
            if other:
                parts.append(self.batch.slice(self.pos, other))
                self.pos += other
            if self.rounds[self.pos] < r:
                lsn = self.batch.column("lsn")[self.pos].as_py()
                raise RuntimeError(f"stream rows out of round order at lsn {lsn}")
            break
        return Share(parts, self.schema)
