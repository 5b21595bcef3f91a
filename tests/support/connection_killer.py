"""A thread that terminates a PostgreSQL subscriber's apply connections mid-run
(``pg_terminate_backend``, as a failover or an administrator would), at moments given as the
subscription's committed rounds (its progress table)."""

from __future__ import annotations

import threading
import time

import pyodbc

KILL = (
    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
)
LAST_ROUND = 'SELECT max(last_round) FROM "applier"."progress" WHERE subscription = ?'


class Killer(threading.Thread):
    """Terminates every other connection to the database at the given moments: once the
    subscription has committed ``rounds[i]`` rounds, ``delays[i]`` seconds later (default 0)."""

    def __init__(
        self, cs: str, subscription: str, rounds: list[int], delays: list[float] | None = None
    ) -> None:
        super().__init__(daemon=True)
        self.cs, self.subscription, self.rounds = cs, subscription, rounds
        self.delays = delays or [0.0] * len(rounds)
        self.killed: list[int] = []
        self.stop = threading.Event()

    def run(self) -> None:
        conn = pyodbc.connect(self.cs, autocommit=True)
        try:
            cur = conn.cursor()
            while not self.stop.is_set() and len(self.killed) < len(self.rounds):
                try:
                    last = cur.execute(LAST_ROUND, self.subscription).fetchone()[0]
                except pyodbc.Error:
                    last = None  # no progress table yet
                i = len(self.killed)
                if last is not None and last >= self.rounds[i]:
                    time.sleep(self.delays[i])
                    self.killed.append(int(cur.execute(KILL).fetchone()[0]))
                time.sleep(0.005)
        finally:
            conn.close()
