"""Faults on Babelfish (T-SQL over TDS, FreeTDS ODBC): lost connections, and kill -9 then
``--resume``, in a database of this module's own.

Lost connections: ``KILL <spid>`` ends every other session of the subscriber's database at
given progress rounds (as ``pg_terminate_backend`` does in
``tests/integration/test_lost_connections.py``), under the agent model (row by row and
set-based) and the independent one: each run converges without a rerun, with reconnects, and
every command applied once. What a statement gets on a session Babelfish ended is not 08S01
at first: FreeTDS's unnamed ``HY000 Unknown error (0)`` (the session idle when killed) or its
own ``01000 Unexpected EOF from the server (20017)`` (a statement running), and while the
failed statement's cursor is open, any other statement on the connection gets ``24000 Invalid
cursor state``; only then ``08S01 Communication link failure``. ``Sender.classify`` asks the
connection (its batch cursor closed first) and calls both a lost connection when it no longer
answers. Then ``commit_surely`` and ``Sender.read`` with the replacement connection killed too.

Kill -9: ``applier run --target <ODBC connection string>`` in a subprocess of its own session
is killed with SIGKILL at a fail point (``applier/failpoints.py``:
``APPLIER_FAILPOINT=<name>@<n>``) while Babelfish, started by this process, lives on;
``--resume`` then finishes the run. An audit trigger (T-SQL, installed as the run's custom SQL)
records every row change that committed: the (operation, key) multiset must equal the
stream's, snapshot included, as in ``tests/faults/test_kill_resume.py``.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter
from typing import Any

import pyodbc
import pytest

import applier
from tests.support.faults import expected_changes, kill_at
from tests.support.killing import audited
from tests.support.runs import config, run
from tests.support.subscriber import rows

pytestmark = pytest.mark.tsql

# Every other session of this database (sys.dm_exec_sessions.database_id is the session's
# current database; @@SPID is its backend's pid).
SESSIONS = "SELECT session_id FROM sys.dm_exec_sessions WHERE database_id = DB_ID() AND session_id <> @@SPID"
LAST_ROUND = "SELECT max(last_round) FROM [applier].[progress] WHERE subscription = ?"


@pytest.fixture(scope="module")
def subscriber(babelfish: Any) -> Any:
    """A T-SQL database of this module's own: the KILLs end no other test's session."""
    return babelfish.subscriber("bbf_faults")


def _kill_sessions(cur: Any) -> int:
    """KILL every other session of the database; how many were killed. KILL takes a literal,
    not a parameter (``KILL ?``: "syntax error near '@P1'")."""
    n = 0
    for (spid,) in cur.execute(SESSIONS).fetchall():
        try:
            cur.execute(f"KILL {int(spid)}")
            n += 1
        except pyodbc.Error:
            pass  # ended meanwhile: "<spid> is not an active process ID (33557097)"
    return n


class Killer(threading.Thread):
    """KILLs every other session of the database at the given moments: once the subscription
    has committed ``rounds[i]`` rounds."""

    def __init__(self, cs: str, subscription: str, rounds: list[int]) -> None:
        super().__init__(daemon=True)
        self.cs, self.subscription, self.rounds = cs, subscription, rounds
        self.killed: list[int] = []
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            conn = pyodbc.connect(self.cs, autocommit=True)
        except pyodbc.Error as e:
            self.error = e
            return
        try:
            cur = conn.cursor()
            while not self.stop.is_set() and len(self.killed) < len(self.rounds):
                try:
                    last = cur.execute(LAST_ROUND, self.subscription).fetchone()[0]
                except pyodbc.Error:
                    last = None  # no progress table yet
                if last is not None and last >= self.rounds[len(self.killed)]:
                    self.killed.append(_kill_sessions(cur))
                time.sleep(0.005)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e
        finally:
            conn.close()


CASES = [
    # (model, partition, set-based apply)
    ("agent", "key-hash", False),
    ("agent", "key-hash", True),
    ("independent", "round-robin", False),
]


@pytest.mark.parametrize(
    ("model", "partition", "set_apply"), CASES, ids=["agent", "agent-set", "independent"]
)
def test_killed_sessions_reconnect_and_converge(spark, subscriber, model, partition, set_apply):
    target = subscriber
    name = f"bbf_lost_{model}_{int(set_apply)}"
    # 100 rounds (the PostgreSQL test's 200 take twice as long here, for nothing more)
    cfg = config(name, streams=4, batch=2, kind="uniform", transactions=200, initial_rows=100, seed=3)
    cfg = cfg.replace(run=dataclasses.replace(cfg.run, model=model, partition=partition, set_apply=set_apply))
    killer = Killer(target.connection_string, name, [4, 10, 16])
    killer.start()
    try:
        _result, report = run(spark, cfg, target)
    finally:
        killer.stop.set()
        killer.join(timeout=10)
    assert killer.error is None, killer.error
    assert len(killer.killed) == 3 and sum(killer.killed) >= 1, f"no session was killed: {killer.killed}"
    assert report["verdict"] == "converged", (report["reason"], report["divergent"][:2])
    assert sum(s.get("reconnects", 0) for s in report["streams"]) >= 1, report["streams"]
    applied = report["outcomes"].get("applied", 0) + report["outcomes"].get("reapplied", 0)
    assert applied == report["commands"], report["outcomes"]


def _spid(conn: Any) -> int:
    spid = int(conn.cursor().execute("SELECT @@SPID").fetchone()[0])
    conn.commit()
    return spid


def _end(admin: Any, spid: int) -> None:
    """KILL the session ``spid`` and wait until it is gone (KILL does not wait)."""
    admin.cursor().execute(f"KILL {int(spid)}")
    deadline = time.monotonic() + 10
    gone = "SELECT count(*) FROM sys.dm_exec_sessions WHERE session_id = ?"
    while admin.cursor().execute(gone, spid).fetchone()[0]:
        assert time.monotonic() < deadline, f"session {spid} outlived its KILL by 10 s"
        time.sleep(0.01)


class _Reconnects:
    """Replacement connections, the first ``doomed`` of them killed as soon as they exist."""

    def __init__(self, target: Any, admin: Any, doomed: int) -> None:
        self.target, self.admin, self.doomed, self.made = target, admin, doomed, 0

    def __call__(self) -> Any:
        conn = self.target.connect(1000)
        self.made += 1
        if self.made <= self.doomed:
            _end(self.admin, _spid(conn))
        return conn


def test_a_read_after_a_reconnect_survives_the_replacement_being_killed_too(subscriber):
    from applier.apply.sender import Sender
    from applier.plan.calls import Planner

    target = subscriber
    admin = pyodbc.connect(target.connection_string, autocommit=True)
    try:
        reconnect = _Reconnects(target, admin, doomed=2)
        sender = Sender(
            target.connect(1000), target.dialect, Planner(target.dialect, []), 0, False, reconnect
        )
        _end(admin, _spid(sender.conn))
        got = sender.read(lambda: sender.conn.cursor().execute("SELECT 42").fetchone()[0])
        assert got == 42
        assert reconnect.made == 3 and sender.reconnects == 3
    finally:
        admin.close()


def test_a_commit_lost_then_its_check_lost_applies_the_work_once(subscriber):
    """commit_surely: the session is killed before the commit and the replacement that should
    tell whether the commit landed is killed too: the work is applied again, exactly once."""
    from applier.apply.policy import commit_surely
    from applier.apply.sender import Sender
    from applier.plan.calls import Planner

    target = subscriber
    admin = pyodbc.connect(target.connection_string, autocommit=True)
    admin.cursor().execute("DROP TABLE IF EXISTS [dbo].[lost_commit_check]")
    admin.cursor().execute("CREATE TABLE [dbo].[lost_commit_check] (k int PRIMARY KEY)")
    count = "SELECT count(*) FROM [dbo].[lost_commit_check]"
    try:
        reconnect = _Reconnects(target, admin, doomed=1)
        sender = Sender(
            target.connect(1000), target.dialect, Planner(target.dialect, []), 0, False, reconnect
        )

        def work() -> None:
            sender.conn.cursor().execute("INSERT INTO [dbo].[lost_commit_check] VALUES (1)")

        def landed() -> bool:
            return sender.conn.cursor().execute(count).fetchone()[0] == 1

        spid = _spid(sender.conn)
        work()
        _end(admin, spid)  # the commit will find the session gone
        commit_surely(sender, landed, lambda: work(), 3, "the check")
        assert admin.cursor().execute(count).fetchone()[0] == 1
        assert reconnect.made == 2 and sender.reconnects == 2
    finally:
        admin.cursor().execute("DROP TABLE IF EXISTS [dbo].[lost_commit_check]")
        admin.close()


# -- kill -9 and --resume -----------------------------------------------------------------------
CONFIG = """
[run]
subscription = "{name}"
streams = 4
commit_batch_size = 4
model = "{model}"
set_apply = {set_apply}
snapshot_range_rows = {range_rows}

