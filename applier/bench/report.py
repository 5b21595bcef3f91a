"""The benchmark's figures: rates, ratios, goals, the JSON document and the console table.

Pure functions over plain values (no Spark, no database): the unit tests check them.
Every goal is a ratio of two figures measured in the same run (absolute times are noisy
on shared machines).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

SYNCS = ("on", "off")


@dataclass(frozen=True)
class Measure:
    """commands applied in seconds (wall time)."""

    commands: int
    seconds: float

    @property
    def rate(self) -> float | None:
        return self.commands / self.seconds if self.seconds > 0 else None


@dataclass
class PerN:
    """The figures of one stream count N under one synchronous_commit setting."""

    ceiling: Measure | None = None
    apply: Measure | None = None  # applier with procedure calls (the ceiling's calls)
    end_to_end: Measure | None = None
    phases: dict[str, float] = field(default_factory=dict)
    verdict: str | None = None
    # applier with run.set_apply (one set-based statement per run of updates)
    set_apply: Measure | None = None
    set_end_to_end: Measure | None = None
    set_phases: dict[str, float] = field(default_factory=dict)
    set_verdict: str | None = None
    memory: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class SyncRun:
    """Everything measured with synchronous_commit = sync at every end."""

    sync: str
    per_n: dict[int, PerN] = field(default_factory=dict)
    native: Measure | None = None
    native_extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Goal:
    name: str
    value: float | None
    threshold: float
    at_least: bool  # value >= threshold (else value <= threshold)
    stretch: bool = False

    @property
    def met(self) -> bool | None:
        if self.value is None:
            return None
        return self.value >= self.threshold if self.at_least else self.value <= self.threshold

    @property
    def miss(self) -> float | None:
        """How far from the threshold, as a fraction of it (0 when met)."""
        if self.value is None or self.met:
            return None if self.value is None else 0.0
        return abs(self.threshold - self.value) / self.threshold


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def ratios(run: SyncRun, n: int) -> dict[str, float | None]:
    """Ratios at N = n: apply vs ceiling and vs native (rates), end to end vs apply (times);
    the same three for set-based apply, prefixed ``set_``."""
    p = run.per_n.get(n) or PerN()
    native = run.native.rate if run.native else None
    ceiling = p.ceiling.rate if p.ceiling else None
    out: dict[str, float | None] = {}
    for prefix, apply, e2e in (("", p.apply, p.end_to_end), ("set_", p.set_apply, p.set_end_to_end)):
        rate = apply.rate if apply else None
        out[f"{prefix}apply_vs_ceiling"] = ratio(rate, ceiling)
        out[f"{prefix}apply_vs_native"] = ratio(rate, native)
        out[f"{prefix}end_to_end_vs_apply"] = ratio(
            e2e.seconds if e2e else None, apply.seconds if apply else None
        )
        # the fixed cost: everything but the apply, in seconds (a warm run's)
        out[f"{prefix}fixed_cost_seconds"] = e2e.seconds - apply.seconds if e2e and apply else None
        out[f"{prefix}meeting_wait_share"] = meeting_wait_share(p.extra.get(f"{prefix}stream_stats") or [])
    return out


FIXED_COST_GOAL = 8.0  # seconds of a warm 1M-command run that are not its apply (issue 32)


def goals(runs: Mapping[str, SyncRun], n: int = 4, memory_growth: float | None = None) -> list[Goal]:
    """The issue's goals, evaluated on this run's figures (None where not measured)."""
    on = ratios(runs["on"], n) if "on" in runs else {}
    off = ratios(runs["off"], n) if "off" in runs else {}
    out = []
    for prefix, mode in (("", "calls"), ("set_", "set-based")):
        if prefix and on.get("set_apply_vs_ceiling") is None and off.get("set_apply_vs_native") is None:
            continue  # set-based apply not measured
        # issue 16's thresholds: procedure calls within 10% of the ceiling; issue 32's: set-based
        # apply at least 1.3 x native logical apply's rate with synchronous_commit on and off,
        # and at most FIXED_COST_GOAL seconds of everything but the apply, both modes warm
        ceiling_goal = 0.8 if prefix else 0.9
        native_goal = 1.3 if prefix else 1.0
        out += [
            Goal(
                f"apply ({mode}) >= {ceiling_goal} x ceiling at N={n} (sync on)",
                on.get(f"{prefix}apply_vs_ceiling"),
                ceiling_goal,
                True,
            ),
            Goal(
                f"apply ({mode}) >= {native_goal} x native logical apply at N={n} (sync on)",
                on.get(f"{prefix}apply_vs_native"),
                native_goal,
                True,
            ),
            Goal(
                f"apply ({mode}) >= {native_goal} x native logical apply at N={n} (sync off)",
                off.get(f"{prefix}apply_vs_native"),
                native_goal,
                True,
                stretch=not prefix,
            ),
            Goal(
                f"fixed cost ({mode}, warm) <= {FIXED_COST_GOAL:g} s at N={n} (sync on)",
                on.get(f"{prefix}fixed_cost_seconds"),
                FIXED_COST_GOAL,
                False,
            ),
        ]
    if memory_growth is not None:
        out.append(Goal("driver memory growth 1M -> 10M <= 20%", memory_growth, 0.2, False))
    return out


def _measure(m: Measure | None) -> dict[str, Any] | None:
    if m is None:
        return None
    r = m.rate
    return {
        "commands": m.commands,
        "seconds": round(m.seconds, 3),
        "commands_per_s": None if r is None else round(r, 1),
    }


def _round(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(x, nd)


def report_json(meta: Mapping[str, Any], runs: Mapping[str, SyncRun], n_goal: int = 4) -> dict[str, Any]:
    """The JSON document: settings, per sync setting the native figure and per N the
    ceiling / apply / end-to-end figures with their ratios, then the goals."""
    doc: dict[str, Any] = {"bench": dict(meta), "runs": {}, "goals": []}
    for sync, run in runs.items():
        per_n = {}
        for n in sorted(run.per_n):
            p = run.per_n[n]
            per_n[str(n)] = {
                "ceiling": _measure(p.ceiling),
                "applier_apply": _measure(p.apply),
                "applier_end_to_end": _measure(p.end_to_end),
                "applier_set_apply": _measure(p.set_apply),
                "applier_set_end_to_end": _measure(p.set_end_to_end),
                "ratios": {k: _round(v) for k, v in ratios(run, n).items()},
                "phases_seconds": {k: round(v, 3) for k, v in p.phases.items()},
                "set_phases_seconds": {k: round(v, 3) for k, v in p.set_phases.items()},
                "verdict": p.verdict,
                "set_verdict": p.set_verdict,
                "memory_mib": p.memory,
                **({"extra": p.extra} if p.extra else {}),
            }
        doc["runs"][sync] = {
            "synchronous_commit": sync,
            "native_logical": _measure(run.native),
            "native_extra": run.native_extra,
            "per_n": per_n,
        }
    doc["goals"] = [{**asdict(g), "met": g.met, "miss_fraction": _round(g.miss)} for g in goals(runs, n_goal)]
    return doc


def _fmt_rate(m: Mapping[str, Any] | None) -> str:
    if not m or m.get("commands_per_s") is None:
        return "-"
    return f"{m['commands_per_s'] / 1000:.1f}k"


def _fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def meeting_wait_share(stream_stats: Sequence[Mapping[str, Any]]) -> float | None:
    """The share of the apply the streams spent waiting for each other at the round meetings
    (the agent's gather before a round's commit and its barrier after it): their waits over
    their times, summed over the streams (None: no stream recorded both)."""
    timed = [s for s in stream_stats if s.get("seconds") and s.get("barrier_wait_seconds") is not None]
    total = sum(float(s["seconds"]) for s in timed)
    return sum(float(s["barrier_wait_seconds"]) for s in timed) / total if total > 0 else None


# The sides of a command's CPU, as the bench records them (µs a command), and their names here.
_CEILING_SIDES = (("client", "client"), ("server", "server"))
_APPLIER_SIDES = (("python_workers", "workers"), ("jvm", "JVM"), ("server", "server"))


def _cpu(figures: Mapping[str, Any] | None, sides: Sequence[tuple[str, str]]) -> str | None:
    """'37.4 us (workers 11.3 + JVM 1.3 + server 24.8)', or None when a side is missing."""
    if not figures or any(figures.get(k) is None for k, _ in sides):
        return None
    total = sum(float(figures[k]) for k, _ in sides)
    return f"{total:.1f} us (" + " + ".join(f"{name} {float(figures[k]):.1f}" for k, name in sides) + ")"


def _tasks(stats: Sequence[Mapping[str, Any]]) -> str:
    """'; its stream tasks 10.4 us, 1.6 of it taking their shares', from the streams' own
    figures ('' when a stream lacks them)."""
    commands = sum(int(st.get("commands") or 0) for st in stats)
    if not commands or any(
        st.get("cpu_seconds") is None or st.get("take_cpu_seconds") is None for st in stats
    ):
        return ""
    cpu = sum(float(st["cpu_seconds"]) for st in stats) * 1e6 / commands
    take = sum(float(st["take_cpu_seconds"]) for st in stats) * 1e6 / commands
    return f"; its stream tasks {cpu:.1f} us, {take:.1f} of it taking their shares"


def cost_lines(doc: Mapping[str, Any]) -> list[str]:
    """Where an apply's time goes beside the ceiling's, one line per sync, N and mode: the CPU a
    command cost each side (on a machine whose cores are all busy, apply/ceiling is about the
    ceiling's CPU a command over applier's) and the streams' share of the apply spent waiting at
    the round meetings, which the ceiling does not hold."""
    lines = []
    for sync, run in doc["runs"].items():
        for n, p in run["per_n"].items():
            extra = p.get("extra") or {}
            ceiling = _cpu(extra.get("ceiling_cpu_us_per_command"), _CEILING_SIDES)
            for mode, x in (("calls", ""), ("set-based", "set_")):
                mine = _cpu(extra.get(f"{x}apply_cpu_us_per_command"), _APPLIER_SIDES)
                if mine is None:
                    continue
                stats = extra.get(f"{x}stream_stats") or []
                share = p["ratios"].get(f"{x}meeting_wait_share")  # ratios(): from the same stats
                waited = (
                    ""
                    if share is None
                    else f"; its streams waited {share:.0%} of the apply at the round meetings"
                )
                base = f"ceiling {ceiling}, " if ceiling else ""
                lines.append(f"CPU a command, sync {sync}, N={n}: {base}{mode} {mine}{_tasks(stats)}{waited}")
    return lines


def table_lines(doc: Mapping[str, Any]) -> list[str]:
    """The side-by-side table: commands/s per N, with the ratios, one block per sync setting."""
    lines = []
    head = (
        f"{'sync':<5}{'N':>3}  {'ceiling':>9} {'apply':>9} {'end2end':>9} {'native':>9}"
        f"  {'apply/ceil':>10} {'apply/native':>12} {'e2e/apply(t)':>12} {'fixed s':>8}"
    )
    set_rows = []
    lines.append(head)
    for sync, run in doc["runs"].items():
        native = _fmt_rate(run["native_logical"])
        for n, p in run["per_n"].items():
            r = p["ratios"]
            lines.append(
                f"{sync:<5}{n:>3}  {_fmt_rate(p['ceiling']):>9} {_fmt_rate(p['applier_apply']):>9} "
                f"{_fmt_rate(p['applier_end_to_end']):>9} {native:>9}  {_fmt_ratio(r['apply_vs_ceiling']):>10} "
                f"{_fmt_ratio(r['apply_vs_native']):>12} {_fmt_ratio(r['end_to_end_vs_apply']):>12}"
                f" {_fmt_ratio(r.get('fixed_cost_seconds')):>8}"
            )
            if p.get("applier_set_apply"):
                set_rows.append(
                    f"{sync:<5}{n:>3}  {_fmt_rate(p['ceiling']):>9} {_fmt_rate(p['applier_set_apply']):>9} "
                    f"{_fmt_rate(p['applier_set_end_to_end']):>9} {native:>9}  "
                    f"{_fmt_ratio(r['set_apply_vs_ceiling']):>10} "
                    f"{_fmt_ratio(r['set_apply_vs_native']):>12} {_fmt_ratio(r['set_end_to_end_vs_apply']):>12}"
                    f" {_fmt_ratio(r.get('set_fixed_cost_seconds')):>8}"
                )
        if not run["per_n"]:
            lines.append(f"{sync:<5}{'-':>3}  {'-':>9} {'-':>9} {'-':>9} {native:>9}")
    if set_rows:
        lines.append("set-based apply (run.set_apply):")
        lines.extend(set_rows)
    for g in doc["goals"]:
        state = {True: "met", False: "MISSED", None: "not measured"}[g["met"]]
        value = "-" if g["value"] is None else f"{g['value']:.2f}"
        miss = f" (short by {g['miss_fraction']:.0%})" if g["met"] is False else ""
        lines.append(f"goal{' (stretch)' if g['stretch'] else ''}: {g['name']}: {value} {state}{miss}")
    return lines + cost_lines(doc)
