"""The timeline of rounds per stream: one lane per stream (0..N-1, every one drawn even if
idle), x = seconds since the apply started. The rounds are bands across all lanes (parallel
shaded in turn, reset hatched, fatal red), each stream's share of a round a bar coloured by its
outcome (a conflict by its class), a ``<title>`` on every band and bar, an axis in seconds."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from applier.report.charts.axis import AXIS_H, LEFT, RIGHT, WIDTH, seconds_ticks
from applier.report.markup import OUTCOME_COLOURS, as_float, as_int, as_list, as_map, class_colour, render

ROUND_FILLS = {"parallel": ("#f6f8fa", "#eaeef2"), "reset": ("#fff1e5",), "fatal": ("#ffebe9",)}
TOP = 22
LANE_H = 26
LANE_GAP = 4
MAX_SEGMENTS = 20_000
# An outcome's bar in the legend, in this order; a committed share is always listed.
OUTCOME_LEGEND = (
    ("committed", "committed share"),
    ("rolled_back", "rolled back (another stream's conflict)"),
    ("reapplied", "re-applied on one connection"),
    ("failed", "failed on the single connection"),
)


def timeline_end(tl: Any) -> float:
    """The last end of a round or a share, in seconds since the apply started."""
    t = as_map(tl)
    ends = [as_float(as_map(r).get("end")) for r in as_list(t.get("rounds"))]
    ends += [as_float(as_map(s).get("end")) for s in as_list(t.get("segments"))]
    return max(ends, default=0.0)


def _round_key(r: Any) -> str:
    return json.dumps(r, default=str)


def _round_extents(
    rounds: Sequence[Mapping[str, Any]], segments: Sequence[Mapping[str, Any]]
) -> dict[str, tuple[float, float]]:
    """Each round's band from its first share's start to its last share's end (the round's
    own times are stream 0's, which may start after the others): only when every round
    appears once in the list, else a round number could gather another round's shares."""
    keys = [_round_key(r.get("round")) for r in rounds]
    if len(set(keys)) != len(keys):
        return {}
    out = {k: (as_float(r.get("start")), as_float(r.get("end"))) for k, r in zip(keys, rounds, strict=True)}
    for sg in segments:
        k = _round_key(sg.get("round"))
        if k in out:
            a, b = out[k]
            out[k] = (min(a, as_float(sg.get("start"), a)), max(b, as_float(sg.get("end"), b)))
    return out


def _bands(
    rounds: Sequence[Mapping[str, Any]], extent: dict[str, tuple[float, float]], x: Any, hatch: str
) -> list[dict[str, Any]]:
    """Each round's band: where it is, its fill and outline, its tooltip and its label if it fits."""
    out = []
    parallel_i = 0
    for r in rounds:
        kind = str(r.get("kind") or "parallel")
        start, end = extent.get(
            _round_key(r.get("round")), (as_float(r.get("start")), as_float(r.get("end")))
        )
        x0, x1 = x(start), x(end)
        w = max(x1 - x0, 0.8)
        classes = [str(c) for c in as_list(r.get("classes"))]
        tip = f"round {r.get('round')}: {kind}" + (f" ({', '.join(classes)})" if classes else "")
        tip += f", {start:.3f} s to {end:.3f} s"
        stroke: tuple[str, str] | None
        if kind == "reset":
            fill, stroke = f"url(#{hatch})", ("#e16f24", "1")
        elif kind == "fatal":
            fill, stroke = ROUND_FILLS["fatal"][0], ("#cf222e", "1.2")
        else:
            fill, stroke = ROUND_FILLS["parallel"][parallel_i % 2], None
            parallel_i += 1
        label = str(r.get("round", "")) + (
            " reset" if kind == "reset" else " fatal" if kind == "fatal" else ""
        )
        text = None
        if w >= 7 * len(label) or (kind != "parallel" and w >= 14):
            text = label if w >= 7 * len(label) else str(r.get("round", ""))
        colour = "#bc4c00" if kind == "reset" else "#cf222e" if kind == "fatal" else "#57606a"
        out.append(
            {"round": r.get("round"), "kind": kind, "x0": x0, "w": w, "mid": (x0 + x1) / 2, "fill": fill}
            | {"stroke": stroke, "tip": tip, "text": text, "colour": colour}
        )
    return out


