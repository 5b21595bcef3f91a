"""The benchmark's chart: commands/s against the number of streams N (log2 scale), one line
per measured series and the native logical apply's rate as a dashed level, for one
synchronous_commit setting."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from applier.report.charts.axis import fmt_tick, nice_step, ticks
from applier.report.markup import as_float, as_int, as_map, render

BENCH_SERIES = (
    ("ceiling", "ceiling (minimal pyodbc loop)"),
    ("applier_apply", "applier apply phase"),
    ("applier_end_to_end", "applier end to end"),
    ("applier_set_apply", "applier apply phase, set-based"),
    ("applier_set_end_to_end", "applier end to end, set-based"),
)
SERIES_COLOURS = ("#0969da", "#1a7f37", "#bc4c00", "#8250df", "#bf3989", "#1b7c83")
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 480, 300, 64, 16, 28, 40


def rate(m: Any) -> float | None:
    """A measure's commands/s, None where it was not measured."""
    v = as_map(m).get("commands_per_s")
    return None if v is None else as_float(v)


def bench_svg(sync: str, run: Mapping[str, Any]) -> Markup:
    per_n = as_map(run.get("per_n"))
    ns = sorted(as_int(n) for n in per_n if as_int(n) > 0)
    native = rate(run.get("native_logical"))
    series: list[tuple[str, str, list[tuple[int, float]]]] = []
    for i, (key, label) in enumerate(BENCH_SERIES):
        rates = [(n, rate(as_map(per_n.get(str(n))).get(key))) for n in ns]
        got = [(n, v) for n, v in rates if v is not None]
        if got:
            series.append((label, SERIES_COLOURS[i % len(SERIES_COLOURS)], got))
    values = [v for _, _, pts in series for _, v in pts] + ([native] if native else [])
    if not values:
        return render("charts/bench.svg.j2", sync=sync, measured=False)
    ystep = nice_step(max(values), 5)
    ymax = math.ceil(max(values) / ystep) * ystep or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    # N on a log2 scale, as the bench's own plot
    lo, hi = math.log2(min(ns or [1])), math.log2(max(ns or [1]))

    def x(n: int) -> float:
        return LEFT + (plot_w / 2 if hi == lo else plot_w * (math.log2(n) - lo) / (hi - lo))

    def y(v: float) -> float:
        return TOP + plot_h - plot_h * v / ymax

    return render(
        "charts/bench.svg.j2",
        sync=sync,
        measured=True,
        g={"width": WIDTH, "height": HEIGHT, "left": LEFT, "right": RIGHT, "top": TOP},
        plot_w=plot_w,
        base=TOP + plot_h,
        y_ticks=[(y(v), fmt_tick(v, ystep)) for v in ticks(ymax, ystep, 50)],
        x_ticks=[(x(n), n) for n in ns],
        native=native,
        native_y=y(native) if native else 0.0,
        series=[
            (label, colour, "end to end" in label, [(x(n), y(v), n, v) for n, v in pts])
            for label, colour, pts in series
        ],
    )
