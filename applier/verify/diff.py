"""Diff the subscriber against the oracle and explain every difference.

A difference is missing (the oracle has the key, the target not), extra (the reverse) or
different (both, with other values). Each shown difference comes with the commands that
touched its key: lsn, transaction, stream, round and outcome. The verdict has three values:
converged, diverged, or unknown when the check itself failed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

CONVERGED, DIVERGED, UNKNOWN = "converged", "diverged", "unknown"


@dataclass
class Verdict:
    verdict: str
    counts: dict[str, int] = field(default_factory=dict)
    divergent: list[dict[str, Any]] = field(default_factory=list)
    rows_expected: int = 0
    rows_found: int = 0
    reason: str | None = None

    @property
    def divergent_rows(self) -> int:
        return sum(self.counts.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "counts": self.counts,
            "divergent_rows": self.divergent_rows,
            "rows_expected": self.rows_expected,
            "rows_found": self.rows_found,
            "reason": self.reason,
            "divergent": self.divergent,
        }


def diff(expected: DataFrame, found: DataFrame) -> DataFrame:
    """(article, key, kind, expected, found) for every divergent key."""
    e = expected.select("article", "key", F.col("image").alias("expected"))
    f = found.select("article", "key", F.col("image").alias("found"))
    j = e.join(f, ["article", "key"], "full_outer")
    kind = (
        F.when(F.col("found").isNull(), F.lit("missing"))
        .when(F.col("expected").isNull(), F.lit("extra"))
        .otherwise(F.lit("different"))
    )
    return j.where(
        F.col("found").isNull() | F.col("expected").isNull() | (F.col("found") != F.col("expected"))
    ).withColumn("kind", kind)


def _columns_differing(expected: str | None, found: str | None) -> list[str]:
    if not expected or not found:
        return []
    a, b = json.loads(expected), json.loads(found)
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def verify(
    expected: DataFrame,
    found: DataFrame,
    changes: DataFrame,
    events: DataFrame | None,
    show: int = 20,
    history: int = 12,
) -> Verdict:
    d = diff(expected, found).persist()
    try:
        counts = {r["kind"]: int(r["count"]) for r in d.groupBy("kind").count().collect()}
        counts = {k: counts.get(k, 0) for k in ("missing", "extra", "different")}
        n_expected = expected.count()
        n_found = found.count()
        if not any(counts.values()):
            return Verdict(CONVERGED, counts, [], n_expected, n_found)
        shown = d.orderBy("article", "key").limit(show).collect()
        keys = [(r["article"], r["key"]) for r in shown]
        explained = explain(keys, changes, events, history)
        out = []
        for r in shown:
            out.append(
                {
                    "article": r["article"],
                    "key": json.loads(r["key"]),
                    "kind": r["kind"],
                    "expected": json.loads(r["expected"]) if r["expected"] else None,
                    "found": json.loads(r["found"]) if r["found"] else None,
                    "columns": _columns_differing(r["expected"], r["found"]),
                    "commands": explained.get((r["article"], r["key"]), []),
                }
            )
        return Verdict(DIVERGED, counts, out, n_expected, n_found)
    finally:
        d.unpersist()


def explain(
    keys: list[tuple[str, str]], changes: DataFrame, events: DataFrame | None, history: int
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The commands that touched each key, oldest first, with where and how they were applied."""
    if not keys:
        return {}
    spark = changes.sparkSession
    wanted = spark.createDataFrame(keys, "article string, key string")
    touched = (
        changes.join(wanted.withColumnRenamed("key", "k"), "article")
        .where((F.col("key_before") == F.col("k")) | (F.col("key_after") == F.col("k")))
        .select("article", "k", "lsn", "xact_seqno", "op", "key_before", "key_after", "changed")
    )
    if events is not None:
        ev = (
            events.where("kind = 'command'")
            .groupBy("lsn")
            .agg(
                F.first("stream").alias("stream"),
                F.first("round").alias("round"),
                F.collect_list(F.struct("outcome", "class", "code")).alias("outcomes"),
            )
        )
        touched = touched.join(ev, "lsn", "left")
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in touched.orderBy("lsn").collect():
        d = r.asDict(recursive=True)
        item = {
            "lsn": d["lsn"],
            "xact_seqno": d["xact_seqno"],
            "op": d["op"],
            "key_before": json.loads(d["key_before"]) if d["key_before"] else None,
            "key_after": json.loads(d["key_after"]) if d["key_after"] else None,
            "changed": d["changed"],
        }
        if events is not None:
            item["stream"] = d.get("stream")
            item["round"] = d.get("round")
            item["outcome"] = " -> ".join(
                o["outcome"] + (f" ({o['class']})" if o["class"] else "") for o in (d.get("outcomes") or [])
            )
        out.setdefault((d["article"], d["k"]), []).append(item)
    return {k: v[-history:] for k, v in out.items()}
