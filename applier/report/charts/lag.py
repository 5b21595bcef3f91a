"""The HTML of a paced run (load test): the lag's percentiles, lag over time (p50, p99 and the
worst transaction of each round) beside the percentile curve (HdrHistogram's plot: the
percentile axis spaced by nines), and the thresholds. Rendered from
``templates/load.html.j2`` and ``thresholds.html.j2`` (the report's one environment:
:mod:`applier.report.markup`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from applier.report.markup import render

W, H, PAD, BOTTOM, TOP = 560, 240, 52, 22, 20
_KEYS = ("p50", "p90", "p99", "p999", "max")
_NAMES = ("p50", "p90", "p99", "p99.9", "max")
_SERIES = (("p50", "#2da44e"), ("p99", "#bf8700"), ("max", "#cf222e"))


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{float(v):.4f}"


def _scale(top: float) -> tuple[float, list[tuple[float, str]]]:
    """A y-axis top (a round number above ``top``) and its ticks."""
    if top <= 0:
        top = 0.001
    mag = 10 ** math.floor(math.log10(top))
    nice = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= top)
    return nice, [(nice * k / 4, f"{nice * k / 4:.3g}") for k in range(5)]


def _y(v: float, top: float) -> float:
    return round(H - BOTTOM - (H - BOTTOM - TOP) * min(v, top) / top, 1)


def _x(v: float, right: float) -> float:
    return round(PAD + (W - 8 - PAD) * (v / right if right > 0 else 0.0), 1)


def over_time(per_round: Sequence[Mapping[str, Any]], limit: float | None) -> dict[str, Any]:
    rounds = [r for r in per_round if r.get("max") is not None]
    right = max((float(r["t"]) for r in rounds), default=1.0) or 1.0
    top, ticks = _scale(max([float(r["max"]) for r in rounds] + ([limit] if limit else []) or [0.001]))
    series = [
        {
            "name": name,
            "colour": colour,
            "points": " ".join(f"{_x(float(r['t']), right)},{_y(float(r[name]), top)}" for r in rounds),
        }
        for name, colour in _SERIES
    ]
    xt = [(_x(right * k / 4, right), f"{right * k / 4:.{0 if right >= 20 else 1}f} s") for k in range(5)]
    return {
        "series": series,
        "yticks": [(_y(v, top), label) for v, label in ticks],
        "xticks": xt,
        "limit": _y(limit, top) if limit is not None else None,
    }


def percentile_curve(curve: Sequence[Sequence[float]]) -> dict[str, Any]:
    """x: nines of the percentile (0 at p0, 1 at p90, 2 at p99 ... 5 at p99.999)."""

    def nines(p: float) -> float:
        return 5.0 if p >= 99.999 else -math.log10(1.0 - p / 100.0)

    top, ticks = _scale(max((float(v) for _, v in curve), default=0.001))
    pts = " ".join(f"{_x(nines(float(p)), 5.0)},{_y(float(v), top)}" for p, v in curve)
    labels = ("0%", "90%", "99%", "99.9%", "99.99%", "99.999%")
    return {
        "points": pts,
        "yticks": [(_y(v, top), label) for v, label in ticks],
        "xticks": [(_x(float(k), 5.0), labels[k]) for k in range(6)],
    }


def load_section(
    load: Mapping[str, Any], thresholds: Sequence[Mapping[str, Any]] = (), uid: str = "s0"
) -> Markup:
    """The load section of a subscriber's page; empty for a run that was not paced."""
    if not load:
        return Markup("")
    lag = load.get("lag") or {}
    limit = next(
        (
            float(t["limit"])
            for t in thresholds
            if str(t.get("metric", "")).startswith("lag_") and t.get("limit") is not None
        ),
        None,
    )
    return Markup(
        render(
            "load.html.j2",
            load=load,
            lag=lag,
            pcts=lag.get("percentiles") or {},
            per_stream=sorted((lag.get("per_stream") or {}).items(), key=lambda kv: int(kv[0])),
            keys=_KEYS,
            names=_NAMES,
            fmt=_fmt,
            over=over_time(lag.get("per_round") or [], limit),
            curve=percentile_curve(lag.get("curve") or []),
            w=W,
            h=H,
            pad=PAD,
            uid=uid,
        )
    )


def thresholds_section(checked: Sequence[Mapping[str, Any]]) -> Markup:
    """The run's thresholds, held or broken."""
    if not checked:
        return Markup("")
    return Markup(render("thresholds.html.j2", checked=checked, fmt=_fmt))
