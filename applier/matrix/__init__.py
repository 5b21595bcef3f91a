"""The hazard matrix: workloads x partition strategies x apply models x error policies."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from applier.api import Endpoint, Target
from applier.config import Config, ErrorPolicy, Workload

# The agent keeps a round uncommitted until its barrier, so a writeset dependency inside a
# round could never be seen committed: writeset runs with the independent model only.
UNSUPPORTED = {
    ("writeset", "agent"): "writeset waits for committed dependencies; the agent commits per round"
}


@dataclass(frozen=True)
class Cell:
    workload: str
    partition: str
    model: str
    policy: str


def cells(
    workloads: Sequence[str], partitions: Sequence[str], models: Sequence[str], policies: Sequence[str]
) -> list[Cell]:
    return [Cell(*c) for c in itertools.product(workloads, partitions, models, policies)]


def row_of(cell: Cell, report: dict[str, Any] | None, why: str | None = None) -> dict[str, Any]:
    base = dataclasses.asdict(cell)
    if report is None:
        return {**base, "verdict": "n/a", "reason": why}
    return {
        **base,
        "conflicts": {k: v for k, v in report["conflicts"].items() if v},
        "resets": report["resets"],
        "deferred": report.get("deferred", 0),
        "skipped": report["skipped"],
        "verdict": report["verdict"],
        "divergent_rows": report["divergent_rows"],
        "rows_lost_to_skips": (report.get("skips") or {}).get("rows_lost", 0),
        "inverted_pairs": sum(1 for d in report["divergent"] if d.get("inverted")),
        "commands": report["commands"],
        "throughput_cmds_per_s": report["throughput_cmds_per_s"],
        "reason": report.get("reason"),
        "divergence": dict(report.get("divergence") or {}),
        "divergent": list(report["divergent"][:5]),  # the first keys with their blame
        "seconds": round(sum((report.get("phases_seconds") or {}).values()), 3),
    }


def run_matrix(
    base: Config,
    target: Target | Endpoint,
    grid: Sequence[Cell],
    *,
    streams: int,
    transactions: int,
    seed: int,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    spark: SparkSession | None = None,
) -> list[dict[str, Any]]:
    """Every cell as one run through the public API, one subscription name each."""
    import applier
    from applier.report.json import subscription_report

    rows = []
    for i, cell in enumerate(grid):
        why = UNSUPPORTED.get((cell.partition, cell.model))
        if why:
            row = row_of(cell, None, why)
        else:
            cfg = base.replace(
                workload=Workload(kind=cell.workload, transactions=transactions, initial_rows=0, seed=seed),
                run=dataclasses.replace(
                    base.run,
                    subscription=f"matrix-{i}",
                    streams=streams,
                    partition=cell.partition,
                    model=cell.model,
                    error_policy=ErrorPolicy.parse(cell.policy),
                ),
            )
            result = applier.run(cfg, target, spark=spark)
            row = row_of(cell, subscription_report(result.subscriptions[0], result.settings))
        rows.append(row)
        if on_row:
            on_row(row)
    return rows
