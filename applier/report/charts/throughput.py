"""Commands/s over time: x seconds since the apply started (the timeline's scale when both are
drawn), y commands/s. With buckets, each bucket is a step of the area (the agent commits a
round at once: a bucket holds a round's commit or nothing), a moving average over about half a
second is drawn over it, and the run's mean as a dashed line."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from markupsafe import Markup

from applier.report.charts.axis import AXIS_H, LEFT, RIGHT, WIDTH, fmt_tick, nice_step, seconds_ticks, ticks
from applier.report.markup import as_float, as_list, as_map, render

TOP = 10
PLOT_H = 160
MAX_TOOLTIPS = 400  # a tooltip per point or bucket up to this many


def moving_average(values: Sequence[float], window: int) -> list[float]:
    """Centred mean over ``window`` points (fewer at the ends)."""
    half = window // 2
    out = []
    for i in range(len(values)):
        part = values[max(0, i - half) : i + half + 1]
        out.append(sum(part) / len(part))
    return out


def throughput_svg(series: Any, tmin_end: float = 0.0, mean: float | None = None) -> Markup:
    """The chart of ``series`` (points of seconds and commands/s, buckets if it has a width) at
    least ``tmin_end`` seconds wide, with the run's ``mean``."""
    s = as_map(series)
    pts = [
        (as_float(p[0]), as_float(p[1]))
        for p in as_list(s.get("points"))
        if isinstance(p, list | tuple) and len(p) >= 2
    ]
    if not pts:
        return render("charts/throughput.svg.j2", drawn=False)
    pts.sort()
    bucket = as_float(s.get("bucket_seconds"))
    tmax = max(tmin_end, pts[-1][0] + (bucket if bucket > 0 else 0.0)) or 1.0
    ymax_raw = max([v for _, v in pts] + ([mean] if mean else [])) or 1.0
    ystep = nice_step(ymax_raw, 4)
    ymax = math.ceil(ymax_raw / ystep) * ystep
    plot_w = WIDTH - LEFT - RIGHT
    base = TOP + PLOT_H

    def xy(t: float, v: float) -> tuple[float, float]:
        return LEFT + plot_w * min(max(t, 0.0), tmax) / tmax, base - PLOT_H * max(v, 0.0) / ymax

    if bucket > 0:
        outline = []
        for t, v in pts:
            outline += [xy(t, v), xy(t + bucket, v)]
    else:
        outline = [xy(t, v) for t, v in pts]
    legend = [
        ("#0969da", "commands committed per second" + (f" (buckets of {bucket:g} s)" if bucket > 0 else ""))
    ]
    smooth: list[tuple[float, float]] = []
    if bucket > 0 and len(pts) >= 5:
        window = max(3, round(0.5 / bucket))
        if window < len(pts):
            avg = moving_average([v for _, v in pts], window)
            smooth = [xy(t + bucket / 2, v) for (t, _), v in zip(pts, avg, strict=True)]
            legend.append(("#bc4c00", f"moving average over {window * bucket:g} s"))
    if mean:
        legend.append(("#1f2328", f"mean over the apply, {mean:,.0f} commands/s"))
    tips = []
    if len(pts) <= MAX_TOOLTIPS:
        for t, v in pts:
            a, _ = xy(t, v)
            w = max(xy(t + bucket, v)[0] - a, 2.0) if bucket > 0 else 4.0
            tips.append((a - (0 if bucket > 0 else 2), w, t, v))
    return render(
        "charts/throughput.svg.j2",
        drawn=True,
        g={"width": WIDTH, "left": LEFT, "right": RIGHT, "top": TOP, "plot_h": PLOT_H},
        height=TOP + PLOT_H + AXIS_H,
        base=base,
        y_ticks=[(xy(0, v)[1], fmt_tick(v, ystep)) for v in ticks(ymax, ystep, 50)],
        ticks=seconds_ticks(tmax),
        outline=outline,
        smooth=smooth,
        mean=mean,
        mean_y=xy(0, mean)[1] if mean else 0.0,
        tips=tips,
        legend=legend,
        peak=max(v for _, v in pts),
    )