[workload]
kind = "key-chains"
initial_rows = 120
transactions = 160
key_update_share = 0.15
seed = {seed}

[[articles]]
name = "dbo.{name}"
columns = [
  {{ name = "id", type = "int", key = true }},
  {{ name = "v", type = "nvarchar(40)" }},
  {{ name = "n", type = "int" }},
]
"""

# T-SQL triggers fire once per statement: an UPDATE's rows are in inserted and deleted, an
# INSERT's in inserted only, a DELETE's in deleted only (a statement that touched no row: in
# neither). The table and the trigger share the schema's object names: they differ. The audit
# table is never dropped: an install that creates the audited table again (a load redone from
# scratch) keeps what the audit saw before, so a row loaded again shows twice.
AUDIT = """
IF OBJECT_ID(N'[dbo].[audit_{name}]', N'U') IS NULL
    CREATE TABLE [dbo].[audit_{name}] (op char(1) NOT NULL, id int NOT NULL);
GO
CREATE TRIGGER [dbo].[audit_{name}_trg] ON [dbo].[{name}] AFTER INSERT, UPDATE, DELETE AS
BEGIN
    SET NOCOUNT ON;
    IF EXISTS (SELECT * FROM inserted) AND EXISTS (SELECT * FROM deleted)
        INSERT INTO [dbo].[audit_{name}] (op, id) SELECT 'U', id FROM inserted;
    ELSE
    BEGIN
        INSERT INTO [dbo].[audit_{name}] (op, id) SELECT 'I', id FROM inserted;
        INSERT INTO [dbo].[audit_{name}] (op, id) SELECT 'D', id FROM deleted;
    END
