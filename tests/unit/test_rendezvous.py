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
