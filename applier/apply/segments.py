"""Apply one subscription's routed stream in segments cut at barrier events.

A barrier is a schema change (seed 001) or an rs_sqldml statement sent as a statement
(seed 004). Between barriers the apply model runs as usual (N streams, rounds, resets);
reaching a barrier, every stream has drained and committed (the apply model's stage has
ended), the barrier is applied on one connection, and the next segment starts:

- schema change: drop the article's default procedures, ALTER TABLE, regenerate the
  procedures for the new shape; the next segment's calls are planned with the new shape.
- statement: executed in its own transaction; if its row count at the subscriber equals
  rs_rowcount it commits (with a progress row) and its rows are not sent; otherwise it is
  rolled back and its rows are applied with the next segment (they follow it in the
  stream, before any later barrier).
- applied procedure delivered as the procedure (seed 000): called by its name with its
  parameter values bound, in its own transaction with a progress row.

A barrier inside a transaction splits that transaction's commit at the subscriber; the
end state is the same. Each segment keeps its own progress rows (``<subscription>/<k>``)
because round numbers start again at 0 in every segment. Barrier events are collected to
the driver (there are few); row commands never are.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from applier.apply import apply_model
from applier.apply.agent import AgentJob
from applier.apply.connection import connect
from applier.articles import Article
from applier.dialects.ddl import alter_sql, drop_procedure_sql, procedure_call_sql, statement_sql
from applier.distribute.routing import sub_articles
from applier.distribute.statements import STATEMENT, decide
from applier.partition.strategies import partition, with_rounds
from applier.settings import RunSettings, Subscription
from applier.sources.events import AppliedProcedure, Schemas, SqlStatement
from applier.targets.odbc import Target

log = logging.getLogger("applier.apply")


@dataclass
class SegmentsResult:
    events: DataFrame | None
    rounds: int = 0
    segments: int = 0
    commands: int = 0
    transactions: int = 0
    statements: list[dict[str, Any]] = field(default_factory=list)
    schema_changes: list[dict[str, Any]] = field(default_factory=list)
    procedures: list[dict[str, Any]] = field(default_factory=list)
    apply_seconds: float = 0.0
    fatal: bool = False


def _exec_all(target: Target, statements: list[str]) -> None:
    import pyodbc

    from applier.errors import TargetError

    conn = connect(target.connection_string, target.dialect, lock_timeout_ms=30000)
    try:
        cur = conn.cursor()
        for s in statements:
            try:
                cur.execute(s)
            except pyodbc.Error as e:
                conn.rollback()
                raise TargetError(f"schema change failed: {e.args[1] if len(e.args) > 1 else e}") from None
        conn.commit()
    finally:
        conn.close()


def schema_change_sql(target: Target, old: Article, new: Article) -> list[str]:
    """Drop the default procedures, alter the table, create the procedures for ``new``."""
    d = target.dialect
    if [(c.name, c.type) for c in old.replicated] == [(c.name, c.type) for c in new.replicated]:
        return []  # the change is outside this subscriber's column list
    out = [drop_procedure_sql(d, old, op) for op in "IUD" if d.procedure_sql(old, op) is not None]
    out += alter_sql(d, old, new)
    for op in "IUD":
        text = d.procedure_sql(new, op)
        if text is not None:
            out += d.split_script(text)
    return out


def _clear_progress(target: Target, names: list[str]) -> None:
    d = target.dialect
    conn = connect(target.connection_string, d, lock_timeout_ms=30000)
    try:
        cur = conn.cursor()
        for n in names:
            cur.execute(f"DELETE FROM {d.progress_table()} WHERE {d.quote('subscription')} = ?", n)
        conn.commit()
    finally:
        conn.close()


def apply_statement(
    target: Target, article: Article, stmt: SqlStatement, progress: tuple[str, int, int, int]
) -> tuple[bool, int | None, str]:
    """Execute the statement in its own transaction; commit only when its row count at the
    subscriber equals rs_rowcount. Returns (committed, subscriber row count, why)."""
    import pyodbc

    d = target.dialect
    conn = connect(target.connection_string, d, lock_timeout_ms=30000)
    try:
        cur = conn.cursor()
        try:
            cur.execute(statement_sql(d, article, stmt))
            n = int(cur.rowcount)
        except pyodbc.Error as e:
            conn.rollback()
            return False, None, f"the statement failed at the subscriber: {d.classify(e).message[:300]}"
        if n != stmt.rowcount:
            conn.rollback()
            return False, n, f"subscriber row count {n} differs from rs_rowcount {stmt.rowcount}: rolled back"
        cur.execute(d.progress_upsert_sql(), *progress)
        conn.commit()
        return True, n, f"applied as a statement ({n} rows)"
    finally:
        conn.close()


def call_procedure(target: Target, proc: AppliedProcedure, progress: tuple[str, int, int, int]) -> None:
    """Call the subscriber's procedure with the publisher's parameter values (bound)."""
    import pyodbc

    from applier.errors import TargetError

    d = target.dialect
    conn = connect(target.connection_string, d, lock_timeout_ms=30000)
    try:
        cur = conn.cursor()
        try:
            cur.execute(procedure_call_sql(d, proc.procedure, len(proc.params)), *proc.params)
            cur.execute(d.progress_upsert_sql(), *progress)
        except pyodbc.Error as e:
            conn.rollback()
            raise TargetError(
                f"applied procedure {proc.procedure} failed: {d.classify(e).message[:300]}"
            ) from None
        conn.commit()
    finally:
        conn.close()


def apply_segments(
    spark: SparkSession,
    routed: DataFrame,
    schemas: Schemas,
    sub: Subscription,
    target: Target,
    rs: RunSettings,
    streams: int,
    work_dir: Path,
    full_copy: bool,
    say: Callable[[str], None] = lambda _: None,
    stream_events: list[Any] | None = None,
) -> SegmentsResult:
    """``stream_events``: the stream's DDL, SQL and PROC events in lsn order, if already collected."""
    if stream_events is None:
        stream_events = routed.where(F.col("op").isin("DDL", "SQL", "PROC")).orderBy("lsn").collect()
    events_rows = [r for r in stream_events if sub.of(r["article"]) is not None]
    per_stmt: dict[int, tuple[int, int]] = {}
    if any(r["op"] == "SQL" for r in events_rows):
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

    result = SegmentsResult(None)
    procs = [int(r["lsn"]) for r in events_rows if r["op"] == "PROC"]
    delivered: set[int] = set()
    sent_instead: dict[int, str] = {}
    if procs:
        delivered = {int(r["lsn"]) for r in routed.where(F.col("op") == "PROC").select("lsn").collect()}
        for r in (
            routed.where(F.col("statement").isin(procs)).select("statement", "source_op", "op").collect()
        ):
            sent_instead[int(r["statement"])] = f"{r['source_op']}>{r['op']}"
    barriers: list[Any] = []
    for r in events_rows:
        if r["op"] == "DDL":
            barriers.append(r)
            continue
        if r["op"] == "PROC":
            lsn = int(r["lsn"])
            proc = AppliedProcedure.parse(json.loads(r["after"]), f"lsn {lsn}")
            result.procedures.append(
                {
                    "lsn": lsn,
                    "article": r["article"],
                    "procedure": proc.procedure,
                    "sent_as": "procedure" if lsn in delivered else sent_instead.get(lsn, "nothing"),
                }
            )
            if lsn in delivered:
                barriers.append(r)
            continue
        stmt = SqlStatement.parse(json.loads(r["after"]), f"lsn {r['lsn']}")
        n, migrated = per_stmt.get(int(r["lsn"]), (0, 0))
        dec = decide(stmt, sub.sqldml_threshold, full_copy, n, migrated)
        entry = {
            "lsn": r["lsn"],
            "article": r["article"],
            "operator": stmt.operator,
            "category": stmt.category,
            "rs_rowcount": stmt.rowcount,
            "rows_routed": n,
            "sent_as": dec.send,
            "reason": dec.reason,
            "subscriber_rowcount": None,
            "fallback": False,
        }
        result.statements.append(entry)
        if dec.send == STATEMENT:
            barriers.append(r)

    versions: dict[str, int] = {n: 1 for n in schemas.versions}
    committed: list[int] = []
    events: list[DataFrame] = []
    lo: int | None = None
    k = 0
    rows = routed.where(F.col("op").isin("I", "U", "D"))
    for b in [*barriers, None]:
        hi = None if b is None else int(b["lsn"])
        seg = rows
        if lo is not None:
            seg = seg.where(F.col("lsn") > lo)
        if hi is not None:
            seg = seg.where(F.col("lsn") < hi)
        if committed:
            seg = seg.where(F.col("statement").isNull() | ~F.col("statement").isin(committed))
        articles = sub_articles(schemas, sub, versions)
        if not result.fatal and seg.limit(1).count():
            indexed, n_rounds = with_rounds(seg, rs.commit_batch_size)
            if n_rounds:
                name = sub.name if k == 0 else f"{sub.name}/{k}"
                _clear_progress(target, [name])
                planned = partition(indexed, rs.partition, streams, articles).persist()
                stats = planned.agg(
                    F.count("*").alias("c"), F.countDistinct("xact_seqno").alias("x")
                ).collect()[0]
                result.commands += int(stats["c"])
                result.transactions += int(stats["x"])
                job = AgentJob(
                    target.connection_string,
                    target.dialect_name,
                    articles,
                    name,
                    streams,
                    n_rounds,
                    rs.lock_timeout_ms,
                    rs.error_policy,
                    batch_events=False,  # rounds restart in every segment
                )
                say(
                    f"{sub.name}: segment {k}: {stats['c']} commands in {n_rounds} rounds on {streams} streams"
                )
                t = time.perf_counter()
                ev = apply_model(rs.model)(spark, planned, job, str(work_dir / f"events-{sub.name}-{k}"))
                result.apply_seconds += time.perf_counter() - t
                planned.unpersist()
                events.append(ev)
                result.rounds += n_rounds
                result.segments += 1
                # A fatal round stops the run before the next barrier (none follows the last segment:
                # the summary reports it from the events).
                if b is not None and ev.where("kind = 'round' AND outcome = 'fatal'").limit(1).count():
                    result.fatal = True
                k += 1
        if b is None or result.fatal:
            lo = hi
            continue
        if b["op"] == "DDL":
            name, v = b["article"], int(b["schema_version"])
            asub = sub.of(name)
            old = sub_articles(schemas, sub, versions)
            versions[name] = v
            new = sub_articles(schemas, sub, versions)
            o = next(a for a in old if a.name == name)
            shaped = next(a for a in new if a.name == name)
            stmts = schema_change_sql(target, o, shaped)
            say(f"{sub.name}: schema change of {name} to version {v} ({len(stmts)} statements)")
            _exec_all(target, stmts)
            result.schema_changes.append(
                {
                    "lsn": b["lsn"],
                    "article": name,
                    "version": v,
                    "change": json.loads(b["after"]),
                    "applied": bool(stmts),
                    "columns": list(shaped.column_names) if asub is not None else None,
                }
            )
        elif b["op"] == "PROC":
            lsn = int(b["lsn"])
            proc = AppliedProcedure.parse(json.loads(b["after"]), f"lsn {lsn}")
            call_procedure(target, proc, (f"{sub.name}/proc", 0, lsn, 0))
        else:
            lsn = int(b["lsn"])
            entry = next(e for e in result.statements if e["lsn"] == lsn)
            stmt = SqlStatement.parse(json.loads(b["after"]), f"lsn {lsn}")
            article = next(a for a in articles if a.name == b["article"])
            ok, n_sub, why = apply_statement(
                target, article, stmt, (f"{sub.name}/sql", 0, lsn, len(committed))
            )
            entry["subscriber_rowcount"] = n_sub
            if ok:
                committed.append(lsn)
            else:
                entry["sent_as"] = "rows"
                entry["fallback"] = True
                entry["reason"] = why
                log.warning("rs_sqldml at lsn %d fell back to its rows on %s: %s", lsn, sub.name, why)
        lo = hi
    if committed:
        stmt_rows = routed.where(F.col("statement").isin(committed) & F.col("op").isin("I", "U", "D")).select(
            F.lit("command").alias("kind"),
            "lsn",
            "xact_seqno",
            F.lit(0).alias("stream"),
            F.lit(None).cast("int").alias("round"),
            F.lit("statement").alias("outcome"),
            "article",
        )
        events.append(stmt_rows)
    if events:
        df = events[0]
        for e in events[1:]:
            df = df.unionByName(e, allowMissingColumns=True)
        result.events = df
    return result
