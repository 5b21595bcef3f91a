"""Delta debugging (Zeller and Hildebrandt, "Simplifying and Isolating Failure-Inducing Input",
TSE 2002): the ``ddmin`` algorithm, with a cache of the subsets already tested.

``ddmin(items, fails)`` returns a 1-minimal subsequence of ``items`` for which ``fails`` is
true: removing any single element makes it pass. ``fails(items)`` of the whole input must be
true. Subsequences keep the input's order. Pure: no I/O, no Spark; the tests a caller runs
(applier runs against a target) are the expensive part, so each distinct subset is tested once
and :class:`Cached` counts them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)


@dataclass
class Cached(Generic[T]):
    """A failure test with a cache: ``fails(subset)`` is called once per distinct subset."""

    fails: Callable[[tuple[T, ...]], bool]
    runs: int = 0
    cache: dict[frozenset[T], bool] = field(default_factory=dict)

    def __call__(self, subset: Sequence[T]) -> bool:
        key = frozenset(subset)
        if key not in self.cache:
            self.runs += 1
            self.cache[key] = bool(self.fails(tuple(subset)))
        return self.cache[key]


def _split(items: Sequence[T], n: int) -> list[tuple[T, ...]]:
    """``items`` cut into ``n`` consecutive parts of nearly equal length (none empty)."""
    out, start = [], 0
    for i in range(n):
        end = start + (len(items) - start) // (n - i)
        out.append(tuple(items[start:end]))
        start = end
    return [p for p in out if p]


def ddmin(items: Sequence[T], fails: Callable[[tuple[T, ...]], bool] | Cached[T]) -> tuple[T, ...]:
    """A 1-minimal failing subsequence of ``items`` (which must fail as a whole).

    Each pass splits the current input into ``n`` parts and tests every part, then every
    complement; a failing part becomes the input (n back to 2), a failing complement too
    (n - 1 parts); with neither, the granularity doubles, until parts are single elements."""
    test = fails if isinstance(fails, Cached) else Cached(fails)
    current = tuple(items)
    n = 2
    while len(current) >= 2:
        parts = _split(current, min(n, len(current)))
        reduced = False
        for p in parts:
            if test(p):
                current, n, reduced = p, 2, True
                break
        if not reduced:
            for i in range(len(parts)):
                complement = tuple(x for j, q in enumerate(parts) if j != i for x in q)
                if test(complement):
                    current, n, reduced = complement, max(n - 1, 2), True
                    break
        if not reduced:
            if n >= len(current):
                break
            n = min(2 * n, len(current))
    return current
