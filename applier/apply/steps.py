"""A sender's steps of the schedule: every chunk, commit and rollback is recorded as a step
(drained into ``step`` events by the task), and in a controlled stage each waits for its turn
at the gate (:mod:`applier.apply.gate`), which may cancel it (a deadlock or lock wait the
scheduler resolved). A mixin of :class:`applier.apply.sender.Sender`."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from applier.apply.failure import Failure
from applier.apply.gate import GateClient
from applier.dialects.base import Dialect


class Stepping:
    """The schedule half of a Sender (see the module docstring)."""

    conn: Any
    dialect: Dialect
    gate: GateClient | None
    round: int | None
    anchor: int | None  # the lsn of the last command sent
    steps: list[dict[str, Any]]

    def attach(self, gate: GateClient | None) -> None:
        """Take turns at ``gate`` (None: run free)."""
        self.gate = gate
        self._tell_session()

    def _tell_session(self) -> None:
        sql = self.dialect.backend_id_sql()
        if self.gate is not None and sql is not None:
            cur = self.conn.cursor()
            pid = cur.execute(sql).fetchone()[0]
            self.gate.pid(int(pid))

    def _turn(self, kind: str, lsns: list[int]) -> tuple[int | None, float]:
        seq = self.gate.turn(kind, lsns, self.anchor, self.round) if self.gate is not None else None
        return seq, time.time()

    def _done(self, seq: int | None, kind: str, lsns: list[int], result: Any, t0: float) -> str | None:
        """Record the step; in a controlled stage end the turn (why it was cancelled, if it was)."""
        cancelled = self.gate.done(result) if self.gate is not None else None
        self.steps.append(
            {
                "seq": seq,
                "kind": kind,
                "round": self.round,
                "lsns": lsns,
                "anchor": self.anchor,
                "result": result,
                "t0": t0,
                "t1": time.time(),
            }
        )
        if lsns:
            self.anchor = lsns[-1]
        return cancelled

    def _step_exec(self, lsns: list[int], run: Callable[[], Failure | None]) -> Failure | None:
        seq, t0 = self._turn("exec", lsns)
        failure: Failure | None = None
        try:
            failure = run()
        finally:
            result: Any = (
                "ok"
                if failure is None
                else {"class": failure.cls, "code": failure.code, "message": failure.message[:200]}
            )
            cancelled = self._done(seq, "exec", lsns, result, t0)
        if failure is not None and cancelled is not None:
            # The scheduler cancelled the statement: it waited in a wait-for cycle (a deadlock
            # the scheduler resolved) or for a stream parked at a barrier (a lock timeout).
            cls, code = ("deadlock", "40P01") if cancelled == "deadlock" else ("lock_timeout", "55P03")
            why = (
                "deadlock: a wait-for cycle among the streams (controlled schedule: this statement was the victim)"
                if cancelled == "deadlock"
                else "lock timeout: waiting for a lock a stream at the barrier holds (controlled schedule)"
            )
            failure = dataclasses.replace(failure, cls=cls, code=code, message=why, transient=True)
            self.steps[-1]["result"] = {"class": cls, "code": code, "message": why}
        return failure
