"""An error one stream hit (:class:`Failure`: its class, code, message and the command that
raised it), and what a chunk of calls applies (:func:`commands`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from applier.apply.bulk import BulkCall
from applier.plan.calls import Call

Row = dict[str, Any]
Chunk = Sequence[tuple[Row | None, Call]]


@dataclass(frozen=True)
class Failure:
    """An error one stream hit, with the command that raised it (None if none is known).

    ``located``: how that command is known. ``single``: its chunk held no other command;
    ``rerun``: its chunk was run again and it raised that error again (:mod:`.locate`);
    ``rerun-other``: run again, no command raised it, and this one was the first to fail
    otherwise; ``unlocated``: none (the error did not happen again, the connection was lost,
    the chunk held no command, or the caller did not ask). ``constraint``: the constraint or
    index that fired (duplicates, foreign keys)."""

    cls: str
    code: str
    message: str
    lsn: int | None
    stream: int
    transient: bool = False
    connection_lost: bool = False
    constraint: str | None = None
    located: str = "unlocated"

    def said(self) -> str:
        """One line: the command by its lsn (where known), the class and the error's text."""
        at = f"the command at lsn {self.lsn}" if self.lsn is not None else "no command"
        return short(f"{at}: {self.cls} ({self.code}): {self.message}")

    def to_json(self) -> dict[str, Any]:
        return self.__dict__.copy()

    @staticmethod
    def from_json(d: dict[str, Any]) -> Failure:
        return Failure(**d)


def short(message: str, limit: int = 400) -> str:
    m = " ".join(message.split())
    return m if len(m) <= limit else m[: limit - 3] + "..."


def commands(chunk: Chunk, at_most: int | None = None) -> list[Row]:
    """The commands a chunk applies (a set-based call's rows each), the first ``at_most``."""
    out: list[Row] = []
    for r, call in chunk:
        if isinstance(call, BulkCall):
            out.extend(call.rows)
        elif r is not None:
            out.append(r)
        if at_most is not None and len(out) >= at_most:
            return out[:at_most]
    return out
