"""Fast barriers between the N stream tasks of one Spark barrier stage.

Spark's ``BarrierTaskContext.barrier()/allGather()`` poll for completion in steps of one
second (``Thread.sleep(1000)`` in BarrierTaskContext.runBarrier): measured here at 0.9-1.0 s
per call, whatever the work. The agent meets its streams two or three times per round, so
applier keeps Spark's barrier stage for what it is good at — starting the N tasks together —
and meets through this coordinator instead: the driver runs a small TCP server for the stage
(executors always reach the driver), every stream connects with the stage's secret, and
``all_gather`` costs one round trip.

A stream that dies closes its socket; the server then drops every peer so that the others
fail fast instead of waiting forever, and waits for a new set (Spark retries a failed
barrier stage as a whole).

A stream may also *report* (:meth:`Rendezvous.report`): a message that asks no answer, handed to
the stage's observer on the driver as it arrives (the live metrics of a load test:
:mod:`applier.apply.observe`). The coordinator reads every stream at once (``select``), so it
also tells the observer when each stream reached a meeting and when all met.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import select
import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass

_HDR = struct.Struct("!I")
_TIMEOUT_S = 6 * 3600.0  # a round may legitimately take long (lock waits, huge rounds)
_BYE = b"\x00bye"
_REPORT = b"\x01"  # a report's first byte (a gather's message is JSON: never this byte)


class Observer:
    """What a coordinator tells about its streams (the default: nothing is done)."""

    def report(self, stream: int, payload: dict[str, object]) -> None:
        """Stream ``stream`` reported ``payload``."""

    def arrived(self, stream: int) -> None:
        """Stream ``stream`` reached a meeting and waits for the others."""

    def met(self) -> None:
        """Every stream reached the meeting; all go on."""


_observers: list[Observer] = []


def observing() -> bool:
    """Whether an observer listens (the streams then report each round)."""
    return bool(_observers)


@contextlib.contextmanager
def observed(observer: Observer) -> Iterator[None]:
    """Coordinators started inside tell ``observer`` (the driver's process: one at a time)."""
    _observers.append(observer)
    try:
        yield
    finally:
        _observers.remove(observer)


def _send(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(_HDR.pack(len(payload)) + payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("a stream left the rendezvous (its task failed or was killed)")
        buf += chunk
    return bytes(buf)


def _recv(sock: socket.socket) -> bytes:
    (n,) = _HDR.unpack(_recv_exact(sock, _HDR.size))
    return _recv_exact(sock, n)


@dataclass(frozen=True)
class Address:
    """Where the streams of one stage meet; pickled into the stage's tasks."""

    host: str
    port: int
    token: str
    streams: int


def accept_streams(
    listener: socket.socket, address: Address, halt: threading.Event, timeout: float | None
) -> dict[int, socket.socket] | None:
    """The stage's streams, by number, once each has connected to ``listener`` (whose accept
    times out now and then, so that ``halt`` is seen) and said hello with the stage's token:
    a connection that says anything else, or nothing within 60 s, is closed; a stream that
    connects again (Spark retried its task) replaces its earlier socket. Accepted sockets read
    with ``timeout``. None, every accepted socket closed, once ``halt`` is set."""
    peers: dict[int, socket.socket] = {}
    while len(peers) < address.streams:
        if halt.is_set():
            for p in peers.values():
                p.close()
            return None
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.settimeout(60)
        try:
            hello = json.loads(_recv(conn))
            stream = int(hello["stream"]) if hello.get("token") == address.token else None
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            stream = None
        if stream is None or not 0 <= stream < address.streams:
            conn.close()
            continue
        conn.settimeout(timeout)
        old = peers.pop(stream, None)
        if old is not None:
            old.close()
        peers[stream] = conn
    return peers


class Coordinator(threading.Thread):
    """The driver's side: gathers one message from every stream and sends all to each."""

    def __init__(self, streams: int, host: str = "127.0.0.1", bind: str | None = None) -> None:
        super().__init__(name="applier-rendezvous", daemon=True)
        self.n = streams
        self.token = secrets.token_hex(16)
        self.listener = socket.create_server((bind if bind is not None else host, 0))
        self.listener.settimeout(0.5)
        self.address = Address(host, self.listener.getsockname()[1], self.token, streams)
        self._halt = threading.Event()
        self.error: BaseException | None = None
        self.observer = _observers[-1] if _observers else Observer()

    def stop(self) -> None:
        self._halt.set()
        # Wake the accept() that waits for a retried stage's streams, which would otherwise see
        # the halt only at its next timeout (0.5 s added to every apply stage).
        with contextlib.suppress(OSError):
            socket.create_connection((self.address.host, self.address.port), timeout=1).close()
        self.join(timeout=5)
        self.listener.close()

    def _accept_all(self) -> list[socket.socket] | None:
        peers = accept_streams(self.listener, self.address, self._halt, _TIMEOUT_S)
        return None if peers is None else [peers[i] for i in range(self.n)]

    def run(self) -> None:
        while not self._halt.is_set():
            order = self._accept_all()
            if order is None:
                return
            try:
                while True:
                    msgs = self._gather(order)
                    if all(m == _BYE for m in msgs):
                        break
                    combined = b"[" + b",".join(msgs) + b"]"
                    for p in order:
                        _send(p, combined)
            except (OSError, ValueError) as e:
                self.error = e  # a stream died: drop them all; a retried stage connects anew
            finally:
                for p in order:
                    with contextlib.suppress(OSError):
                        p.close()

    def _gather(self, order: list[socket.socket]) -> list[bytes]:
        """One message from every stream, read as they come; reports go to the observer."""
        msgs: list[bytes | None] = [None] * len(order)
        index = {p.fileno(): i for i, p in enumerate(order)}
        while any(m is None for m in msgs):
            waiting = [p for i, p in enumerate(order) if msgs[i] is None]
            ready, _, _ = select.select(waiting, [], [], _TIMEOUT_S)
            if not ready:
                raise TimeoutError("no stream spoke at the rendezvous")
            for p in ready:
                i = index[p.fileno()]
                m = _recv(p)
                if m[:1] == _REPORT:
                    with contextlib.suppress(ValueError):
                        self.observer.report(i, json.loads(m[1:]))
                    continue
                msgs[i] = m
                self.observer.arrived(i)
        self.observer.met()
        return [m for m in msgs if m is not None]


class Rendezvous:
    """One stream's handle on the coordinator. Use ``all_gather`` and ``barrier``."""

    def __init__(self, address: Address, stream: int) -> None:
        self.stream = stream
        self.sock = socket.create_connection((address.host, address.port), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(_TIMEOUT_S)
        _send(self.sock, json.dumps({"token": address.token, "stream": stream}).encode())

    def all_gather(self, message: str) -> list[str]:
        """Every stream's message, in stream order, once all have sent theirs."""
        _send(self.sock, json.dumps(message).encode())
        return [str(m) for m in json.loads(_recv(self.sock))]

    def barrier(self) -> None:
        self.all_gather("")

    def report(self, payload: dict[str, object]) -> None:
        """Tell the driver's observer ``payload`` (no answer, no wait)."""
        _send(self.sock, _REPORT + json.dumps(payload).encode())

    def close(self) -> None:
        with contextlib.suppress(OSError):
            _send(self.sock, _BYE)
        self.sock.close()
