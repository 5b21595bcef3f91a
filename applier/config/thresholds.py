"""Thresholds of a load test: ``lag_p99<2s``, ``resets<=3``, ``throughput>=0.95*rate``.

A threshold names a metric of the run's report, a comparison and a limit; a broken one fails
the run (exit 1), as k6's thresholds do. The limit is a number with an optional unit of time
(``us``, ``ms``, ``s``, ``m``: every time is compared in seconds), or a multiple of the target
rate (``0.95*rate``, ``rate``), for a paced run.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from applier.errors import ConfigError

# metric -> (what it is, unit, needs a paced run)
METRICS: dict[str, tuple[str, str, bool]] = {
    "lag_p50": ("apply lag, 50th percentile", "s", True),
    "lag_p90": ("apply lag, 90th percentile", "s", True),
    "lag_p99": ("apply lag, 99th percentile", "s", True),
    "lag_p999": ("apply lag, 99.9th percentile", "s", True),
    "lag_max": ("apply lag, worst transaction", "s", True),
    "lag_mean": ("apply lag, mean", "s", True),
    "throughput": ("transactions applied per second", "tps", False),
    "commands_per_s": ("commands applied per second", "commands/s", False),
    "resets": ("rounds reset to one stream", "", False),
    "conflicts": ("conflicts, every class", "", False),
    "divergent": ("rows that differ from the publisher", "", False),
    "apply_seconds": ("seconds of the apply phase", "s", False),
}
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "<": operator.lt,
    ">": operator.gt,
}
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "": 1.0}
_FORM = re.compile(
    r"^\s*(?P<metric>[a-z0-9_]+)\s*(?P<op><=|>=|==|<|>)\s*"
    r"(?:(?P<k>[0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?)\s*\*\s*)?(?:(?P<rate>rate)|(?P<num>[0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?)\s*(?P<unit>us|ms|s|m)?)\s*$"
)


@dataclass(frozen=True)
class Threshold:
    text: str
    metric: str
    op: str
    limit: float  # seconds for times; a multiple of the rate where ``of_rate``
    of_rate: bool = False

    @property
    def paced(self) -> bool:
        return METRICS[self.metric][2] or self.of_rate

    def limit_for(self, rate: float | None) -> float | None:
        if not self.of_rate:
            return self.limit
        return None if rate is None else self.limit * rate

    def check(self, metrics: Mapping[str, float | None], rate: float | None) -> dict[str, Any]:
        """This threshold against the run's ``metrics``: held or broken, with the value."""
        value = metrics.get(self.metric)
        limit = self.limit_for(rate)
        out: dict[str, Any] = {"threshold": self.text, "metric": self.metric, "op": self.op, "limit": limit}
        if value is None or limit is None:
            why = "no target rate" if limit is None else f"the run measured no {self.metric}"
            return {**out, "value": None, "held": False, "why": why}
        return {**out, "value": value, "held": bool(_OPS[self.op](value, limit))}


def parse(text: str, where: str = "--threshold") -> Threshold:
    """``text`` as a threshold; a ConfigError naming ``where`` and the known metrics if not."""
    m = _FORM.match(text.lower())
    if m is None:
        raise ConfigError(
            f"{where}: {text!r} is not a threshold (METRIC OP LIMIT, e.g. 'lag_p99<2s', "
            f"'resets<=3', 'throughput>=0.95*rate')"
        )
    metric = m["metric"]
    if metric not in METRICS:
        raise ConfigError(f"{where}: unknown metric {metric!r} in {text!r} ({', '.join(METRICS)})")
    if m["rate"]:
        return Threshold(text, metric, m["op"], float(m["k"] or 1.0), of_rate=True)
    if m["k"]:
        raise ConfigError(f"{where}: {text!r}: only the rate may be multiplied ('0.95*rate')")
    unit = m["unit"] or ""
    if unit and METRICS[metric][1] != "s":
        raise ConfigError(f"{where}: {text!r}: {metric} is not a time; give it without {unit!r}")
    return Threshold(text, metric, m["op"], float(m["num"]) * _UNITS[unit])


def from_table(table: Mapping[str, str], where: str = "[thresholds]") -> tuple[Threshold, ...]:
    """A ``[thresholds]`` table: ``lag_p99 = "<2s"``, a condition per metric."""
    return tuple(parse(f"{metric}{cond}", f"{where} {metric}") for metric, cond in table.items())
