"""The capacity search (``applier capacity``): the highest rate a subscriber holds, per N.

For each number of streams: one run as fast as it goes measures the throughput T; paced runs
then start at ``start`` x T and raise the rate by ``step`` until a threshold breaks (by default
the apply lag's p99 under a second, and the rate reached within 5% of the target). The
highest rate that held is the subscriber's capacity at that N: the figure a load tester
asks first (how many streams does the publisher's peak need?).

Every run goes through :func:`applier.api.run` on one target and one Spark session.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from applier.config import Config, LoadSettings

DEFAULT_THRESHOLDS = ("lag_p99<1s", "throughput>=0.95*rate")


@dataclass(frozen=True)
class Step:
    streams: int
    rate: float | None  # None: the unpaced run that measured the throughput
    held: bool
    throughput: float | None
    lag_p99: float | None
    broken: tuple[str, ...]
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Capacity:
    streams: int
    unpaced_tps: float | None
    held_rate: float | None  # the highest rate that held (None: not even the first)
    broke_rate: float | None  # the first rate that broke
    broke: tuple[str, ...]
    steps: tuple[Step, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "streams": self.streams,
            "unpaced_tps": self.unpaced_tps,
            "held_rate": self.held_rate,
            "broke_rate": self.broke_rate,
            "broke": list(self.broke),
            "steps": [s.to_json() for s in self.steps],
        }


def search(
    config: Config,
    run: Callable[[Config], Any],
    streams: Sequence[int],
    *,
    duration: float,
    thresholds: Sequence[str] = DEFAULT_THRESHOLDS,
    start: float = 0.5,
    step: float = 1.25,
    max_steps: int = 8,
    say: Callable[[str], None] = print,
) -> list[Capacity]:
    """The capacity at each N of ``streams``. ``run(config)`` applies one configuration and
    returns its RunResult (one target, one Spark session)."""
    out = []
    for n in streams:
        base = config.replace(run=dataclasses.replace(config.run, streams=n), load=LoadSettings())
        r0 = run(base)
        sm = r0.subscriptions[0].summary
        tps = round(sm.transactions / sm.apply_seconds, 1) if sm.apply_seconds > 0 else None
        steps = [Step(n, None, r0.exit_code == 0, tps, None, (), float(sm.apply_seconds))]
        say(f"N={n}: as fast as it goes, {tps or 0:,.0f} tps")
        held: float | None = None
        broke: float | None = None
        why: tuple[str, ...] = ()
        rate = max(1.0, round((tps or 10.0) * start, 1))
        for _ in range(max_steps):
            load = LoadSettings(rate=rate, duration=duration, thresholds=tuple(thresholds))
            r = run(base.replace(load=load))
            m = r.metrics
            broken = tuple(str(t["threshold"]) for t in r.broken)
            if r.verdict.exit_code != 0:
                broken += (f"verdict {r.verdict}",)
            ok = not broken
            steps.append(
                Step(n, rate, ok, m.get("throughput"), m.get("lag_p99"), broken, float(r.seconds or 0))
            )
            say(
                f"N={n}: {rate:,.1f} tps {'held' if ok else 'broke ' + ', '.join(broken)} "
                f"(reached {m.get('throughput') or 0:,.1f} tps, lag p99 {m.get('lag_p99') or 0:.3f} s)"
            )
            if not ok:
                broke, why = rate, broken
                break
            held = rate
            rate = round(rate * step, 1)
        out.append(Capacity(n, tps, held, broke, why, tuple(steps)))
    return out


def table_lines(found: Sequence[Capacity]) -> list[str]:
    head = f"{'N':>3} {'unpaced tps':>12} {'held (tps)':>11} {'broke at':>9}  broke"
    lines = [head, "-" * len(head)]
    for c in found:
        lines.append(
            f"{c.streams:>3} {c.unpaced_tps or 0:>12,.1f} {c.held_rate or 0:>11,.1f} "
            f"{'-' if c.broke_rate is None else f'{c.broke_rate:,.1f}':>9}  {', '.join(c.broke) or '-'}"
        )
    return lines
