"""PostgreSQL's own logical replication applying the benchmark's changes.

Two embedded clusters: a publisher (wal_level=logical) and a subscriber, both with the
same synchronous_commit, the table created and loaded with the same snapshot on both. The
subscription is created disabled (its slot keeps every change from then on), the changes
are made on the publisher transaction by transaction (untimed), a marker row is inserted
last, then the subscription is enabled and the clock runs until the marker is visible on
the subscriber. The subscription's own ``synchronous_commit`` option (default off in
PostgreSQL) is set to the clusters' setting, so that both sides of the comparison flush alike.
https://www.postgresql.org/docs/15/sql-createsubscription.html
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from applier.bench.ceiling import load_rows
from applier.bench.stream import snapshot, transactions
from applier.config import Config
from applier.dialects import DIALECTS
from applier.plan.calls import Planner

MARKER = "applier_bench_marker"
NAME = "applier_bench"


@dataclass(frozen=True)
class NativeResult:
    seconds: float  # ENABLE -> marker visible on the subscriber
    worker_start_seconds: float  # ENABLE -> apply worker running
    commands: int
    transactions: int
    converged: bool


def _autocommit(cs: str) -> Any:
    import pyodbc

    return pyodbc.connect(cs, autocommit=True, timeout=30)


def _fingerprint(cs: str, table: str) -> tuple[int, int]:
    conn = _autocommit(cs)
    try:
        row = (
            conn.cursor()
            .execute(f"SELECT count(*), coalesce(sum(hashtext(t::text)), 0) FROM {table} t")
            .fetchone()
        )
        return int(row[0]), int(row[1])
    finally:
        conn.close()


def run_native(
    config: Config,
    synchronous_commit: bool,
    say: Callable[[str], None] = lambda _: None,
    source: Path | None = None,
) -> NativeResult:
    from applier.apply.install import install
    from applier.targets.connection import connect
    from applier.targets.embedded import EmbeddedPostgres
    from applier.targets.endpoint import preflight

    pub = EmbeddedPostgres(synchronous_commit=synchronous_commit, extra_settings={"wal_level": "logical"})
    sub = EmbeddedPostgres(synchronous_commit=synchronous_commit)
    try:
        pub.start()
        sub.start()
        targets = [preflight(pg.connection_string(), "bench") for pg in (pub, sub)]
        dialect = DIALECTS["postgres"]()
        table = dialect.table(config.articles[0])
        tables = ", ".join(dialect.table(a) for a in config.articles)
        say("native: loading the snapshot on the publisher and the subscriber")
        for t in targets:
            install(t, config.articles, config.run.subscription)
            conn = _autocommit(t.connection_string)
            conn.cursor().execute(f"CREATE TABLE public.{MARKER} (id integer PRIMARY KEY)")
            conn.close()
            load_rows(t.connection_string, "postgres", config, snapshot(config, source))
        p_cs, s_cs = (t.connection_string for t in targets)
        conn = _autocommit(p_cs)
        conn.cursor().execute(f"CREATE PUBLICATION {NAME} FOR TABLE {tables}, public.{MARKER}")
        conn.close()
        libpq = (
            f"host=127.0.0.1 port={pub.port} dbname={pub.database} user={pub.user} password={pub.password}"
        )
        sc = "on" if synchronous_commit else "off"
        conn = _autocommit(s_cs)
        conn.cursor().execute(
            f"CREATE SUBSCRIPTION {NAME} CONNECTION {dialect.literal(libpq)} PUBLICATION {NAME} "
            f"WITH (enabled = false, copy_data = false, synchronous_commit = {dialect.literal(sc)})"
        )
        conn.close()

        say("native: making the changes on the publisher (subscription disabled)")
        planner = Planner(dialect, config.articles)
        conn = connect(p_cs, dialect, 30000)
        cur = conn.cursor()
        cur.execute("SET synchronous_commit = off")  # untimed: the publisher's own commits
        conn.commit()
        n_cmds = n_xacts = 0
        for xact in transactions(config, source):
            calls = [planner.plan(c[3], c[4], c[6], c[7], c[8]) for c in xact]
            sql = ";\n".join(c.sql for c in calls if c is not None)
            cur.execute(sql, [v for c in calls if c is not None for v in c.params])
            conn.commit()
            n_cmds += len(xact)
            n_xacts += 1
        cur.execute(f"INSERT INTO public.{MARKER} VALUES (1)")
        conn.commit()
        conn.close()
        for cs in (p_cs, s_cs):
            c = _autocommit(cs)
            c.cursor().execute("CHECKPOINT")
            c.close()

        say("native: subscription enabled, waiting for the subscriber to catch up")
        conn = _autocommit(s_cs)
        cur = conn.cursor()
        t0 = time.perf_counter()
        cur.execute(f"ALTER SUBSCRIPTION {NAME} ENABLE")
        started = 0.0
        while True:
            if (
                not started
                and cur.execute("SELECT count(*) FROM pg_stat_subscription WHERE pid IS NOT NULL").fetchone()[
                    0
                ]
            ):
                started = time.perf_counter() - t0
            if cur.execute(f"SELECT count(*) FROM public.{MARKER}").fetchone()[0]:
                break
            if time.perf_counter() - t0 > 3600:
                raise RuntimeError("native logical replication did not catch up within an hour")
            time.sleep(0.02)
        seconds = time.perf_counter() - t0
        cur.execute(f"ALTER SUBSCRIPTION {NAME} DISABLE")
        conn.close()
        converged = _fingerprint(p_cs, table) == _fingerprint(s_cs, table)
        return NativeResult(seconds, started, n_cmds, n_xacts, converged)
    finally:
        sub.stop()
        pub.stop()
