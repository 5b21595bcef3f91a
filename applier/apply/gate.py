"""Controlled interleaving: the N streams take turns, statement by statement, under one scheduler.

With ``[run] schedule = "controlled"`` the stream tasks still run as one Spark barrier stage
over their own real connections, but they meet through a :class:`GateServer` on the driver
instead of the plain rendezvous: before every statement, commit and rollback a stream asks
for a turn and waits; the server grants one turn at a time and only when it knows what every
other stream is doing — waiting for a turn, parked at a barrier, finished, or blocked on a
lock (it watches the server's lock table through a connection of its own). So one seed gives
one interleaving and one outcome, every time.

Locks are real. A stream whose statement waits for a lock yields its turn. When nobody can
move — every stream parked or waiting — the server resolves it as the database would, but
deterministically: a wait-for cycle among the streams is a deadlock (the stream that entered
the cycle last is the victim, its statement cancelled and reported as 40P01); a stream
waiting for a stream parked at a barrier would wait forever, as the agent's streams do until
their lock timeout: it is cancelled and reported as a lock timeout (55P03). A lock held from
outside the run is left to the session's own lock timeout.

Who goes next (``strategy``): ``random`` (uniform among the streams that wait for a turn),
``pct`` (probabilistic concurrency testing: random stream priorities, ``depth - 1`` change
points that drop the running stream's priority), or ``recorded`` (follow a recorded schedule,
matched by lsn so that a shrunk stream follows the recorded order of what is left).
"""

from __future__ import annotations

import contextlib
import json
import queue
import random
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from applier.apply.rendezvous import _BYE, Address, Rendezvous, _recv, _send, accept_streams

_POLL_S = 0.001
STRATEGIES = ("random", "pct", "recorded")
SCHEDULES = ("free", "controlled")


@dataclass(frozen=True)
class ScheduleSpec:
    """How a controlled run chooses turns. ``order``: the recorded schedule's step keys in
    order (:func:`step_key`), for strategy ``recorded``."""

    seed: int = 0
    strategy: str = "pct"
    depth: int = 3
    order: tuple[tuple[str, int | None], ...] = ()


def step_key(kind: str, lsns: Sequence[int], anchor: int | None) -> list[tuple[str, int | None]]:
    """The keys a step is known by in a recorded schedule: an executed command by its lsn (a
    chunk of several: each), anything else (a progress row, commit, rollback) by its kind and
    the last command its stream had executed before it."""
    if kind == "exec" and lsns:
        return [("exec", int(x)) for x in lsns]
    return [("tail" if kind == "exec" else kind, anchor)]


def order_of(steps: Sequence[Mapping[str, Any]]) -> tuple[tuple[str, int | None], ...]:
    """The step keys of a recorded schedule (schedule.jsonl rows), in order."""
    out: list[tuple[str, int | None]] = []
    for st in steps:
        if st.get("kind") in ("exec", "commit", "rollback"):
            out.extend(step_key(st["kind"], st.get("lsns") or [], st.get("anchor")))
    return tuple(out)


@dataclass(frozen=True)
class GateAddress(Address):
    """Where the streams of a controlled stage meet (a :class:`GateServer`)."""


class Chooser:
    """The seeded choice of the next turn among the streams that wait for one."""

    def __init__(self, spec: ScheduleSpec, streams: int, steps_hint: int) -> None:
        self.spec = spec
        self.rng = random.Random(spec.seed)
        d = max(1, spec.depth)
        self.prio = dict(zip(range(streams), self.rng.sample(range(d, d + streams), streams), strict=True))
        span = max(steps_hint, d)
        points = self.rng.sample(range(1, span + 1), min(d - 1, span))
        self.change = {p: d - 1 - i for i, p in enumerate(sorted(points))}
        index: dict[tuple[str, int | None], int] = {}
        for i, k in enumerate(spec.order):
            index.setdefault(k, i)
        self.index = index

    def choose(
        self, ready: Sequence[int], keys: Mapping[int, list[tuple[str, int | None]]], step: int
    ) -> int:
        ready = sorted(ready)
        if self.spec.strategy == "random":
            return self.rng.choice(ready)
        if self.spec.strategy == "recorded":
            never = len(self.index) + 1

            def at(s: int) -> tuple[int, int]:
                return (min((self.index.get(k, never) for k in keys[s]), default=never), s)

            return min(ready, key=at)
        s = max(ready, key=lambda x: self.prio[x])
        if step in self.change:
            self.prio[s] = self.change[step]
            s = max(ready, key=lambda x: self.prio[x])
        return s


