"""Paced apply: transactions become available on a schedule, and each one's apply lag is measured.

A load test applies a stream at the publisher's pace, not as fast as it can. A transaction's
*due* time is when it would have committed at the publisher: ``xact_index / rate`` seconds
after the start at a target rate (``--rate``), or its own commit time scaled by the speed for
a replayed capture (``--pace source``). The agent reads what has been committed, so a round
starts only once its last transaction is due; rounds are time-bounded micro-batches (the plan
cuts them at ``batch_interval`` seconds of transactions, at most CommitBatchSize).

Lag is a transaction's commit at the subscriber minus its due time, a re-applied round's
commit included. Each stream records the lags of the transactions it committed in an
HdrHistogram per round (the ``hdrhistogram`` package); a round's histogram travels as a
``lag`` event (its encoding in ``message``), and the driver merges them overall, per stream
and per round (:func:`lag_report`).

The streams agree on the start through the rendezvous (each sends its clock, the latest
wins), so a stream whose task started late does not run behind from its first round. On a
cluster the executors' clocks are assumed in step (NTP: milliseconds).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hdrh.histogram import HdrHistogram

LOWEST_US = 1
HIGHEST_US = 24 * 3600 * 1_000_000  # a day of lag, in microseconds
DIGITS = 3
PERCENTILES = (50.0, 90.0, 99.0, 99.9)


def histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, DIGITS)


@dataclass(frozen=True)
class Pace:
    """When each transaction is due, in seconds after the agreed start.

    ``rate``: transactions per second (due = xact_index / rate); else ``due``: each
    transaction's offset by xact_index (a replayed capture's commit times, scaled by
    ``speed``). ``round_size``: transactions per round (every round but the last is full);
    ``firsts``: where rounds cut on the capture's clock start instead (xact_index of each
    round's first transaction; ``round_size`` is then the largest round)."""

    round_size: int
    rate: float | None = None
    due: tuple[float, ...] | None = None
    firsts: tuple[int, ...] | None = None
    speed: float | None = None

    def __post_init__(self) -> None:
        if (self.rate is None) == (self.due is None):
            raise ValueError("a pace has a rate or due times, not both")
        if self.rate is not None and self.rate <= 0:
            raise ValueError(f"the rate must be above 0 transactions/s, got {self.rate}")

    def of(self, xact_index: int) -> float:
        if self.rate is not None:
            return xact_index / self.rate
        assert self.due is not None
        return self.due[min(xact_index, len(self.due) - 1)]

    def round_due(self, r: int, transactions: int | None = None) -> float:
        """When round r may start: its last transaction is due."""
        if self.firsts is not None:
            assert self.due is not None
            nxt = self.firsts[r + 1] if r + 1 < len(self.firsts) else len(self.due)
            return self.of(max(nxt - 1, 0))
        last = (r + 1) * self.round_size - 1
        if transactions is not None:
            last = min(last, transactions - 1)
        if self.due is not None:
            last = min(last, len(self.due) - 1)
        return self.of(max(last, 0))


def round_size(rate: float, batch_interval: float, commit_batch_size: int) -> int:
    """Transactions per round at ``rate``: those due within ``batch_interval``, at least one,
    at most CommitBatchSize."""
    return max(1, min(commit_batch_size, int(rate * batch_interval)))


def agree_start(gather: Any, lead_s: float = 0.05, pace: Pace | None = None, done: int = -1) -> float:
    """The run's start, epoch seconds: the latest stream's clock plus ``lead_s`` (every stream
    has connected by then). ``gather``: the rendezvous's all_gather. A resumed run (``done``:
    the last round this stream committed before) starts its clock at the first round some
    stream still has to apply: the schedule goes on from there, rather than idling through
    the time of the rounds an earlier run applied."""
    got = [json.loads(x) for x in gather(json.dumps([time.time(), done]))]
    start = max(float(c) for c, _ in got) + lead_s
    first = min(int(d) for _, d in got) + 1
    if pace is not None and first > 0:
        start -= pace.round_due(first - 1)
    return start


def wait_until(t: float) -> float:
    """Sleep until epoch ``t``; the seconds slept."""
    left = t - time.time()
    if left > 0:
        time.sleep(left)
        return left
    return 0.0


