"""A subscriber's phases before its streams apply: the run it holds (the record that lets
``--resume`` continue only that run, from the phase it reached), tables and procedures
installed, the snapshot loaded in key ranges (a resumed load loads only the ranges not
recorded), and the constraints added after the last range."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame

from applier import failpoints
from applier.apply.install import add_constraints, install, present_tables
from applier.apply.snapshot import KeyRanges, key_ranges, load_snapshot
from applier.articles import Article
from applier.config import RunSettings, Subscription
from applier.errors import ConfigError, InputError
from applier.pipeline.identity import RunIdentity
from applier.targets.endpoint import Endpoint
from applier.targets.progress import (
    APPLIED,
    APPLYING,
    INSTALLED,
    LOADED,
    STARTED,
    Baseline,
    LoadedRange,
    ProgressTable,
    RunRecord,
)

Say = Callable[[str], None]


def record(
    endpoint: Endpoint,
    name: str,
    ident: RunIdentity,
    phase: str,
    rows: int | None,
) -> None:
    """The phase this subscription's run reached, recorded in the subscriber (its tables
    created first when it has none)."""
    conn = endpoint.connect()
    try:
        cur = conn.cursor()
        if phase == STARTED:
            for stmt in ProgressTable(endpoint.dialect).ddl():
                cur.execute(stmt)
        write_phase(cur, endpoint, name, ident, phase, rows)
        conn.commit()
    finally:
        conn.close()


def write_phase(
    cur: Any,
    endpoint: Endpoint,
    name: str,
    ident: RunIdentity,
    phase: str,
    rows: int | None,
    baselines: Sequence[Baseline] = (),
) -> None:
    """Write the phase on ``cur`` (committed by the caller, with the work of that phase); the
    load's phase with verify's baselines (replacing any earlier run's)."""
    table = ProgressTable(endpoint.dialect)
    if phase == LOADED:
        table.write_baselines(cur, name, baselines)
    table.write_run(cur, name, ident.fingerprint, ident.settings, phase, rows)


def held_run(endpoint: Endpoint, name: str) -> RunRecord | None:
    """The run the subscriber holds for ``name``; None when it holds none (or no runs table)."""
    import pyodbc

    conn = endpoint.connect()
    try:
        return ProgressTable(endpoint.dialect).read_run(conn.cursor(), name)
    except pyodbc.Error:  # no runs table: applier never installed anything here
        return None
    finally:
        conn.close()


def resumed(
    endpoint: Endpoint, name: str, ident: RunIdentity, articles: Sequence[Article]
) -> RunRecord | None:
    """The run a resume continues (the phase it reached, its snapshot's rows); None where the
    subscriber holds no record of a run of ``name`` and none of its ``articles``' tables: there
    is nothing to continue, and nothing another run left to mistake for it. Anything else but the
    same run is refused, naming what differs."""
    held = held_run(endpoint, name)
    if held is None:
        there = present_tables(endpoint, articles)
        if not there:
            return None
        raise InputError(
            f"--resume: {endpoint.description} holds no run of subscription {name!r} to continue, "
            f"and its table(s) {', '.join(there)} are there: another run's, or tables of that name "
            "(run it without --resume to start again)"
        )
    if held.fingerprint != ident.fingerprint:
        diff = ident.differences(held.settings)
        raise ConfigError(
            f"--resume: subscription {name!r} in {endpoint.description} holds another run: "
            + ("; ".join(diff) or "its settings differ")
            + " (resume with the same settings, or run without --resume to start again)"
        )
    return held


def prepare(
    endpoint: Endpoint,
    sub: Subscription,
    articles: tuple[Article, ...],
    ident: RunIdentity,
    snapshot: DataFrame,
    custom_sql: Sequence[Path],
    set_apply: bool,
    full_copy: bool,
    held: RunRecord | None,
    say: Say,
    label: bool,
    snapshot_rows: int | None = None,
    baselines: Callable[[int], Sequence[Baseline]] = lambda _: (),
    range_rows: int = RunSettings.snapshot_range_rows,
) -> int:
    """Tables, procedures, snapshot and constraints, each phase recorded in the subscriber;
    returns the snapshot's row count. A resume (``held``: the run it continues) continues
    from there: a run stopped before its tables were installed installs them again; one
    stopped during its snapshot load loads only the key ranges not recorded
    (:mod:`applier.apply.snapshot`, ranges of ``range_rows`` rows); one stopped after it skips
    both. The subscriber's constraints are added after the last range, in the transaction that
    records the load's phase: a resume never adds them twice.
    ``baselines``: what verify compares the rest of the subscriber with, given the rows loaded
    (recorded with the load's phase)."""
    who = f"{sub.name}: " if label else ""
    if held is not None and held.phase in (LOADED, APPLYING, APPLIED):
        say(f"{who}resuming from the progress table ({held.phase})")
        return held.snapshot_rows or 0
    # a resume of a load finds the ranges it committed; the ranges are the same where the
    # snapshot is (applier.apply.snapshot)
    ranges = done = None
    if held is not None and held.phase == INSTALLED:
        ranges = key_ranges(snapshot, range_rows, snapshot_rows)
        done = loaded_ranges(endpoint, sub.name, ranges, who, say)
    if done is None:
        if held is not None and held.phase == STARTED:
            say(f"{who}resuming: the earlier run stopped before its tables were installed; installing them")
        say(f"{who}installing tables and procedures")
        install(endpoint, articles, sub.name, custom_sql=custom_sql, set_apply=set_apply)
        failpoints.reach("install.done")
        record(endpoint, sub.name, ident, INSTALLED, None)
        done = {}
    say(f"{who}loading the snapshot")
    ranges = ranges or key_ranges(snapshot, range_rows, snapshot_rows)
    t = time.perf_counter()  # the load alone (the sample computed a generated snapshot's rows)
    load = load_snapshot(snapshot, endpoint, articles, sub.name, ranges=ranges, done=done)
    seconds = time.perf_counter() - t
    if load.resumed:
        say(
            f"{who}snapshot loaded: {load.loaded:,} rows in {load.ranges - load.resumed} of its {load.ranges} "
            f"key ranges ({seconds:.1f} s); the other {load.rows - load.loaded:,} rows were committed "
            "before the stop"
        )
    else:
        say(f"{who}snapshot loaded: {load.loaded:,} rows in {load.ranges} key range(s) ({seconds:.1f} s)")
    failpoints.reach("load.constraints")
    base = baselines(load.rows)
    add_constraints(
        endpoint,
        articles if full_copy else (),
        record=lambda cur: write_phase(cur, endpoint, sub.name, ident, LOADED, load.rows, base),
    )
    failpoints.reach("load.done")
    return load.rows


def loaded_ranges(
    endpoint: Endpoint, name: str, ranges: KeyRanges, who: str, say: Say
) -> dict[int, LoadedRange] | None:
    """The key ranges a killed load committed (their layout the same as ``ranges``'); None
    where the snapshot must be loaded again into new tables: the subscriber holds ranges of
    another layout (``snapshot_range_rows`` changed), or keeps no record of ranges (an older
    applier's load, committed per task)."""
    import pyodbc

    conn = endpoint.connect()
    try:
        done = ProgressTable(endpoint.dialect).read_ranges(conn.cursor(), name)
        conn.commit()
    except pyodbc.Error:
        say(f"{who}resuming: the subscriber keeps no record of the snapshot's key ranges; loading it again")
        return None
    finally:
        conn.close()
    other = {r.layout for r in done.values()} - {ranges.layout}
    if other:
        say(
            f"{who}resuming: the snapshot's {len(done)} key range(s) loaded before the stop were cut "
            f"otherwise (snapshot_range_rows changed?); loading it again"
        )
        return None
    rows = sum(r.rows for r in done.values())
    say(
        f"{who}resuming the snapshot load: {len(done)} of its {ranges.count} key ranges ({rows:,} rows) "
        f"were committed before the stop; loading the other {ranges.count - len(done)}"
    )
    return done
