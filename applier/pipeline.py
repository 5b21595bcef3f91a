"""The run: sources -> plan -> partition -> apply -> verify -> report, against one target.

This module only sequences the stages; each stage lives in its own package.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from applier.apply import apply_model
from applier.apply.agent import AgentJob
from applier.apply.connection import connect
from applier.apply.install import install, load_snapshot
from applier.errors import ApplierError
from applier.partition.strategies import partition, with_rounds
from applier.settings import Config
from applier.sources.dataset import ChangeSet, generate, read_changes
from applier.targets.odbc import Target
from applier.verify.diff import UNKNOWN, Verdict, verify
from applier.verify.oracle import oracle
from applier.verify.target import read_target

Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass
class RunResult:
    verdict: Verdict
    summary: dict[str, Any]
    phases: dict[str, float] = field(default_factory=dict)
    failed: str | None = None

    @property
    def exit_code(self) -> int:
        if self.failed or self.verdict.verdict == UNKNOWN:
            return 2
        return 0 if self.verdict.verdict == "converged" else 1


def load_changes(
    spark: SparkSession, config: Config, changes: str | Path | None, snapshot: str | Path | None
) -> ChangeSet:
    if changes is None:
        return generate(spark, config)
    return read_changes(spark, config, changes, snapshot)


def _poll_progress(
    target: Target, subscription: str, total: int, progress: Progress, stop: threading.Event
) -> None:
    """Rounds committed, read from the progress table (the agent's own watermark)."""
    try:
        dialect = target.dialect
        conn = connect(target.connection_string, dialect, 1000)
    except Exception:  # noqa: BLE001 - progress display is best effort
        return
    try:
        cur = conn.cursor()
        sql = (
            f"SELECT max({dialect.quote('last_round')}) FROM {dialect.progress_table()} "
            f"WHERE {dialect.quote('subscription')} = ?"
        )
        while not stop.wait(0.5):
            try:
                v = cur.execute(sql, subscription).fetchone()[0]
                conn.commit()
                progress("apply", 0 if v is None else int(v) + 1, total)
            except Exception:  # noqa: BLE001
                return
    finally:
        conn.close()


def summarize(
    events: DataFrame, job: AgentJob, commands: int, transactions: int, apply_seconds: float
) -> dict[str, Any]:
    outcomes = {
        r["outcome"]: int(r["count"])
        for r in events.where("kind = 'command'").groupBy("outcome").count().collect()
    }
    conflicts = {
        r["class"]: int(r["count"])
        for r in events.where("kind = 'conflict'").groupBy("class").count().collect()
    }
    rounds = {
        r["outcome"]: int(r["count"])
        for r in events.where("kind = 'round'").groupBy("outcome").count().collect()
    }
    logs = [
        r["message"] + f" (round {r['round']}: {r['class']})"
        for r in events.where("kind = 'log'").orderBy("round").limit(50).collect()
    ]
    streams = [
        {
            "stream": r["stream"],
            "commands": r["n"],
            "seconds": round(r["seconds"], 3),
            **json.loads(r["message"]),
        }
        for r in events.where("kind = 'stream'").orderBy("stream").collect()
    ]
    by_class = {
        c: conflicts.get(c, 0)
        for c in ("row_not_found", "duplicate_key", "lock_timeout", "deadlock", "foreign_key", "other")
    }
    by_class.update({k: v for k, v in conflicts.items() if k not in by_class})
    applied = outcomes.get("applied", 0) + outcomes.get("reapplied", 0)
    return {
        "commands": commands,
        "transactions": transactions,
        "rounds": job.rounds,
        "rounds_parallel": rounds.get("parallel", 0),
        "resets": rounds.get("reset", 0) + rounds.get("fatal", 0),
        "reset_log": logs,
        "conflicts": by_class,
        "outcomes": outcomes,
        "skipped": outcomes.get("skipped", 0),
        "applied": applied,
        "streams": job.streams,
        "stream_stats": streams,
        "apply_seconds": round(apply_seconds, 3),
        "throughput_cmds_per_s": round(commands / apply_seconds, 1) if apply_seconds > 0 else None,
        "fatal": rounds.get("fatal", 0) > 0,
    }


def run(
    spark: SparkSession,
    config: Config,
    target: Target,
    *,
    changes: str | Path | None = None,
    snapshot: str | Path | None = None,
    work_dir: str | Path | None = None,
    custom_sql: Sequence[Path] = (),
    progress: Progress | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> RunResult:
    progress = progress or (lambda *_: None)
    say = on_phase or (lambda _: None)
    rs = config.run
    phases: dict[str, float] = {}
    own_dir = work_dir is None
    wd = Path(tempfile.mkdtemp(prefix="applier-work-")) if own_dir else Path(work_dir)  # type: ignore[arg-type]
    wd.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    try:
        say("reading changes" if changes else f"generating {config.workload.kind} workload")
        cs = load_changes(spark, config, changes, snapshot)
        say("installing tables and procedures")
        install(target, config.articles, rs.subscription, custom_sql=custom_sql)
        loaded = load_snapshot(cs.snapshot, target, config.articles)
        phases["prepare"] = time.perf_counter() - t

        t = time.perf_counter()
        say(f"partitioning ({rs.partition}, {rs.streams} streams)")
        parted = partition(cs.changes, rs.partition, rs.streams)
        planned, n_rounds = with_rounds(parted, rs.commit_batch_size)
        planned = planned.persist(StorageLevel.MEMORY_AND_DISK)
        stats = planned.agg(F.count("*").alias("c"), F.countDistinct("xact_seqno").alias("x")).collect()[0]
        commands, transactions = int(stats["c"]), int(stats["x"])
        phases["plan"] = time.perf_counter() - t

        job = AgentJob(
            target.connection_string,
            target.dialect_name,
            config.articles,
            rs.subscription,
            rs.streams,
            n_rounds,
            rs.lock_timeout_ms,
            rs.error_policy,
        )
        say(f"applying {commands} commands in {n_rounds} rounds on {rs.streams} streams")
        stop = threading.Event()
        poller = threading.Thread(
            target=_poll_progress, args=(target, rs.subscription, n_rounds, progress, stop), daemon=True
        )
        poller.start()
        t = time.perf_counter()
        try:
            events = apply_model(rs.model)(spark, planned, job, str(wd / "events"))
        finally:
            stop.set()
            poller.join(timeout=5)
        apply_seconds = time.perf_counter() - t
        progress("apply", n_rounds, n_rounds)
        phases["apply"] = apply_seconds

        t = time.perf_counter()
        summary = summarize(events, job, commands, transactions, apply_seconds)
        summary["snapshot_rows"] = loaded
        summary["source"] = cs.origin
        summary["target"] = target.description
        say("verifying")
        try:
            expected = oracle(cs.changes, cs.snapshot)
            found = read_target(spark, target, config.articles)
            verdict = verify(expected, found, planned, events)
        except Exception as e:  # noqa: BLE001 - a checker that crashes says unknown, never passes
            if isinstance(e, ApplierError):
                raise
            verdict = Verdict(UNKNOWN, reason=f"verification failed: {type(e).__name__}: {e}")
        phases["verify"] = time.perf_counter() - t
        planned.unpersist()
        cs.unpersist()
        failed = "the single connection hit an error the policy does not skip" if summary["fatal"] else None
        return RunResult(verdict, summary, phases, failed)
    finally:
        if own_dir:
            shutil.rmtree(wd, ignore_errors=True)
