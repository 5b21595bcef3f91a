"""Fast barriers between the N stream tasks of one Spark barrier stage.

Spark's ``BarrierTaskContext.barrier()/allGather()`` poll for completion in steps of one
second (``Thread.sleep(1000)`` in BarrierTaskContext.runBarrier): measured here at 0.9-1.0 s
per call, whatever the work. The agent meets its streams two or three times per round, so
Spark's barrier is used once, to exchange where stream 0 listens (and a secret), and every
later meeting goes through this coordinator: stream 0 runs a small TCP server, every stream
(stream 0 included) connects, and ``all_gather`` costs one round trip on the local network.

A dead peer closes its socket; the server then closes every socket, so the others fail
fast instead of waiting forever, and Spark fails the barrier stage as a whole.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import struct
import threading
from typing import Any

_HDR = struct.Struct("!I")
_TIMEOUT_S = 6 * 3600.0  # a round may legitimately take long (lock waits, huge rounds)


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


class _Server(threading.Thread):
    def __init__(self, n: int, token: str, bind: str) -> None:
        super().__init__(name="applier-rendezvous", daemon=True)
        self.n = n
        self.token = token
        self.listener = socket.create_server((bind, 0))
        self.listener.settimeout(300)
        self.port = self.listener.getsockname()[1]
        self.error: BaseException | None = None

    def run(self) -> None:
        peers: dict[int, socket.socket] = {}
        try:
            while len(peers) < self.n:
                conn, _ = self.listener.accept()
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conn.settimeout(_TIMEOUT_S)
                hello = json.loads(_recv(conn))
                if hello.get("token") != self.token:
                    conn.close()
                    continue
                peers[int(hello["stream"])] = conn
            order = [peers[i] for i in range(self.n)]
            while True:
                msgs = [_recv(p) for p in order]
                if all(m == b"\x00bye" for m in msgs):
                    return
                combined = b"[" + b",".join(msgs) + b"]"
                for p in order:
                    _send(p, combined)
        except BaseException as e:  # noqa: BLE001 - any failure ends the rendezvous for all
            self.error = e
        finally:
            for p in peers.values():
                with contextlib.suppress(OSError):
                    p.close()
            self.listener.close()


class Rendezvous:
    """One stream's handle on the coordinator. Use ``all_gather`` and ``barrier``."""

    def __init__(self, ctx: Any, n: int) -> None:
        """ctx: the task's BarrierTaskContext. Costs one Spark allGather (about a second)."""
        self.stream = ctx.partitionId()
        self.n = n
        self.server: _Server | None = None
        infos = ctx.getTaskInfos()
        host0 = infos[0].address.rsplit(":", 1)[0] if infos else "127.0.0.1"
        local = host0 in ("localhost", "127.0.0.1", "::1") or all(
            i.address == infos[0].address for i in infos
        )
        if self.stream == 0:
            token = secrets.token_hex(16)
            self.server = _Server(n, token, "127.0.0.1" if local else "")
            self.server.start()
            mine = json.dumps({"port": self.server.port, "token": token})
        else:
            mine = ""
        where = json.loads(ctx.allGather(mine)[0])
        host = "127.0.0.1" if local else host0
        self.sock = socket.create_connection((host, where["port"]), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(_TIMEOUT_S)
        _send(self.sock, json.dumps({"token": where["token"], "stream": self.stream}).encode())

    def all_gather(self, message: str) -> list[str]:
        """Every stream's message, in stream order, once all have sent theirs."""
        _send(self.sock, json.dumps(message).encode())
        return [str(m) for m in json.loads(_recv(self.sock))]

    def barrier(self) -> None:
        self.all_gather("")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            _send(self.sock, b"\x00bye")
        self.sock.close()
        if self.server is not None:
            self.server.join(timeout=10)
