"""Canonical change files whose commands carry a sub-position (``seq``).

Captured traffic has pairs that share one source position (Debezium's key change: a delete
and a create at one lsn). In a canonical file they are written with the same ``lsn`` and
``seq`` 0, 1, ...: the position of a command is then (lsn, seq), unique in the file, and
(xact_seqno, command_id) still names one command. Such a file is read through the capture
pipeline: transactions in xact_seqno order, commands in (lsn, seq) order in each, and applier
numbers them again (lsn 1..N in that order); the file's own position is kept as the command's
source position ("lsn 7 seq 1"), which the converted file (``applier convert``) shows beside it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import ClassVar

from applier.errors import InputError
from applier.records.schema import ROW_OPS
from applier.sources.canonical import position
from applier.sources.formats import Change, Format, Item
from applier.sources.reading import Position, position_ends


class CanonicalSeqFormat(Format):
    name = "canonical"
    positional: ClassVar[bool | None] = False
    dedup: ClassVar[bool] = False

    def parse(self, text: str, place: str) -> Iterator[Item]:
        try:
            rec = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"{place}: malformed JSON: {e.msg} at column {e.colno}") from None
        if not isinstance(rec, dict):
            raise InputError(f"{place}: expected a JSON object, got {type(rec).__name__}")
        lsn = position(rec, "lsn", place)
        at = f"{place}: lsn {lsn}"
        seq = position(rec, "seq", at, 0)
        xact = position(rec, "xact_seqno", at)
        cmd = position(rec, "command_id", at)
        op = rec.get("op")
        if op not in ROW_OPS:
            raise InputError(
                f"{at}: op must be I, U or D in a file with sub-positions (seq), got {op!r}; "
                "schema changes, statements and procedures take a position of their own"
            )
        article = rec.get("article")
        if not isinstance(article, str):
            raise InputError(f"{at}: field 'article' must be a string")
        changed = rec.get("changed")
        yield Change(
            article,
            op,
            rec.get("before"),
            rec.get("after"),
            (xact,),
            (lsn, seq, cmd),
            f"lsn {lsn} seq {seq}",
            place,
            tuple(changed) if isinstance(changed, list) else None,
        )

    def combine(self, changes: list[Change]) -> list[Change]:
        """(lsn, seq) names one command, and (lsn, seq) order is command_id order in a
        transaction (the changes come in (lsn, seq) order): a canonical file's check of positions
        (:func:`applier.sources.reading.position_ends`), with (lsn, seq) for the lsn."""
        rows = (Position(c.pos[:2], 0, c.pos[2], c) for c in changes)
        for ends in position_ends(0, rows):
            if ends.fault is not None:
                a, b = ends.fault.before.place, ends.fault.after.place
                if ends.fault.kind == "lsn":
                    raise InputError(
                        f"{b.place}: {b.source} appears 2 times ({a.place}); (lsn, seq) names one command"
                    )
                raise InputError(
                    f"{b.place}: {b.source} (command_id {b.pos[2]}) comes after {a.source} "
                    f"(command_id {a.pos[2]}, {a.place}) but not after it in its transaction; "
                    "(lsn, seq) order must be command_id order"
                )
        return changes


FORMATS: dict[str, type[Format]] = {"canonical": CanonicalSeqFormat}
