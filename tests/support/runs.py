"""Runs through the public API (``applier.run``) as integration tests make them, and the small
config most of them start from."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from applier.config import parse_config
from tests.support.changes import write_jsonl


def config(
    table: str,
    *,
    streams: int = 4,
    batch: int = 100,
    update: str = "SCALL",
    extra_cols: bool = True,
    policy: str = "strict",
    **workload: Any,
):  # type: ignore[no-untyped-def]
    """A config of one article ``dbo.<table>`` (id int key; v nvarchar(40), n int unless
    ``extra_cols`` is False), subscription ``<table>``, and ``workload`` as its [workload]."""
    cols: list[dict[str, Any]] = [{"name": "id", "type": "int", "key": True}]
    if extra_cols:
        cols += [{"name": "v", "type": "nvarchar(40)"}, {"name": "n", "type": "int"}]
    return parse_config(
        {
            "run": {
                "streams": streams,
                "commit_batch_size": batch,
                "subscription": table,
                "error_policy": policy,
            },
            "workload": workload,
            "articles": [{"name": f"dbo.{table}", "columns": cols, "update": update}],
        },
        f"<test {table}>",
    )


def run(spark, cfg, target, **kw: Any):  # type: ignore[no-untyped-def]
    """One run through the public API; the result and its subscriber's JSON report."""
    import applier
    from applier.report.json import subscription_report

    result = applier.run(cfg, target, spark=spark, **kw)
    return result, subscription_report(result.subscriptions[0], result.settings)


def streams_of(spark, cfg, records: Sequence[dict[str, Any]], n: int, tmp: Path) -> list[int]:  # type: ignore[no-untyped-def]
    """The key-hash stream each record goes to at N = n (as the pipeline computes it)."""
    from applier.partition.strategies import partition
    from applier.sources.dataset import read_changes

    f = write_jsonl(tmp / f"probe-{n}.jsonl", records)
    cs = read_changes(spark, cfg, f)
    got = {r["lsn"]: r["stream"] for r in partition(cs.changes, "key-hash", n).collect()}
    return [got[r["lsn"]] for r in records]


def run_subscriptions(spark, pg, cfg, prefix: str, **kw: Any):  # type: ignore[no-untyped-def]
    """A run of cfg's [[subscriptions]] on the session's embedded cluster, each subscriber in a
    database of its own named ``<prefix>_<i>``; the result and every subscriber's endpoint."""
    import dataclasses

    import applier

    subs = tuple(dataclasses.replace(s, database=f"{prefix}_{i}") for i, s in enumerate(cfg.subscriptions))
    cfg = cfg.replace(subscriptions=subs)
    result = applier.run(cfg, pg, spark=spark, **kw)
    return result, {s.name: pg.endpoint(s.database) for s in subs}
