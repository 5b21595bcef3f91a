"""What a run shows while it goes: Prometheus metrics (``--metrics-port``) and a progress line
per interval (``-P SECONDS``, as pgbench prints them).

The stream tasks report each round to the rendezvous on the driver
(:meth:`applier.apply.rendezvous.Rendezvous.report`); :class:`LiveMetrics` is the stage's
observer. The report written at the end stays the reference: the metrics are what a scraper
sees meanwhile, and their counters end equal to the report's (a test checks it).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from hdrh.histogram import HdrHistogram
from prometheus_client import CollectorRegistry, Counter, Enum, Gauge, Histogram, start_http_server

from applier.apply.pace import histogram
from applier.apply.rendezvous import Observer
from applier.config import Config

STATES = ["starting", "applying", "waiting", "reapplying", "done"]
LAG_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


class LiveMetrics(Observer):
    """The run's live figures: Prometheus metrics in ``registry`` and, every ``every`` seconds,
    a progress line through ``say``."""

    def __init__(
        self,
        rate: float | None = None,
        registry: CollectorRegistry | None = None,
        every: float | None = None,
        say: Callable[[str], None] = print,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.rate = rate
        self.commands = Counter(
            "applier_commands_applied", "commands committed at the subscriber", registry=r
        )
        self.transactions = Counter(
            "applier_transactions_applied", "transactions committed at the subscriber", registry=r
        )
        self.resets = Counter("applier_resets", "rounds reset from N streams to 1", registry=r)
        self.conflicts = Counter(
            "applier_conflicts", "conflicts met in parallel rounds", ["class"], registry=r
        )
        self.lag = Histogram(
            "applier_apply_lag_seconds",
            "apply lag of a transaction (paced runs)",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.lag_now = Gauge(
            "applier_apply_lag_last_seconds", "the worst lag of the last round committed", registry=r
        )
        self.round_seconds = Histogram(
            "applier_round_duration_seconds", "a stream's round, its apply to its commit", registry=r
        )
        self.state = Enum(
            "applier_stream_state", "what each stream does", ["stream"], states=STATES, registry=r
        )
        self.target = Gauge("applier_target_rate_tps", "the target rate (0: as fast as it goes)", registry=r)
        self.target.set(rate or 0.0)
        self.every = every
        self.say = say
        self._lock = threading.Lock()
        self._window: HdrHistogram = histogram()
        self._window_x = 0
        self._window_c = 0
        self._totals = {"transactions": 0, "commands": 0, "resets": 0}
        self._start: float | None = None
        self._halt = threading.Event()
        self._ticker: threading.Thread | None = None
        self._seen: dict[int, set[int]] = {}
        self._streams: set[int] = set()
        self._done: set[int] = set()

    # -- the observer --------------------------------------------------------------
    def report(self, stream: int, payload: dict[str, Any]) -> None:
        state = str(payload.get("state"))
        with self._lock:
            self._streams.add(stream)
            if self._start is None:
                self._start = time.time()
            if state in ("committed", "reapplied"):
                c, x = (
                    int(payload.get("commands", 0)),
                    self._new_xacts(int(payload["round"]), payload.get("xacts") or ()),
                )
                self.commands.inc(c)
                self.transactions.inc(x)
                self._totals["commands"] += c
                self._totals["transactions"] += x
                self._window_c += c
                self._window_x += x
                lags = payload.get("lag") or []
                for v in lags:
                    self.lag.observe(float(v))
                    self._window.record_value(max(1, round(float(v) * 1e6)))
                if lags:
                    self.lag_now.set(max(float(v) for v in lags))
                if "seconds" in payload:
                    self.round_seconds.observe(float(payload["seconds"]))
                if state == "reapplied":
                    self.state.labels(str(stream)).state("applying")
            elif state == "conflict":
                self.conflicts.labels(str(payload.get("cls") or "other")).inc()
            elif state == "reapplying":
                self.resets.inc()
                self._totals["resets"] += 1
                self.state.labels(str(stream)).state("reapplying")
            elif state in STATES:
                self.state.labels(str(stream)).state(state)
                if state == "done":
                    self._done.add(stream)

    def _new_xacts(self, rnd: int, xacts: Any) -> int:
        """Transactions not counted yet: a transaction split over streams reports from each."""
        seen = self._seen.setdefault(rnd, set())
        before = len(seen)
        seen.update(int(x) for x in xacts)
        for old in [k for k in self._seen if k < rnd - 2]:
            del self._seen[old]
        return len(seen) - before

    def arrived(self, stream: int) -> None:
        self.state.labels(str(stream)).state("waiting")

    # -- the server and the progress lines -----------------------------------------
    def serve(self, port: int, host: str = "127.0.0.1") -> Any:
        """Serve the metrics on ``host:port`` (a daemon thread); the server."""
        server, _ = start_http_server(port, addr=host, registry=self.registry)
        return server

    def __enter__(self) -> LiveMetrics:
        if self.every:
            self._ticker = threading.Thread(target=self._tick, name="applier-progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._halt.set()
        if self._ticker is not None:
            self._ticker.join(timeout=5)

    def _tick(self) -> None:
        assert self.every
        last = time.time()
        while not self._halt.wait(self.every):
            now = time.time()
            line = self.line(now - last)
            last = now
            if line is not None:
                self.say(line)

    def line(self, interval: float) -> str | None:
        """The progress line of the last ``interval`` seconds (None before the apply starts)."""
        with self._lock:
            if self._start is None or (self._done and self._done >= self._streams):
                return None  # not started, or every stream is done
            h, x, c = self._window, self._window_x, self._window_c
            self._window, self._window_x, self._window_c = histogram(), 0, 0
            total = dict(self._totals)
            elapsed = time.time() - self._start
        tps = x / interval if interval > 0 else 0.0
        target = f" (target {self.rate:,.0f})" if self.rate else ""
        lag = (
            f", lag p50 {h.get_value_at_percentile(50) / 1e6:.3f} s p99 {h.get_value_at_percentile(99) / 1e6:.3f} s "
            f"max {h.get_max_value() / 1e6:.3f} s"
            if h.get_total_count()
            else ""
        )
        return (
            f"progress: {elapsed:.1f} s, {tps:,.1f} tps{target}, {c / interval if interval > 0 else 0:,.0f} commands/s"
            f"{lag}, {total['transactions']:,} transactions, resets {total['resets']}"
        )


@contextlib.contextmanager
def live_metrics(config: Config, a: Any, console: Any) -> Iterator[LiveMetrics | None]:
    """The run's live metrics where ``--metrics-port`` or ``-P`` asks for them (else None):
    served on 127.0.0.1, progress lines on the console."""
    port, every = getattr(a, "metrics_port", None), getattr(a, "progress_every", None)
    if port is None and not every:
        yield None
        return
    m = LiveMetrics(
        config.load.rate, every=every, say=lambda line: console.print(line, highlight=False, soft_wrap=True)
    )
    server = m.serve(port) if port is not None else None
    if server is not None:
        console.print(
            f"metrics: http://127.0.0.1:{server.server_port}/metrics", highlight=False, soft_wrap=True
        )
    try:
        with m:
            yield m
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