@dataclass
class _Stream:
    sock: socket.socket
    state: str = "busy"  # busy | ready | exec | parked | done
    pid: int | None = None
    pending: dict[str, Any] = field(default_factory=dict)
    granted: int = -1
    cancelled: str | None = None
    gathered: str = ""


class GateServer(threading.Thread):
    """The driver's scheduler of one controlled stage (see the module's doc)."""

    def __init__(
        self,
        streams: int,
        monitor: Any,
        dialect: Any,
        spec: ScheduleSpec,
        steps_hint: int,
        host: str = "127.0.0.1",
        bind: str | None = None,
    ) -> None:
        super().__init__(name="applier-gate", daemon=True)
        import secrets

        self.n = streams
        self.monitor = monitor  # a connection of the driver's, autocommit on
        self.dialect = dialect
        self.chooser = Chooser(spec, streams, steps_hint)
        self.token = secrets.token_hex(16)
        self.listener = socket.create_server((bind if bind is not None else host, 0))
        self.listener.settimeout(0.5)
        self.address = GateAddress(host, self.listener.getsockname()[1], self.token, streams)
        self.inbox: queue.Queue[tuple[int, Any]] = queue.Queue()
        self.steps: list[dict[str, Any]] = []
        self.deadlocks = 0
        self.lock_cancels = 0
        self.error: BaseException | None = None
        self._halt = threading.Event()
        self.streams: dict[int, _Stream] = {}

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=5)
        self.listener.close()
        for st in self.streams.values():
            with contextlib.suppress(OSError):
                st.sock.close()

    # -- connections -------------------------------------------------------------------
    def _accept_all(self) -> bool:
        peers = accept_streams(self.listener, self.address, self._halt, None)
        if peers is None:
            return False
        for s, conn in sorted(peers.items()):
            self.streams[s] = _Stream(conn)
            threading.Thread(target=self._read, args=(s, conn), daemon=True, name=f"gate-{s}").start()
        return True

    def _read(self, s: int, conn: socket.socket) -> None:
        try:
            while True:
                raw = _recv(conn)
                self.inbox.put((s, {"op": "bye"} if raw == _BYE else json.loads(raw)))
                if raw == _BYE:
                    return
        except (OSError, ValueError) as e:
            self.inbox.put((s, {"op": "lost", "why": str(e)}))

    # -- the scheduler -----------------------------------------------------------------
    def run(self) -> None:
        try:
            if self._accept_all():
                self._schedule()
        except BaseException as e:  # noqa: BLE001 - reported by the stage's driver
            self.error = e
            for st in self.streams.values():
                with contextlib.suppress(OSError):
                    st.sock.close()

    def _schedule(self) -> None:
        streams = self.streams
        while not self._halt.is_set():
            self._handle(block=False)
            live = [s for s, st in streams.items() if st.state != "done"]
            if not live:
                return
            if any(streams[s].state == "busy" for s in live):
                self._handle(block=True, timeout=0.5)
                continue
            executing = [s for s in live if streams[s].state == "exec"]
            waits = self._lock_waits(executing) if executing else {}
            if any(s not in waits for s in executing):
                self._handle(block=True, timeout=_POLL_S)
                continue
            ready = [s for s in live if streams[s].state == "ready"]
            if ready:
                keys = {
                    s: step_key(
                        streams[s].pending["kind"],
                        streams[s].pending.get("lsns") or [],
                        streams[s].pending.get("anchor"),
                    )
                    for s in ready
                }
                self._grant(self.chooser.choose(ready, keys, len(self.steps) + 1))
                continue
            if not executing:
                parked = [s for s in live if streams[s].state == "parked"]
                if len(parked) == len(live):
                    self._release(parked)
                continue
            if not self._resolve(waits):
                self._handle(block=True, timeout=0.01)

    def _handle(self, block: bool, timeout: float | None = None) -> None:
        try:
            s, msg = self.inbox.get(block=block, timeout=timeout)
        except queue.Empty:
            return
        while True:
            self._on(s, msg)
            try:
                s, msg = self.inbox.get_nowait()
            except queue.Empty:
                return

    def _on(self, s: int, msg: dict[str, Any]) -> None:
        st = self.streams[s]
        op = msg.get("op")
        if op == "pid":
            st.pid = int(msg["pid"])
        elif op == "ready":
            st.state, st.pending = "ready", msg
        elif op == "done":
            step = self.steps[st.granted]
            step.update(result=msg.get("result", "ok"), t1=time.time())
            if st.cancelled:
                step["cancelled"] = st.cancelled
            _send(st.sock, json.dumps({"cancelled": st.cancelled}).encode())
            st.state, st.cancelled = "busy", None
        elif op == "gather":
            st.state, st.gathered = "parked", str(msg.get("msg", ""))
        elif op == "bye":
            st.state = "done"
        elif op == "lost":
            raise ConnectionError(f"stream {s} left the controlled schedule: {msg.get('why')}")

    def _grant(self, s: int) -> None:
        st = self.streams[s]
        p = st.pending
        st.granted = len(self.steps)
        self.steps.append(
            {
                "step": st.granted,
                "stream": s,
                "round": p.get("round"),
                "kind": p["kind"],
                "lsns": p.get("lsns") or [],
                "anchor": p.get("anchor"),
                "t0": time.time(),
            }
        )
        st.state = "exec"
        _send(st.sock, json.dumps({"go": st.granted}).encode())

    def _release(self, parked: Sequence[int]) -> None:
        combined = json.dumps([self.streams[s].gathered for s in sorted(parked)]).encode()
        for s in parked:
            self.streams[s].state = "busy"
            _send(self.streams[s].sock, combined)

    def _lock_waits(self, executing: Sequence[int]) -> dict[int, set[int]]:
        """The executing streams that wait for a lock, with the sessions they wait for."""
        pids = {self.streams[s].pid: s for s in executing if self.streams[s].pid is not None}
        sql = self.dialect.lock_waits_sql(len(pids)) if pids else None
        if sql is None:
            return {}
        out: dict[int, set[int]] = {}
        for pid, blockers in self.monitor.cursor().execute(sql, list(pids)).fetchall():
            found = {int(x) for x in str(blockers or "").strip("{}").split(",") if x.strip()}
            out[pids[int(pid)]] = out.get(pids[int(pid)], set()) | found
        return out

    def _resolve(self, waits: Mapping[int, set[int]]) -> bool:
        """Nobody can move: cancel one waiting stream (True), or leave it to an outside lock
        holder and the session's lock timeout (False)."""
        if any(self.streams[s].cancelled for s in waits):
            return False  # a cancel is on its way
        by_pid = {st.pid: s for s, st in self.streams.items() if st.pid is not None}
        edges = {s: {by_pid[p] for p in b if p in by_pid} for s, b in waits.items()}
        cycle = _cycle(edges)
        cancel = self.dialect.cancel_sql()
        if cancel is None:
            return False  # the server's own deadlock detection and lock timeout decide
        if cycle:
            victim, why = max(cycle, key=lambda s: self.streams[s].granted), "deadlock"
            self.deadlocks += 1
        else:
            inside = [s for s, b in waits.items() if b and all(p in by_pid for p in b)]
            if not inside:
                return False
            victim, why = min(inside), "lock_timeout"
            self.lock_cancels += 1
        self.streams[victim].cancelled = why
        self.monitor.cursor().execute(cancel, [self.streams[victim].pid]).fetchall()
        return True