class LagRecorder:
    """A stream's lags, as HdrHistograms per round: ``part`` records when this stream's part of
    its transactions committed (a stream's lag: ``stream`` set), ``whole`` when whole
    transactions did, every stream's part in (the run's lag: recorded once, by stream 0;
    ``stream`` None). ``drain()`` gives them as ``lag`` event fields, encoded."""

    def __init__(self, pace: Pace, start: float) -> None:
        self.pace = pace
        self.start = start
        self._hist: dict[tuple[int | None, int], HdrHistogram] = {}
        self._ends: dict[tuple[int | None, int], float] = {}

    def lag(self, xact_index: int, t_commit: float) -> float:
        return max(0.0, t_commit - (self.start + self.pace.of(xact_index)))

    def _add(self, stream: int | None, rnd: int, lag: float, t_commit: float) -> None:
        h = self._hist.get((stream, rnd))
        if h is None:
            h = self._hist[(stream, rnd)] = histogram()
        h.record_value(max(LOWEST_US, min(HIGHEST_US, round(lag * 1e6))))
        self._ends[(stream, rnd)] = max(t_commit, self._ends.get((stream, rnd), 0.0))

    def part(self, stream: int, xacts: Iterable[int], t_commit: float, rnd: int) -> None:
        for xi in set(xacts):
            self._add(stream, rnd, self.lag(int(xi), t_commit), t_commit)

    def whole(self, commits: Mapping[int, float], rnd: int) -> list[float]:
        """``commits``: each transaction's commit (its last part's); their lags."""
        out = []
        for xi, t in commits.items():
            lag = self.lag(int(xi), t)
            self._add(None, rnd, lag, t)
            out.append(lag)
        return out

    def drain(self) -> list[dict[str, Any]]:
        """The recorded histograms as ``lag`` event fields, and forget them."""
        out = [
            {
                "stream": s,
                "round_": r,
                "n": h.get_total_count(),
                "message": h.encode().decode("ascii"),
                "t_exec": self.start,
                "t_commit": self._ends[(s, r)],
                "seconds": h.get_max_value() / 1e6,
            }
            for (s, r), h in sorted(
                self._hist.items(), key=lambda kv: (kv[0][0] is not None, kv[0][0] or 0, kv[0][1])
            )
        ]
        self._hist.clear()
        self._ends.clear()
        return out


def commits_of(parts: Iterable[tuple[float, Iterable[int]]]) -> dict[int, float]:
    """Each transaction's commit: the latest commit among the streams that held a part of it.
    ``parts``: (a stream's commit time, the transactions of its share)."""
    out: dict[int, float] = {}
    for t, xacts in parts:
        for xi in xacts:
            out[int(xi)] = max(t, out.get(int(xi), 0.0))
    return out


def _pcts(h: HdrHistogram) -> dict[str, float]:
    if h.get_total_count() == 0:
        return {}
    out = {f"p{p:g}".replace(".", ""): h.get_value_at_percentile(p) / 1e6 for p in PERCENTILES}
    out["max"] = h.get_max_value() / 1e6
    out["mean"] = round(h.get_mean_value() / 1e6, 6)
    return out


def curve(h: HdrHistogram, points: int = 60) -> list[list[float]]:
    """The percentile curve: [percentile, lag s] at percentiles spaced as 1 - 10^-k (the
    HdrHistogram plot's axis), up to the maximum."""
    if h.get_total_count() == 0:
        return []
    out: list[list[float]] = []
    for i in range(points + 1):
        nines = 5.0 * i / points  # 0 .. 99.999
        p = 100.0 * (1.0 - 10.0 ** (-nines))
        out.append([round(p, 4), h.get_value_at_percentile(p) / 1e6])
    out.append([100.0, h.get_max_value() / 1e6])
    return out


def lag_report(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Merge the ``lag`` events (stream, round, message: an encoded histogram, t_exec: the
    agreed start, t_commit): whole transactions' percentiles overall and per round (with the
    round's commit after the start: lag over time), the percentile curve and the merged
    histogram encoded; and per stream, its parts' percentiles."""
    overall = histogram()
    streams: dict[int, HdrHistogram] = {}
    rounds: dict[int, tuple[HdrHistogram, float]] = {}
    start = min((float(r["t_exec"]) for r in rows if r.get("t_exec") is not None), default=0.0)
    last = start
    for row in rows:
        h = HdrHistogram.decode(str(row["message"]).encode("ascii"))
        t = float(row["t_commit"] or 0.0)
        if row["stream"] is not None:
            streams.setdefault(int(row["stream"]), histogram()).add(h)
            continue
        overall.add(h)
        last = max(last, t)
        r = int(row["round"])
        got = rounds.get(r)
        if got is None:
            got = rounds[r] = (histogram(), t)
        got[0].add(h)
        rounds[r] = (got[0], max(got[1], t))
    return {
        "transactions": overall.get_total_count(),
        "start": start,
        "seconds": round(last - start, 4),
        "percentiles": _pcts(overall),
        "per_stream": {str(s): _pcts(h) for s, h in sorted(streams.items())},
        "per_round": [
            {"round": r, "t": round(t - start, 4), "n": h.get_total_count(), **_pcts(h)}
            for r, (h, t) in sorted(rounds.items())
        ],
        "curve": curve(overall),
        "histogram": overall.encode().decode("ascii") if overall.get_total_count() else None,
    }
