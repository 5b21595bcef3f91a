"""Run-to-run comparison: a CI performance gate (``applier compare BASELINE CANDIDATE``).

Both runs are read from their reports (a run folder's ``report.json``, or the JSON file
itself). Compared per subscriber: throughput (higher is better), the apply lag's
percentiles, the share of rounds reset to one stream, and the phases' seconds (lower is
better). A metric regresses when the candidate is worse than the baseline by more than the
tolerance; differences below a metric's floor never count: 100 ms of lag (a paced round's
default interval: the lag's own granularity) and 5 s of a phase (two cold runs of one build on
a loaded 2-core machine differed by up to 3.2 s in their apply phase). Both floors are options. Resets compare as the share of rounds reset, in points: a 10% tolerance lets
10 more rounds in 100 reset.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from applier.errors import InputError

LAG = ("p50", "p90", "p99", "p999", "max")
PHASES = ("prepare", "plan", "apply", "verify")
LAG_FLOOR_S = 0.100
PHASE_FLOOR_S = 5.0


@dataclass(frozen=True)
class Delta:
    subscription: str
    metric: str
    baseline: float | None
    candidate: float | None
    better: str  # "higher" | "lower"
    change: float | None  # relative change, worse positive (resets: points of rounds)
    regressed: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "subscription": self.subscription,
            "metric": self.metric,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "better": self.better,
            "change": self.change,
            "regressed": self.regressed,
        }


@dataclass(frozen=True)
class Comparison:
    baseline: str
    candidate: str
    tolerance: float
    deltas: tuple[Delta, ...]

    @property
    def regressions(self) -> tuple[Delta, ...]:
        return tuple(d for d in self.deltas if d.regressed)

    @property
    def exit_code(self) -> int:
        return 1 if self.regressions else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "tolerance": self.tolerance,
            "regressions": [d.metric for d in self.regressions],
            "deltas": [d.to_json() for d in self.deltas],
        }


def report_of(path: str | Path) -> tuple[str, dict[str, Any]]:
    """A run's report: ``path`` is its JSON file or a run folder holding ``report.json``."""
    p = Path(path)
    f = p / "report.json" if p.is_dir() else p
    try:
        doc = json.loads(f.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(
            f"{path}: no report (a run folder of applier run --out, or its report.json)"
        ) from None
    except (OSError, ValueError) as e:
        raise InputError(f"{f}: not a report: {e}") from None
    if not isinstance(doc, dict) or "verdict" not in doc:
        raise InputError(f"{f}: not an applier report (no verdict)")
    if doc.get("verdict") == "unknown" and not doc.get("subscriptions") and "subscription" not in doc:
        raise InputError(f"{f}: the run ended before its verdict ({doc.get('reason')}): nothing to compare")
    return str(f), doc


def figures(doc: Mapping[str, Any]) -> dict[str, dict[str, float | None]]:
    """Per subscriber, the figures compared."""
    subs = doc.get("subscriptions") if "subscriptions" in doc and "subscription" not in doc else [doc]
    out: dict[str, dict[str, float | None]] = {}
    for s in subs or ():
        load = s.get("load") or {}
        apply_s = s.get("apply_seconds") or 0
        tps = load.get("throughput")
        if tps is None and apply_s:
            tps = round(s.get("transactions", 0) / apply_s, 2)
        f: dict[str, float | None] = {"throughput": tps}
        pcts = (load.get("lag") or {}).get("percentiles") or {}
        for k in LAG:
            f[f"lag_{k}"] = pcts.get(k)
        rounds = s.get("rounds") or 0
        f["resets"] = round(100.0 * (s.get("resets") or 0) / rounds, 2) if rounds else None
        for k in PHASES:
            f[f"{k}_seconds"] = (s.get("phases_seconds") or {}).get(k)
        out[str(s.get("subscription"))] = f
    return out


def _delta(
    sub: str,
    metric: str,
    b: float | None,
    c: float | None,
    tolerance: float,
    lag_floor: float = LAG_FLOOR_S,
    phase_floor: float = PHASE_FLOOR_S,
) -> Delta:
    higher = metric == "throughput"
    better = "higher" if higher else "lower"
    if b is None or c is None:
        return Delta(sub, metric, b, c, better, None, False)
    if metric == "resets":  # points of rounds reset
        change = (c - b) / 100.0
        return Delta(sub, metric, b, c, better, round(change, 4), change > tolerance)
    worse = (b - c) if higher else (c - b)
    floor = (
        LAG_FLOOR_S if metric.startswith("lag_") else PHASE_FLOOR_S if metric.endswith("_seconds") else 0.0
    )
    change = worse / b if b else (float("inf") if worse > 0 else 0.0)
    return Delta(sub, metric, b, c, better, round(change, 4), worse > floor and change > tolerance)


def compare(
    baseline: str | Path,
    candidate: str | Path,
    tolerance: float = 0.10,
    *,
    lag_floor: float = LAG_FLOOR_S,
    phase_floor: float = PHASE_FLOOR_S,
) -> Comparison:
    """The candidate against the baseline, every figure both have; differences under a floor
    (seconds) never regress."""
    bf, bdoc = report_of(baseline)
    cf, cdoc = report_of(candidate)
    bfig, cfig = figures(bdoc), figures(cdoc)
    missing = sorted(set(bfig) - set(cfig))
    if missing:
        raise InputError(
            f"{cf}: no subscription {', '.join(missing)} (the baseline has it): not the same run"
        )
    deltas = [
        _delta(sub, metric, value, cfig[sub].get(metric), tolerance, lag_floor, phase_floor)
        for sub, fig in bfig.items()
        for metric, value in fig.items()
    ]
    return Comparison(bf, cf, tolerance, tuple(deltas))


def tolerance_of(text: str) -> float:
    """``10%`` or ``0.1``."""
    t = text.strip()
    try:
        v = float(t[:-1]) / 100.0 if t.endswith("%") else float(t)
    except ValueError:
        raise InputError(f"--tolerance: {text!r} is not a share (10% or 0.1)") from None
    if v < 0:
        raise InputError(f"--tolerance: {text!r} is below 0")
    return v


def table_lines(c: Comparison, shown: Sequence[Delta] | None = None) -> list[str]:
    """The comparison as plain text lines (a table)."""
    rows = [
        d
        for d in (shown if shown is not None else c.deltas)
        if d.baseline is not None or d.candidate is not None
    ]
    head = f"{'subscription':<14} {'metric':<16} {'baseline':>12} {'candidate':>12} {'worse by':>9}  verdict"
    out = [head, "-" * len(head)]
    for d in rows:
        ch = "-" if d.change is None else ("+inf" if d.change == float("inf") else f"{d.change * 100:+.1f}%")
        if d.metric == "resets" and d.change is not None:
            ch = f"{d.change * 100:+.1f}pt"
        verdict = "REGRESSED" if d.regressed else "ok"
        out.append(
            f"{d.subscription:<14} {d.metric:<16} {_fmt(d.baseline):>12} {_fmt(d.candidate):>12} {ch:>9}  {verdict}"
        )
    return out


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:,.4g}"
