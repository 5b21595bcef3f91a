"""Lost connections: the subscriber's server terminates the apply connections mid-run
(``pg_terminate_backend``, as a failover or an administrator would), several times, under both
models and set-based apply. A lost connection in a parallel round is a reset, not a failure:
each run converges without a rerun, and the streams report their reconnects."""

from __future__ import annotations

import dataclasses
import time

import pyodbc
import pytest

from tests.support.connection_killer import Killer
from tests.support.runs import config, run

pytestmark = pytest.mark.integration

CASES = [
    # (model, partition, set-based apply)
    ("agent", "key-hash", False),
    ("agent", "key-hash", True),
    ("independent", "round-robin", False),
]


@pytest.mark.parametrize(
    ("model", "partition", "set_apply"), CASES, ids=["agent", "agent-set", "independent"]
)
def test_terminated_connections_reconnect_and_converge(spark, target, model, partition, set_apply):
    name = f"lost_{model}_{int(set_apply)}"
    cfg = config(name, streams=4, batch=2, kind="uniform", transactions=400, initial_rows=100, seed=3)
    cfg = cfg.replace(run=dataclasses.replace(cfg.run, model=model, partition=partition, set_apply=set_apply))
    killer = Killer(target.connection_string, name, [8, 16, 24])
    killer.start()
    try:
        result, report = run(spark, cfg, target)
    finally:
        killer.stop.set()
        killer.join(timeout=10)
    assert killer.killed and sum(killer.killed) >= 1, "no connection was terminated during the run"
    assert report["verdict"] == "converged", (report["reason"], report["divergent"][:2])
    assert sum(s.get("reconnects", 0) for s in report["streams"]) >= 1
    applied = report["outcomes"].get("applied", 0) + report["outcomes"].get("reapplied", 0)
    assert applied == report["commands"]


def _pid(conn: pyodbc.Connection) -> int:
    pid = int(conn.cursor().execute("SELECT pg_backend_pid()").fetchone()[0])
    conn.commit()
    return pid


def _terminate(admin: pyodbc.Connection, conn: pyodbc.Connection, pid: int | None = None) -> None:
    """Terminate ``conn``'s backend (``pid``: known already) and wait until it is gone."""
    admin.cursor().execute("SELECT pg_terminate_backend(?, 5000)", _pid(conn) if pid is None else pid)


class _Reconnects:
    """Replacement connections, the first ``doomed`` of them terminated as soon as they exist
    (the second and third termination of a failover, the one CI caught after a renew)."""

    def __init__(self, target, admin: pyodbc.Connection, doomed: int) -> None:
        self.target, self.admin, self.doomed, self.made = target, admin, doomed, 0

    def __call__(self) -> pyodbc.Connection:
        conn = self.target.connect(1000)
        self.made += 1
        if self.made <= self.doomed:
            _terminate(self.admin, conn)
        return conn


def test_a_read_after_a_reconnect_survives_the_replacement_being_lost_too(target):
    from applier.apply.sender import Sender
    from applier.plan.calls import Planner

    admin = pyodbc.connect(target.connection_string, autocommit=True)
    try:
        reconnect = _Reconnects(target, admin, doomed=2)
        sender = Sender(
            target.connect(1000), target.dialect, Planner(target.dialect, []), 0, False, reconnect
        )
        _terminate(admin, sender.conn)
        got = sender.read(lambda: sender.conn.cursor().execute("SELECT 42").fetchone()[0])
        assert got == 42
        assert reconnect.made == 3 and sender.reconnects == 3
    finally:
        admin.close()


def test_a_commit_lost_then_its_check_lost_applies_the_work_once(target):
    """commit_surely: the connection is lost at the commit and the replacement that should tell
    whether the commit landed is lost too: the work is applied again, exactly once."""
    from applier.apply.policy import commit_surely
    from applier.apply.sender import Sender
    from applier.plan.calls import Planner

    admin = pyodbc.connect(target.connection_string, autocommit=True)
    admin.cursor().execute('DROP TABLE IF EXISTS "lost_commit_check"')
    admin.cursor().execute('CREATE TABLE "lost_commit_check" (k int PRIMARY KEY)')
    try:
        reconnect = _Reconnects(target, admin, doomed=1)
        sender = Sender(
            target.connect(1000), target.dialect, Planner(target.dialect, []), 0, False, reconnect
        )

        def work() -> None:
            sender.conn.cursor().execute('INSERT INTO "lost_commit_check" VALUES (1)')

        def landed() -> bool:
            return sender.conn.cursor().execute('SELECT count(*) FROM "lost_commit_check"').fetchone()[0] == 1

        pid = _pid(sender.conn)
        work()
        _terminate(admin, sender.conn, pid)  # the commit will find the connection gone
        commit_surely(sender, landed, lambda: work(), 3, "the check")
        assert admin.cursor().execute('SELECT count(*) FROM "lost_commit_check"').fetchone()[0] == 1
        assert reconnect.made == 2
    finally:
        admin.cursor().execute('DROP TABLE IF EXISTS "lost_commit_check"')
        admin.close()


def test_a_server_that_cannot_be_reached_ends_the_read_at_once(target):
    """The connect has its own retries: a read whose replacement cannot be made fails on the
    first failed reconnect, without a second layer of retries on top."""
    from applier.apply.sender import Sender
    from applier.plan.calls import Planner

    tries = []

    def unreachable() -> pyodbc.Connection:
        tries.append(time.monotonic())
        raise pyodbc.OperationalError("08001", "could not connect to server: Connection refused")

    admin = pyodbc.connect(target.connection_string, autocommit=True)
    try:
        sender = Sender(
            target.connect(1000), target.dialect, Planner(target.dialect, []), 0, False, unreachable
        )
        _terminate(admin, sender.conn)
        with pytest.raises(pyodbc.OperationalError, match="08001"):
            sender.read(lambda: sender.conn.cursor().execute("SELECT 1").fetchone()[0])
        assert len(tries) == 1
    finally:
        admin.close()
