"""A share planned at once: consecutive rows of one call text become a :class:`Run` (``count``
calls, their values one after the other), what the sender cuts into chunks without building a
call per row (:meth:`applier.apply.sender.Sender.share_calls`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from applier.apply.failure import Row
from applier.apply.share import Share
from applier.plan.calls import Call


@dataclass(frozen=True)
class Run:
    """Consecutive rows of a share planned at once: ``count`` calls of one text, ``width``
    values each, their values one after the other in ``params``."""

    sql: str
    width: int
    start: int  # the first row's place in the share
    count: int
    params: list[Any]

    def call(self, k: int) -> Call:
        w = self.width
        return Call(self.sql, tuple(self.params[k * w : (k + 1) * w]))


class PlannedShare(Sequence[tuple[Row, Call]]):
    """A share's calls (:meth:`Sender.calls`), as runs planned column by column where the plan
    allows and as (row, call) pairs elsewhere; a sequence of (row, call) pairs like any calls
    (built on first use: after an error, on a skip) that :meth:`Sender.send` sends by runs."""

    def __init__(self, share: Share, parts: list[Run | list[tuple[Row, Call]]]) -> None:
        self.share = share
        self.parts = parts
        self._pairs: list[tuple[Row, Call]] | None = None

    def pairs(
        self, part: Run | list[tuple[Row, Call]], a: int = 0, b: int | None = None
    ) -> list[tuple[Row, Call]]:
        """The (row, call) pairs of calls a..b-1 of one part."""
        if not isinstance(part, Run):
            return part[a:b]
        b = part.count if b is None else b
        rows = self.share.rows
        return [(rows[part.start + k], part.call(k)) for k in range(a, b)]

    @property
    def all_pairs(self) -> list[tuple[Row, Call]]:
        if self._pairs is None:
            self._pairs = [x for part in self.parts for x in self.pairs(part)]
        return self._pairs

    def __len__(self) -> int:
        return sum(p.count if isinstance(p, Run) else len(p) for p in self.parts)

    def __getitem__(self, i: Any) -> Any:
        return self.all_pairs[i]

    def __iter__(self) -> Iterator[tuple[Row, Call]]:
        return iter(self.all_pairs)


# A piece of a chunk being cut from a planned share: calls a..b-1 of a run, or one call.
Piece = tuple[Run, int, int] | tuple[Row | None, Call]  # a run's calls [a, b), or one call
