"""Diff the subscriber against the oracle and explain every difference.

A difference is missing (the oracle has the key, the target not), extra (the reverse) or
different (both, with other values). Each shown difference comes with the commands that
touched its key: lsn, transaction, stream, round and outcome. The verdict has three values:
converged, diverged, or unknown when the check itself failed.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from applier.results import Check, Divergence, Verdict
from applier.verify.outcomes import outcomes_of


def diff_all(expected: DataFrame, found: DataFrame) -> DataFrame:
    """(article, key, expected, found, kind, nfound) for every key of either side; kind is NULL
    where both sides hold the same row; nfound is 1 where the subscriber holds the row."""
    e = expected.select("article", "key", F.col("image").alias("expected"))
    f = found.select("article", "key", F.col("image").alias("found"))
    kind = (
        F.when(F.col("found").isNull(), F.lit("missing"))
        .when(F.col("expected").isNull(), F.lit("extra"))
        .when(F.col("found") != F.col("expected"), F.lit("different"))
    )
    nfound = F.when(F.col("found").isNotNull(), 1).otherwise(0)
    return e.join(f, ["article", "key"], "full_outer").withColumn("kind", kind).withColumn("nfound", nfound)


def diff(expected: DataFrame, found: DataFrame) -> DataFrame:
    """(article, key, expected, found, kind) for every divergent key."""
    return diff_all(expected, found).where(F.col("kind").isNotNull())


def _columns_differing(expected: str | None, found: str | None) -> list[str]:
    if not expected or not found:
        return []
    a, b = json.loads(expected), json.loads(found)
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def verify(
    expected: DataFrame | Callable[[], DataFrame],
    found: DataFrame,
    changes: DataFrame,
    events: DataFrame | None,
    show: int = 20,
    history: int = 12,
    digests: DataFrame | None = None,
    skipped: int | None = None,
) -> Check:
    """``digests``: both sides compared with each image as its digest (``oracle.digest_diff``:
    article, key, expected, found, kind, nfound); the counts then come from it, the images
    only for a divergence.
    ``expected`` may be a function making it: with digests, it is made only then (building
    the oracle's plan is ~0.4 s of the driver's time on a warm session).
    ``skipped``: how many commands the error policy skipped, where the caller knows (the
    events' digest): none, and their cost is not looked for (a job over the events)."""
    # One job counts both sides and every kind of difference; only a divergence pays for the
    # explanation (and then the sides are cached: they are read again).
    kinds = ("missing", "extra", "different")
    if digests is None and callable(expected):
        expected = expected()
    compared = digests if digests is not None else diff_all(expected, found)  # type: ignore[arg-type]
    # SQL text: one JVM call an expression (the Column API took ~100 calls here)
    per_article = (
        compared.groupBy("article")
        .agg(
            F.expr("count(expected) AS expected"),
            F.expr("sum(nfound) AS found"),
            *[F.expr(f"count(CASE WHEN kind = '{k}' THEN 1 END) AS {k}") for k in kinds],
        )
        .collect()
    )
    by_article = {
        r["article"]: {k: int(r[k]) for k in ("expected", "found", *kinds)}
        for r in sorted(per_article, key=lambda r: r["article"])
    }
    counts = {k: sum(a[k] for a in by_article.values()) for k in kinds}
    n_expected = sum(a["expected"] for a in by_article.values())
    n_found = sum(a["found"] for a in by_article.values())
    if not any(counts.values()):
        return Check(Verdict.CONVERGED, counts, (), n_expected, n_found, by_article=by_article)
    if digests is not None:
        # The digests name the divergent keys: the images are made for the shown ones only
        # (one job), not as a whole oracle joined with the whole subscriber (five jobs).
        divergent = digests.where("kind IS NOT NULL").select("article", "key", "kind")
        first = divergent.orderBy("article", "key").limit(show).collect()
        images = _images([(r["article"], r["key"]) for r in first], expected, found)
        shown = [
            {
                "article": r["article"],
                "key": r["key"],
                "kind": r["kind"],
                "expected": images.get(("e", r["article"], r["key"])),
                "found": images.get(("f", r["article"], r["key"])),
            }
            for r in first
        ]
        return _diverged(
            shown, divergent, changes, events, history, counts, n_expected, n_found, by_article, skipped
        )
    if callable(expected):
        expected = expected()
    expected = expected.persist()
    found = found.persist()
    d = diff(expected, found).persist()
    try:
        shown = [r.asDict() for r in d.orderBy("article", "key").limit(show).collect()]
        return _diverged(shown, d, changes, events, history, counts, n_expected, n_found, by_article, skipped)
    finally:
        # Never mask what is unwinding (a signal has stopped Spark: these calls would fail).
        with contextlib.suppress(Exception):
            d.unpersist()
            expected.unpersist()
            found.unpersist()


def _images(
    keys: list[tuple[str, str]], expected: DataFrame | Callable[[], DataFrame], found: DataFrame
) -> dict[tuple[str, str, str], str]:
    """The oracle's image ("e") and the subscriber's ("f") of each of ``keys``, in one job."""
    if not keys:
        return {}
    oracle = expected() if callable(expected) else expected
    cond = F.lit(False)
    for article, key in keys:
        cond = cond | ((F.col("article") == article) & (F.col("key") == key))
    both = (
        oracle.where(cond)
        .select(F.lit("e").alias("side"), "article", "key", "image")
        .unionByName(found.where(cond).select(F.lit("f").alias("side"), "article", "key", "image"))
    )
    return {(r["side"], r["article"], r["key"]): r["image"] for r in both.collect()}


def _diverged(
    shown: list[dict[str, Any]],
    divergent: DataFrame,
    changes: DataFrame,
    events: DataFrame | None,
    history: int,
    counts: dict[str, int],
    n_expected: int,
    n_found: int,
    by_article: dict[str, dict[str, int]],
    skipped: int | None = None,
) -> Check:
    """The DIVERGED check: the ``shown`` differences (article, key, kind, expected, found)
    explained by the commands that touched their keys; ``divergent``: every divergent key
    (article, key, kind), for the skipped commands' cost."""
    keys = [(r["article"], r["key"]) for r in shown]
    explained = explain(keys, changes, events, history)
    out = []
    for r in shown:
        commands = explained.get((r["article"], r["key"]), [])
        out.append(
            Divergence(
                article=r["article"],
                key=tuple(json.loads(r["key"])),
                kind=r["kind"],
                expected=json.loads(r["expected"]) if r["expected"] else None,
                found=json.loads(r["found"]) if r["found"] else None,
                columns=tuple(_columns_differing(r["expected"], r["found"])),
                commands=tuple(commands),
                inverted=inverted_pair(commands),
                skipped=tuple(c["lsn"] for c in commands if "skipped" in (c.get("outcome") or "")),
            )
        )
    if events is None:
        skips: dict[str, Any] = {}
    elif skipped == 0:
        skips = {"skipped": 0, "rows_lost": 0, "by_skip": []}
    else:
        skips = skip_costs(divergent, changes, events)
    return Check(
        Verdict.DIVERGED, counts, tuple(out), n_expected, n_found, skips=skips, by_article=by_article
    )


def _effective_times(outcomes: list[dict[str, Any]]) -> tuple[float | None, float | None, str | None]:
    """(executed, committed, outcome) of the attempt that counted: the last applied, reapplied
    or skipped one (a skipped command executed and never committed)."""
    last: tuple[float | None, float | None, str | None] = (None, None, None)
    for o in sorted(outcomes, key=lambda o: o.get("t_exec") or 0.0):
        if o["outcome"] in ("applied", "reapplied"):
            last = (o.get("t_exec"), o.get("t_commit"), o["outcome"])
        elif o["outcome"] == "skipped":
            last = (o.get("t_exec"), None, "skipped")
    return last


def inverted_pair(commands: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first pair of commands on a key, consecutive in commit order, applied out of order:
    the later one executed (on another stream) before the earlier one had committed."""
    for a, b in zip(commands, commands[1:], strict=False):
        ex_b, ca = b.get("t_exec"), a.get("t_commit")
        if ex_b is None or a.get("t_exec") is None:
            continue
        if (ca is None or ca > ex_b) and a.get("stream") != b.get("stream"):
            return {
                "first": a["lsn"],
                "second": b["lsn"],
                "why": f"lsn {b['lsn']} (xact {b['xact_seqno']}) ran on stream {b.get('stream')} before lsn "
                f"{a['lsn']} (xact {a['xact_seqno']}) "
                + ("committed" if ca is not None else "took effect")
                + f" on stream {a.get('stream')}",
            }
    return None


def skip_costs(d: DataFrame, changes: DataFrame, events: DataFrame) -> dict[str, Any]:
    """Which divergent rows the skipped commands caused: every divergent key that a skipped
    command touched (its before or after key), counted over the whole diff."""
    skipped = events.where("kind = 'command' AND outcome = 'skipped'").select("lsn").distinct()
    if skipped.limit(1).count() == 0:
        return {"skipped": 0, "rows_lost": 0, "by_skip": []}
    cmds = changes.join(skipped, "lsn").select("lsn", "article", "key_before", "key_after")
    keys = (
        cmds.select("lsn", "article", F.col("key_before").alias("key"))
        .unionByName(cmds.select("lsn", "article", F.col("key_after").alias("key")))
        .where(F.col("key").isNotNull())
    )
    hit = keys.join(d.select("article", "key", "kind"), ["article", "key"])
    rows_lost = hit.select("article", "key").distinct().count()
    by_skip = (
        hit.groupBy("lsn")
        .agg(F.collect_list(F.struct("article", "key", "kind")).alias("rows"))
        .orderBy("lsn")
        .limit(20)
    )
    return {
        "skipped": skipped.count(),
        "rows_lost": rows_lost,
        "by_skip": [
            {
                "lsn": r["lsn"],
                "rows": [
                    {"article": x["article"], "key": json.loads(x["key"]), "kind": x["kind"]}
                    for x in r["rows"]
                ],
            }
            for r in by_skip.collect()
        ],
    }


def _touching(
    changes: DataFrame, keys: list[tuple[str, str]], events: DataFrame | None
) -> list[dict[str, Any]]:
    """Commands whose before or after key is one of keys (role ``d``), and, one hop back, the
    commands whose after key is the before key of one of those where it is another key (role
    ``p``, its ``k`` that key), with outcomes. Three Spark jobs that only filter (the keys are
    few: as literals, where joining them made a broadcast, a job of its own, per join)."""
    cols = ["article", "lsn", "xact_seqno", "op", "key_before", "key_after", "changed"]
    cols += [c for c in ("stream", "round") if c in changes.columns]

    def having(wanted: dict[str, set[str]], sides: tuple[str, ...]) -> list[Any]:
        cond = F.lit(False)
        for article, ks in sorted(wanted.items()):
            hit = F.lit(False)
            for side in sides:
                hit = hit | F.col(side).isin(sorted(ks))
            cond = cond | ((F.col("article") == article) & hit)
        return changes.where(cond).select(*cols).collect()

    wanted: dict[str, set[str]] = {}
    for article, k in keys:
        wanted.setdefault(article, set()).add(k)
    rows: list[dict[str, Any]] = []
    for r in having(wanted, ("key_before", "key_after")):
        d = r.asDict()
        for k in sorted(wanted[d["article"]]):
            if k in (d["key_before"], d["key_after"]):
                rows.append({**d, "k": k, "role": "d"})
    hops: dict[str, set[str]] = {}
    for d in rows:
        if d["key_before"] is not None and d["key_before"] != d["k"]:
            hops.setdefault(d["article"], set()).add(d["key_before"])
    for r in having(hops, ("key_after",)) if hops else []:
        d = r.asDict()
        rows.append({**d, "k": d["key_after"], "role": "p"})
    outcomes = (
        outcomes_of(events, [(d["lsn"], d.get("stream"), d.get("round")) for d in rows])
        if events is not None
        else {}
    )
    rank = {
        "conflict": 0,
        "rolled_back": 1,
        "deferred": 1,
        "skipped": 2,
        "applied": 2,
        "reapplied": 3,
        "failed": 3,
        "not_applied": 4,
        "resumed": -1,
    }
    out = []
    for d in sorted(rows, key=lambda d: d["lsn"]):
        item: dict[str, Any] = {
            "role": d["role"],
            "article": d["article"],
            "k": d["k"],
            "lsn": d["lsn"],
            "xact_seqno": d["xact_seqno"],
            "op": d["op"],
            "key_before": json.loads(d["key_before"]) if d["key_before"] else None,
            "key_after": json.loads(d["key_after"]) if d["key_after"] else None,
            "_kb": d["key_before"],
            "_ka": d["key_after"],
            "changed": d["changed"],
            "stream": d.get("stream"),
            "round": d.get("round"),
        }
        if events is not None:
            ranked = sorted(outcomes.get(d["lsn"], []), key=lambda o: rank.get(o["outcome"], 5))
            item["outcome"] = " -> ".join(
                o["outcome"] + (f" ({o['class']})" if o["class"] else "") for o in ranked
            )
            item["t_exec"], item["t_commit"], _ = _effective_times(ranked)
        out.append(item)
    return out


def explain(
    keys: list[tuple[str, str]], changes: DataFrame, events: DataFrame | None, history: int
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The commands that touched each key, oldest first, with where and how they were applied;
    and, one hop back, the command that produced the row each of them changed (a key update's
    predecessor writes its before key: without it, a lost chain link has no partner to blame)."""
    if not keys:
        return {}
    touched = _touching(changes, keys, events)
    direct = [c for c in touched if c["role"] == "d"]
    producers = [c for c in touched if c["role"] == "p"]
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for c in direct:
        out.setdefault((c["article"], c["k"]), []).append(c)
    for key, cmds in out.items():
        extra = []
        for c in cmds:
            if c["_kb"] and c["_kb"] != key[1]:
                before = [p for p in producers if p["k"] == c["_kb"] and p["lsn"] < c["lsn"]]
                if before:
                    extra.append({**before[-1], "via": f"produced key {c['_kb']}"})
        seen = {c["lsn"] for c in cmds}
        merged = sorted(cmds + [e for e in extra if e["lsn"] not in seen], key=lambda c: c["lsn"])
        out[key] = [
            {k: v for k, v in c.items() if not k.startswith("_") and k not in ("k", "role")} for c in merged
        ][-history:]
    return out
