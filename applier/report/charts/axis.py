"""Axes shared by the charts: round tick steps, tick labels, and the x axis in seconds."""

from __future__ import annotations

import math

# The charts that share the x axis in seconds (the timeline and commands/s over time) share
# its width and margins too, so that one second falls at the same x in both.
WIDTH = 1000
LEFT = 84
RIGHT = 16
AXIS_H = 30


def nice_step(span: float, ticks: int = 8) -> float:
    """A round tick step (1, 2 or 5 x 10^k) giving about ``ticks`` ticks over ``span``."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * mag:
            return float(m * mag)
    return float(10 * mag)


def fmt_tick(v: float, step: float) -> str:
    if step >= 1:
        return f"{v:,.0f}"
    digits = max(0, -math.floor(math.log10(step)))
    return f"{v:.{digits}f}"


def ticks(vmax: float, step: float, limit: int) -> list[float]:
    """0, step, 2 step ... up to ``vmax`` (a hair over, for rounding), at most ``limit``."""
    out: list[float] = []
    k = 0
    while k * step <= vmax * 1.0000001 and k < limit:
        out.append(k * step)
        k += 1
    return out


def seconds_ticks(tmax: float) -> list[tuple[float, str]]:
    """The x axis in seconds from 0 to ``tmax``: each tick's x and its label."""
    span = WIDTH - LEFT - RIGHT
    step = nice_step(tmax)
    return [(LEFT + span * v / tmax, f"{fmt_tick(v, step)} s") for v in ticks(tmax, step, 200)]