def _bars(lane: int, mine: Sequence[Mapping[str, Any]], x: Any) -> list[dict[str, Any]]:
    """A lane's shares: the bar, its tooltip, and its class's name inside it or a mark above."""
    out = []
    for s in mine:
        outcome = str(s.get("outcome") or "committed")
        cls = s.get("class")
        colour = class_colour(cls) if outcome == "conflict" else OUTCOME_COLOURS.get(outcome, "#6e7781")
        x0, x1 = x(s.get("start")), x(s.get("end"))
        w = max(x1 - x0, 1.0)
        tip = (
            f"stream {lane}, round {s.get('round')}: {outcome}"
            + (f" ({cls})" if cls else "")
            + f", {as_int(s.get('commands')):,} commands, {as_float(s.get('start')):.3f} s to "
            f"{as_float(s.get('end')):.3f} s"
        )
        # too narrow for the class's name: a mark above the bar
        label = ("text" if w >= 6.2 * len(str(cls)) + 6 else "mark") if cls else None
        out.append(
            {"outcome": outcome, "cls": cls, "colour": colour, "x0": x0, "w": w, "mid": (x0 + x1) / 2}
            | {"tip": tip, "label": label}
        )
    return out


def _legend(
    rounds: Sequence[Mapping[str, Any]], segments: Sequence[Mapping[str, Any]]
) -> list[tuple[str, str]]:
    seen = {str(s.get("outcome") or "committed") for s in segments}
    items = [(OUTCOME_COLOURS[o], text) for o, text in OUTCOME_LEGEND if o in seen or o == "committed"]
    classes = sorted(
        {str(s.get("class")) for s in segments if s.get("class")}
        | {str(c) for r in rounds for c in as_list(r.get("classes"))}
    )
    return items + [(class_colour(c), f"conflict: {c}") for c in classes]


def timeline_svg(timeline: Any, streams: int, uid: str = "t") -> Markup:
    """The timeline of ``streams`` lanes at least; ``uid`` keeps its pattern's id unique on a page."""
    tl = as_map(timeline)
    rounds = [as_map(r) for r in as_list(tl.get("rounds"))]
    segments = [as_map(s) for s in as_list(tl.get("segments"))]
    if not rounds and not segments:
        return render("charts/timeline.svg.j2", drawn=False)
    lanes = max([streams, *(as_int(s.get("stream"), -1) + 1 for s in segments)])
    tmax = timeline_end(tl) or 1.0
    plot_w = WIDTH - LEFT - RIGHT
    lanes_h = lanes * (LANE_H + LANE_GAP)

    def x(t: Any) -> float:
        return LEFT + plot_w * min(max(as_float(t), 0.0), tmax) / tmax

    hatch = f"hatch-{uid}"
    by_stream: dict[int, list[Mapping[str, Any]]] = {}
    for s in segments[:MAX_SEGMENTS]:
        by_stream.setdefault(as_int(s.get("stream"), -1), []).append(s)
    notes = []
    if tl.get("truncated"):
        notes.append("the timeline was truncated when it was recorded: later rounds are not drawn")
    if len(segments) > MAX_SEGMENTS:
        notes.append(f"only the first {MAX_SEGMENTS:,} of {len(segments):,} shares are drawn")
    kinds = {str(r.get("kind") or "parallel") for r in rounds}
    return render(
        "charts/timeline.svg.j2",
        drawn=True,
        g={"width": WIDTH, "left": LEFT, "right": RIGHT, "top": TOP, "lane_h": LANE_H},
        height=TOP + lanes_h + AXIS_H,
        hatch=hatch,
        band_y=TOP - 2,
        band_h=lanes_h + 2,
        plot_w=plot_w,
        bands=_bands(rounds, _round_extents(rounds, segments), x, hatch),
        axis_y=TOP + lanes_h,
        ticks=seconds_ticks(tmax),
        lanes=[
            {
                "y": TOP + lane * (LANE_H + LANE_GAP),
                "done": sum(as_int(s.get("commands")) for s in by_stream.get(lane, [])),
                "shares": len(by_stream.get(lane, [])),
                "bars": _bars(lane, by_stream.get(lane, []), x),
            }
            for lane in range(lanes)
        ],
        legend=_legend(rounds, segments),
        reset="reset" in kinds,
        fatal="fatal" in kinds,
        notes=notes,
    )
