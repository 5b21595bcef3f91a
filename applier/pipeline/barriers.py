"""The barriers of one subscription's stream: which of its events are barriers (planned once,
before the segments), and the apply of each at its place between two segments, with its
watermark; a new run forgets what an earlier run left, a resumed one reads it back.

See :mod:`applier.pipeline.segments` for the segments between them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from applier.apply.barriers import apply_schema_change, apply_statement, call_procedure, schema_change_sql
from applier.articles import Article
from applier.config import Subscription
from applier.distribute.routing import sub_articles
from applier.distribute.statements import STATEMENT, decide
from applier.errors import ApplierError
from applier.records.events import AppliedProcedure, SchemaChange, Schemas, StreamEvent
from applier.targets.endpoint import Endpoint
from applier.targets.progress import APPLIED_HERE, BarrierMark, ProgressTable

log = logging.getLogger("applier.pipeline")
Say = Callable[[str], None]


@dataclass
class Plan:
    """Which events of the stream are barriers for this subscription, and what was decided."""

    barriers: list[StreamEvent] = field(default_factory=list)
    statements: list[dict[str, Any]] = field(default_factory=list)
    procedures: list[dict[str, Any]] = field(default_factory=list)


def plan_barriers(routed: DataFrame, events: Sequence[StreamEvent], sub: Subscription, full: bool) -> Plan:
    """The barriers among the stream's DDL, SQL and PROC events (in lsn order) for ``sub``:
    every schema change; each statement the subscription takes as a statement (seed 004);
    each applied procedure it receives as the procedure (seed 000); ``full``: a full copy."""
    rows = [r for r in events if sub.of(r.article) is not None]
    out = Plan()
    per_stmt: dict[int, tuple[int, int]] = {}
    if any(r.op == "SQL" for r in rows):
        for r in (
            routed.where(F.col("statement").isNotNull() & F.col("op").isin("I", "U", "D"))
            .groupBy("statement")
            .agg(
                F.count("*").alias("n"),
                F.sum(F.when(F.col("op") != F.col("source_op"), 1).otherwise(0)).alias("m"),
            )
            .collect()
        ):
            per_stmt[int(r["statement"])] = (int(r["n"]), int(r["m"] or 0))
    delivered: set[int] = set()
    sent_instead: dict[int, str] = {}
    procs = [r.lsn for r in rows if r.op == "PROC"]
    if procs:
        delivered = {int(r["lsn"]) for r in routed.where(F.col("op") == "PROC").select("lsn").collect()}
        for r in (
            routed.where(F.col("statement").isin(procs)).select("statement", "source_op", "op").collect()
        ):
            sent_instead[int(r["statement"])] = f"{r['source_op']}>{r['op']}"
    for e in rows:
        lsn = e.lsn
        if isinstance(e.payload, SchemaChange):
            out.barriers.append(e)
        elif isinstance(e.payload, AppliedProcedure):
            proc = e.payload
            sent = "procedure" if lsn in delivered else sent_instead.get(lsn, "nothing")
            out.procedures.append(
                {"lsn": lsn, "article": e.article, "procedure": proc.procedure, "sent_as": sent}
            )
            if lsn in delivered:
                out.barriers.append(e)
        else:
            stmt = e.payload
            n, migrated = per_stmt.get(lsn, (0, 0))
            dec = decide(stmt, sub.sqldml_threshold, full, n, migrated)
            out.statements.append(
                {
                    "lsn": lsn,
                    "article": e.article,
                    "operator": stmt.operator,
                    "category": stmt.category,
                    "rs_rowcount": stmt.rowcount,
                    "rows_routed": n,
                    "sent_as": dec.send,
                    "reason": dec.reason,
                    "subscriber_rowcount": None,
                    "fallback": False,
                }
            )
            if dec.send == STATEMENT:
                out.barriers.append(e)
    return out


def forget_segments(endpoint: Endpoint, name: str, plan: Plan) -> None:
    """A new apply of subscription ``name`` (not a resumed one): forget the progress rows of later
    segments and of barriers that an earlier run of the subscription left. Called before the
    phase ``applying`` is recorded: a resume from that phase trusts the rows it finds."""
    conn = endpoint.connect()
    try:
        ProgressTable(endpoint.dialect).forget_segments(conn.cursor(), name, len(plan.barriers) + 1)
        conn.commit()
    finally:
        conn.close()


def applied_barriers(endpoint: Endpoint, name: str, plan: Plan) -> dict[int, int]:
    """The barriers an earlier run applied (their place -> outcome), each checked to be the same
    event (its lsn)."""
    conn = endpoint.connect()
    try:
        held = ProgressTable(endpoint.dialect).read_barriers(conn.cursor(), name)
        conn.commit()
    finally:
        conn.close()
    out = {}
    for i, (lsn, outcome) in sorted(held.items()):
        want = plan.barriers[i].lsn if i < len(plan.barriers) else None
        if want != lsn:
            raise ApplierError(
                f"--resume: {endpoint.description} records barrier {i} of {name!r} at lsn {lsn}, the "
                f"stream has {'none' if want is None else f'lsn {want}'} there"
            )
        out[i] = outcome
    return out


def apply_barrier(
    b: StreamEvent,
    mark: BarrierMark,
    held: int | None,
    sub: Subscription,
    endpoint: Endpoint,
    schemas: Schemas,
    versions: dict[str, int],
    articles: tuple[Article, ...],
    plan: Plan,
    committed: list[int],
    schema_changes: list[dict[str, Any]],
    say: Say,
) -> None:
    """Apply one barrier with its watermark ``mark``; ``held``: the outcome an earlier run
    recorded for it (None: not applied yet), which is kept, not applied again."""
    lsn = mark.lsn
    again = "" if held is None else " (applied before the resume: skipped)"
    if isinstance(b.payload, SchemaChange):
        name, v = b.article, b.schema_version
        old = next(a for a in sub_articles(schemas, sub, versions) if a.name == name)
        versions[name] = v
        new = next(a for a in sub_articles(schemas, sub, versions) if a.name == name)
        stmts = schema_change_sql(endpoint, old, new)
        say(f"{sub.name}: schema change of {name} to version {v} ({len(stmts)} statements){again}")
        if held is None:
            apply_schema_change(endpoint, stmts, mark)
        schema_changes.append(
            {
                "lsn": lsn,
                "article": name,
                "version": v,
                "change": b.payload.payload(),  # the canonical payload, as its JSON text held it
                "applied": bool(stmts),
                "columns": list(new.column_names) if sub.of(name) is not None else None,
            }
        )
    elif isinstance(b.payload, AppliedProcedure):
        proc = b.payload
        if held is None:
            call_procedure(endpoint, proc, mark)
        else:
            say(f"{sub.name}: applied procedure {proc.procedure} at lsn {lsn}{again}")
    else:
        entry = next(e for e in plan.statements if e["lsn"] == lsn)
        stmt = b.payload
        if held is None:
            article = next(a for a in articles if a.name == b.article)
            ok, n_sub, why = apply_statement(endpoint, article, stmt, mark)
        else:  # committed only where its row count equalled rs_rowcount
            ok = held == APPLIED_HERE
            n_sub = stmt.rowcount if ok else None
            why = "rolled back before the resume: its rows are applied instead"
            say(f"{sub.name}: rs_sqldml at lsn {lsn}: sent as {'a statement' if ok else 'rows'}{again}")
        entry["subscriber_rowcount"] = n_sub
        if ok:
            committed.append(lsn)
        else:
            entry.update(sent_as="rows", fallback=True, reason=why)
            log.warning("rs_sqldml at lsn %d fell back to its rows on %s: %s", lsn, sub.name, why)