def _cycle(edges: Mapping[int, set[int]]) -> list[int]:
    """A cycle of the wait-for graph (streams), or []."""
    for start in sorted(edges):
        path: list[int] = []
        seen: set[int] = set()
        s: int | None = start
        while s is not None and s in edges and s not in seen:
            seen.add(s)
            path.append(s)
            nxt = sorted(edges[s])
            s = nxt[0] if nxt else None
        if s is not None and s in path:
            return path[path.index(s) :]
    return []


class GateClient(Rendezvous):
    """One stream's handle on a :class:`GateServer`: the rendezvous, plus turns."""

    def pid(self, pid: int | None) -> None:
        if pid is not None:
            _send(self.sock, json.dumps({"op": "pid", "pid": int(pid)}).encode())

    def turn(self, kind: str, lsns: Sequence[int], anchor: int | None, round_: int | None) -> int:
        """Wait for this stream's turn; the step's number in the schedule."""
        msg = {"op": "ready", "kind": kind, "lsns": list(lsns), "anchor": anchor, "round": round_}
        _send(self.sock, json.dumps(msg).encode())
        return int(json.loads(_recv(self.sock))["go"])

    def done(self, result: Any) -> str | None:
        """The step ended; why the scheduler cancelled it ("deadlock", "lock_timeout"), if it did."""
        _send(self.sock, json.dumps({"op": "done", "result": result}).encode())
        reason = json.loads(_recv(self.sock)).get("cancelled")
        return str(reason) if reason else None

    def all_gather(self, message: str) -> list[str]:
        _send(self.sock, json.dumps({"op": "gather", "msg": message}).encode())
        return [str(m) for m in json.loads(_recv(self.sock))]


def meet(address: Address, stream: int) -> Rendezvous:
    """A stream's rendezvous: through the gate in a controlled stage, else the plain one."""
    return GateClient(address, stream) if isinstance(address, GateAddress) else Rendezvous(address, stream)
