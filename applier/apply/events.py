"""What the apply stage reports: one row per command outcome, per round, per stream, per log line.

Outcomes of a command: applied (committed in a parallel round), conflict (raised in a
parallel round), rolled_back (its parallel round was rolled back), reapplied (applied on
the single connection after a reset), skipped (error policy), failed (the single
connection hit an error the policy does not skip: the run stops), not_applied (the run
stopped first), resumed (an earlier run committed it, per the progress table), deferred
(independent model: after a conflict in its stream, applied at the end on one connection).
Times (epoch seconds): t_exec when the command's batch was sent, t_commit when it committed.

A share that committed whole in a parallel round (nothing skipped) is one ``batch`` event
(stream, round, outcome, n commands) instead of n command events: the common case costs one
row, and :func:`applier.verify.outcomes.command_outcomes` gives every command its outcome
again by (stream, round) where the blame needs it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    from applier.apply.failure import Failure

EVENT_SCHEMA = (
    "kind string, lsn long, xact_seqno long, stream int, round int, outcome string, "
    "class string, code string, message string, article string, key string, n long, seconds double, "
    "t_exec double, t_commit double, constraint string, located string"
)
_ARROW = pa.schema(
    [
        ("kind", pa.string()),
        ("lsn", pa.int64()),
        ("xact_seqno", pa.int64()),
        ("stream", pa.int32()),
        ("round", pa.int32()),
        ("outcome", pa.string()),
        ("class", pa.string()),
        ("code", pa.string()),
        ("message", pa.string()),
        ("article", pa.string()),
        ("key", pa.string()),
        ("n", pa.int64()),
        ("seconds", pa.float64()),
        ("t_exec", pa.float64()),
        ("t_commit", pa.float64()),
        # conflicts: the constraint or index that fired, and how the command was found
        # (applier.apply.sender.Failure.located)
        ("constraint", pa.string()),
        ("located", pa.string()),
    ]
)
RESET_LOG = "Number of subscription streams has been reset from {n} to 1"


class Events:
    """Buffers event rows and hands them out as Arrow batches."""

    def __init__(self, batches: bool = False) -> None:
        """``batches``: a committed share with nothing skipped becomes one ``batch`` event
        (the caller commits one stream's whole share of a round at a time)."""
        self.cols: list[list[Any]] = [[] for _ in _ARROW]
        self.batches = batches

    def add(
        self,
        kind: str,
        *,
        lsn: int | None = None,
        xact: int | None = None,
        stream: int | None = None,
        round_: int | None = None,
        outcome: str | None = None,
        cls: str | None = None,
        code: str | None = None,
        message: str | None = None,
        article: str | None = None,
        key: str | None = None,
        n: int | None = None,
        seconds: float | None = None,
        t_exec: float | None = None,
        t_commit: float | None = None,
        constraint: str | None = None,
        located: str | None = None,
    ) -> None:
        for col, v in zip(
            self.cols,
            (
                kind,
                lsn,
                xact,
                stream,
                round_,
                outcome,
                cls,
                code,
                message,
                article,
                key,
                n,
                seconds,
                t_exec,
                t_commit,
                constraint,
                located,
            ),
            strict=True,
        ):
            col.append(v)

    def refused(
        self, lsn: int | None, stream: int, round_: int, failure: Failure, outcome: str | None = None
    ) -> None:
        """The conflict event of the command at ``lsn``: what the target said (``outcome``
        ``skipped``: the skip policy let it pass)."""
        self.add(
            "conflict",
            lsn=lsn,
            stream=stream,
            round_=round_,
            cls=failure.cls,
            code=failure.code,
            message=failure.message,
            outcome=outcome,
            constraint=failure.constraint,
            located=failure.located,
        )

    def finished(self, stream: int, n: int, seconds: float, figures: str) -> None:
        """Stream ``stream``'s summary: its commands, its seconds and its connection's figures."""
        self.add("stream", stream=stream, n=n, seconds=seconds, message=figures)

    def conflict(self, row: dict[str, Any], failure: Failure, t_exec: float | None) -> None:
        """The command of ``row``, the one ``failure`` names: the target refused it."""
        self.command(
            row, "conflict", cls=failure.cls, code=failure.code, message=failure.message, t_exec=t_exec
        )

    def command(
        self,
        row: dict[str, Any],
        outcome: str,
        *,
        cls: str | None = None,
        code: str | None = None,
        message: str | None = None,
        t_exec: float | None = None,
        t_commit: float | None = None,
    ) -> None:
        self.add(
            "command",
            lsn=row["lsn"],
            xact=row["xact_seqno"],
            stream=row["stream"],
            round_=row["round"],
            outcome=outcome,
            cls=cls,
            code=code,
            message=message,
            article=row["article"],
            key=row["key_before"] or row["key_after"],
            t_exec=t_exec,
            t_commit=t_commit,
        )

    def committed(
        self,
        rows: Sequence[dict[str, Any]],
        skipped: Sequence[tuple[dict[str, Any], Any]],
        outcome: str,
        t_exec: float,
        t_commit: float,
    ) -> None:
        """Outcomes of rows whose transaction committed: the skipped ones (with their failure),
        then every other row as ``outcome`` (applied or reapplied). One stream's whole share
        applied in a parallel round with nothing skipped is one ``batch`` event."""
        if self.batches and not skipped and outcome == "applied":
            if rows:
                r0 = rows[0]
                self.add(
                    "batch",
                    stream=r0["stream"],
                    round_=r0["round"],
                    outcome=outcome,
                    n=len(rows),
                    t_exec=t_exec,
                    t_commit=t_commit,
                )
            return
        skipped_lsns = {row["lsn"] for row, _ in skipped}
        for row, f in skipped:
            self.command(row, "skipped", cls=f.cls, code=f.code, message=f.message, t_exec=t_exec)
        for row in rows:
            if row["lsn"] not in skipped_lsns:
                self.command(row, outcome, t_exec=t_exec, t_commit=t_commit)

    def steps(self, stream: int, steps: list[dict[str, Any]]) -> None:
        """The schedule steps a stream ran (``Sender.steps``; emptied): a ``step`` event each,
        outcome its kind (exec, commit, rollback), n its place in a controlled schedule, the
        lsns of its commands (and the error's text) in ``message`` as JSON."""
        for st in steps:
            res = st["result"]
            err = res if isinstance(res, dict) else {}
            detail = {"lsns": st["lsns"], "anchor": st["anchor"]}
            if err:
                detail["error"] = err.get("message")
            self.add(
                "step",
                lsn=st["lsns"][0] if st["lsns"] else None,
                stream=stream,
                round_=st["round"],
                outcome=st["kind"],
                cls=err.get("class"),
                code=err.get("code"),
                message=json.dumps(detail),
                n=st["seq"],
                t_exec=st["t0"],
                t_commit=st["t1"],
            )
        steps.clear()

    def __len__(self) -> int:
        return len(self.cols[0])

    def drain(self) -> Iterator[pa.RecordBatch]:
        if len(self):
            yield pa.RecordBatch.from_arrays(
                [pa.array(c, type=f.type) for c, f in zip(self.cols, _ARROW, strict=False)], schema=_ARROW
            )
            self.cols = [[] for _ in _ARROW]