END
"""

# (apply path, fail point, pass): during install (custom SQL run, not committed), during the
# snapshot load (a batch sent, not committed; the 2nd of its 4 key ranges committed, RANGES),
# mid-apply before a commit (a share sent), and right after a commit (one stream of a round
# committed, the others not).
MOMENTS = [
    ("agent", "install.procedures", 1),
    ("agent", "load.batch", 1),
    ("agent", "load.range", 2),
    ("set", "apply.share", 9),
    ("agent", "apply.commit", 22),
]


RANGES = {"load.range": 30}  # snapshot_range_rows: the 120 rows in 4 key ranges


@pytest.mark.parametrize(("mode", "point", "at"), MOMENTS, ids=[f"{m}-{p}@{n}" for m, p, n in MOMENTS])
def test_kill_9_then_resume_applies_each_command_once(spark, subscriber, tmp_path, mode, point, at):
    target = subscriber
    set_apply = mode == "set"
    name = f"bbf_k_{mode}_" + point.replace(".", "_") + f"_{at}"
    cfg_file = tmp_path / f"{name}.toml"
    cfg_file.write_text(
        CONFIG.format(
            name=name,
            model="agent",
            set_apply=str(set_apply).lower(),
            seed=len(name) + at,
            range_rows=RANGES.get(point, 25_000),
        ),
        encoding="utf-8",
    )
    custom = tmp_path / f"{name}-audit.sql"
    custom.write_text(AUDIT.format(name=name), encoding="utf-8")
    cfg = applier.load_config(cfg_file)
    # The subprocess reaches this process's Babelfish by its ODBC connection string.
    kill_at(target.connection_string, cfg_file, custom, point, at, tmp_path)

    _result, report = run(spark, cfg, target, resume=True, custom_sql=[custom])
    assert report["verdict"] == "converged", (report["reason"], report.get("divergent", [])[:3])
    resumed = report["outcomes"].get("resumed", 0)
    if point.startswith("apply."):  # the rounds committed before the kill were skipped
        assert 0 < resumed < report["commands"], report["outcomes"]
    else:  # killed while loading: the resume loads the key ranges not committed, and applies all
        assert resumed == 0, report["outcomes"]
    if point == "load.range":  # 2 of the 4 ranges were committed by the killed run, the rest now
        ranges = rows(
            target, "SELECT count(*), sum(row_count) FROM [applier].[ranges] WHERE subscription = ?", name
        )
        assert ranges[0][0] == 4 and ranges[0][1] == 120, ranges
    audit = audited(target, f"[dbo].[audit_{name}]")
    expected = expected_changes(cfg)
    if set_apply:
        # Set-based apply merges updates of one key inside a call: inserts and deletes are
        # still one row change per command, updates at most one per command.
        expected_u = {k: v for k, v in expected.items() if k[0] == "U"}
        got_u = {k: v for k, v in audit.items() if k[0] == "U"}
        doubled = {k: got_u[k] - expected_u.get(k, 0) for k in got_u if got_u[k] > expected_u.get(k, 0)}
        assert not doubled, (
            f"updates applied more often than the stream holds them: {list(doubled.items())[:5]}"
        )
        audit = Counter({k: v for k, v in audit.items() if k[0] != "U"})
        expected = Counter({k: v for k, v in expected.items() if k[0] != "U"})
    doubled = audit - expected
    lost = expected - audit
    assert not doubled and not lost, (
        f"{sum(doubled.values())} row changes doubled {list(doubled.items())[:5]}, "
        f"{sum(lost.values())} lost {list(lost.items())[:5]}"
    )
