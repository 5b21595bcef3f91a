"""The driver-side coordinator that replaces Spark's one-second barrier polling."""

from __future__ import annotations

import threading
import time

import pytest

from applier.apply.rendezvous import Coordinator, Rendezvous


def test_all_gather_returns_every_message_in_stream_order():
    coord = Coordinator(3)
    coord.start()
    results: dict[int, list[list[str]]] = {}

    def stream(i: int) -> None:
        r = Rendezvous(coord.address, i)
        got = [r.all_gather(f"s{i}-round{k}") for k in range(50)]
        r.barrier()
        r.close()
        results[i] = got

    threads = [threading.Thread(target=stream, args=(i,)) for i in (2, 0, 1)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    elapsed = time.perf_counter() - t0
    coord.stop()
    for i in range(3):
        assert results[i][7] == ["s0-round7", "s1-round7", "s2-round7"]
        assert len(results[i]) == 50
    assert elapsed < 10  # 51 meetings; Spark's barrier would need about 51 s


def test_a_wrong_token_is_not_a_peer():
    coord = Coordinator(1)
    coord.start()
    from dataclasses import replace

    with pytest.raises((ConnectionError, OSError)):
        r = Rendezvous(replace(coord.address, token="nope"), 0)
        r.sock.settimeout(2)
        r.all_gather("x")
    coord.stop()


def test_a_dead_stream_fails_the_others_fast():
    coord = Coordinator(2)
    coord.start()
    a = Rendezvous(coord.address, 0)
    b = Rendezvous(coord.address, 1)
    b.sock.close()  # stream 1's task died
    a.sock.settimeout(10)
    with pytest.raises((ConnectionError, OSError)):
        a.all_gather("hello")
    coord.stop()


def test_stop_wakes_the_accept_that_waits_for_a_retried_stage():
    """After the streams said bye the coordinator waits in accept() for a retried stage; stop
    wakes it instead of waiting for accept's timeout (here 30 s, past stop's 5 s join)."""
    coord = Coordinator(1)
    coord.listener.settimeout(30)
    coord.start()
    r = Rendezvous(coord.address, 0)
    assert r.all_gather("x") == ["x"]
    r.close()
    time.sleep(0.2)  # the coordinator is back in accept()
    t0 = time.perf_counter()
    coord.stop()
    assert not coord.is_alive()
    assert time.perf_counter() - t0 < 5


def test_accept_streams_keeps_one_socket_per_stream_that_knows_the_token():
    """The accept loop the coordinator and the gate share: a stranger (wrong token, a hello that
    is not one, a stream number out of range) is closed; a stream that connects again replaces
    its earlier socket; a halt closes what was accepted."""
    import json
    import socket

    from applier.apply.rendezvous import Address, _recv, _send, accept_streams

    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    address = Address("127.0.0.1", listener.getsockname()[1], "secret", 2)
    got: list[dict[int, socket.socket] | None] = []
    halt = threading.Event()
    accepting = threading.Thread(target=lambda: got.append(accept_streams(listener, address, halt, 30.0)))
    accepting.start()

    def hello(payload: bytes) -> socket.socket:
        s = socket.create_connection((address.host, address.port), timeout=10)
        _send(s, payload)
        return s

    strangers = [
        hello(json.dumps({"token": "nope", "stream": 0}).encode()),
        hello(b"not json"),
        hello(json.dumps({"token": "secret", "stream": 5}).encode()),
        hello(json.dumps(["token", "secret"]).encode()),
    ]
    first = hello(json.dumps({"token": "secret", "stream": 0}).encode())
    for s in strangers:  # each closed by the other side
        assert s.recv(1) == b""
    again = hello(json.dumps({"token": "secret", "stream": 0}).encode())
    assert first.recv(1) == b""  # replaced
    one = hello(json.dumps({"token": "secret", "stream": 1}).encode())
    accepting.join(timeout=30)
    peers = got[0]
    assert peers is not None and sorted(peers) == [0, 1]
    assert peers[0].gettimeout() == 30.0
    _send(peers[0], b"to stream 0")
    _send(peers[1], b"to stream 1")
    assert _recv(again) == b"to stream 0" and _recv(one) == b"to stream 1"

    # a stage that stops before all its streams came: the one that did is let go
    listener.settimeout(0.05)
    halt.clear()
    got.clear()
    accepting = threading.Thread(target=lambda: got.append(accept_streams(listener, address, halt, None)))
    accepting.start()
    lone = hello(json.dumps({"token": "secret", "stream": 1}).encode())
    time.sleep(0.5)  # accepted by now (the accept loop turns every 0.05 s)
    halt.set()
    accepting.join(timeout=30)
    assert got == [None]
    assert lone.recv(1) == b""
    for s in (*strangers, first, again, one, lone, *peers.values()):
        s.close()
    listener.close()
