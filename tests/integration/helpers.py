"""Helpers for integration tests: configs, change files, runs and queries."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from applier.config import parse_config


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


def key_update(
    lsn: int, xact: int, article: str, old: int, new: int, v: str = "x", n: int = 0
) -> dict[str, Any]:
    return {
        "lsn": lsn,
        "xact_seqno": xact,
        "command_id": 1,
        "article": article,
        "op": "U",
        "before": {"id": old, "v": v, "n": n},
        "after": {"id": new, "v": v, "n": n},
    }


def write_jsonl(path: Path, records: Iterable[dict[str, Any] | str]) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path


def rows(target, sql: str, *params: Any) -> list[tuple[Any, ...]]:  # type: ignore[no-untyped-def]
    import pyodbc

    conn = pyodbc.connect(target.connection_string, autocommit=True)
    try:
        return [tuple(r) for r in conn.cursor().execute(sql, *params).fetchall()]
    finally:
        conn.close()


def table_ref(target, table: str, schema: str = "dbo") -> str:  # type: ignore[no-untyped-def]
    """schema.table quoted by the target's own dialect."""
    return target.dialect.qualified(schema, table)


def table_exists(target, schema: str, table: str) -> bool:  # type: ignore[no-untyped-def]
    return bool(
        rows(
            target,
            "SELECT 1 FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
            schema,
            table,
        )
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
