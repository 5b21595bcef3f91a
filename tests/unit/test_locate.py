"""Finding the command of a failed chunk by running it again (applier.apply.locate), without a
database: the search over pieces, the savepoint around a chunk of several commands, the
replay where an error rolls the whole transaction back (SQL Server), the error policy's
codes for primary-key and unique-index duplicates."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import pyodbc
import pytest

from applier.apply.blame import CHUNK_SAVEPOINT
from applier.apply.failure import commands
from applier.apply.locate import culprit, first_failing, same_kind
from applier.apply.sender import Sender
from applier.config import ErrorPolicy, parse_config
from applier.dialects.postgres import PostgresDialect
from applier.dialects.tsql import TsqlDialect
from applier.plan.calls import Planner


class Fake:
    """Statements that fail on their own (``fails[i]``: a class or None) regardless of order;
    counts the pieces run."""

    def __init__(self, fails: Sequence[str | None]) -> None:
        self.fails = fails
        self.pieces: list[tuple[int, int]] = []

    def __call__(self, a: int, b: int) -> str | None:
        self.pieces.append((a, b))
        return next((f for f in self.fails[a:b] if f is not None), None)


@pytest.mark.parametrize("n", [2, 3, 7, 64, 1000, 2500])
def test_the_first_failing_statement_is_found_in_about_2_log2_n_pieces(n: int) -> None:
    for at in {0, 1, n // 2, n - 1}:
        fails: list[str | None] = [None] * n
        fails[at] = "row_not_found"
        run = Fake(fails)
        assert culprit(n, run, "row_not_found") == (at, True)
        assert len(run.pieces) <= 2 * math.ceil(math.log2(n)) + 1
        assert all(b - a < n for a, b in run.pieces)  # the whole chunk is known to fail: not run again


def test_a_statement_failing_otherwise_is_passed_over_for_the_one_raising_the_error() -> None:
    # statement 3 now waits for a lock another stream took; statement 9 raised the chunk's error
    fails = [None, None, None, "lock_timeout", None, None, None, None, None, "row_not_found", None]
    assert culprit(len(fails), Fake(fails), "row_not_found") == (9, True)
    # no statement raises it again: the first that failed otherwise is named, and said so
    fails[9] = None
    assert culprit(len(fails), Fake(fails), "row_not_found") == (3, False)
    # none fails: the error did not happen again
    assert culprit(len(fails), Fake([None] * 11), "row_not_found") is None


def test_a_deadlock_victim_meets_the_lock_again() -> None:
    assert same_kind("deadlock", "lock_timeout") and same_kind("lock_timeout", "deadlock")
    assert not same_kind("row_not_found", "lock_timeout")
    assert culprit(4, Fake([None, None, "lock_timeout", None]), "deadlock") == (2, True)


def test_first_failing_keeps_the_pieces_before_the_culprit() -> None:
    fails: list[str | None] = [None] * 5 + ["x"] + [None] * 2
    run = Fake(fails)
    assert first_failing(0, 8, run) == (5, "x")
    kept = [(a, b) for a, b in run.pieces if all(f is None for f in fails[a:b])]
    assert sorted(i for a, b in kept for i in range(a, b)) == [0, 1, 2, 3, 4]


# -- the sender, on a connection that records what it is sent ------------------------------
ART = parse_config(
    {
        "articles": [
            {
                "name": "dbo.t",
                "columns": [{"name": "id", "type": "int", "key": True}, {"name": "v", "type": "nvarchar(9)"}],
            }
        ]
    },
    "<t>",
).articles[0]


def _row(lsn: int, key: int, op: str = "U") -> dict[str, Any]:
    img = json.dumps({"id": key, "v": "x"})
    return {
        "lsn": lsn,
        "xact_seqno": lsn,
        "article": ART.name,
        "op": op,
        "before": img if op != "I" else None,
        "after": img if op != "D" else None,
        "changed": ["v"],
        "key_before": json.dumps([key]) if op != "I" else None,
        "key_after": json.dumps([key]) if op != "D" else None,
    }


class Conn:
    """Records every text; raises ``error`` for a statement that binds ``bad`` (any statement
    of the text). ``aborts``: an error rolls the whole transaction back (XACT_ABORT ON)."""

    def __init__(self, bad: int, error: tuple[str, str], aborts: bool) -> None:
        self.bad, self.error, self.aborts = bad, error, aborts
        self.texts: list[str] = []
        self.applied: list[Any] = []  # values of the statements that took effect
        self.rollbacks = 0

    def cursor(self) -> Conn:
        return self

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.texts.append(sql)
        if self.bad in params:
            if self.aborts:
                self.applied.clear()
            raise pyodbc.Error(*self.error)
        self.applied.extend(p for p in params if isinstance(p, int))

    def nextset(self) -> bool:
        return False

    def rollback(self) -> None:
        self.rollbacks += 1
        self.applied.clear()


PG_NOT_FOUND = ("RP598", "[RP598] ERROR: ... (20598) (1) (SQLExecDirectW)")
TSQL_NOT_FOUND = (
    "42000",
    "[42000] [Microsoft][ODBC Driver 18 for SQL Server][SQL Server]Row was not found. (20598)",
)


def test_postgres_chunks_of_several_commands_start_with_a_savepoint_and_one_command_does_not() -> None:
    d = PostgresDialect()
    conn = Conn(bad=-1, error=PG_NOT_FOUND, aborts=False)
    sender = Sender(conn, d, Planner(d, [ART]), 0)
    assert sender.send(sender.calls([_row(1, 1)])) is None
    assert sender.send(sender.calls([_row(2, 1), _row(3, 2)])) is None
    one, two = conn.texts
    assert CHUNK_SAVEPOINT not in one
    assert two.startswith(d.savepoint_sql(CHUNK_SAVEPOINT) + ";\n")
    assert two.endswith(";\n" + str(d.release_savepoint_sql(CHUNK_SAVEPOINT)))


def test_postgres_search_rolls_back_to_the_chunk_savepoint_under_a_short_lock_timeout() -> None:
    d = PostgresDialect()
    conn = Conn(bad=77, error=PG_NOT_FOUND, aborts=False)
    sender = Sender(conn, d, Planner(d, [ART]), 0)
    rows = [_row(10 + k, k) for k in (1, 2, 5, 8, 77, 9, 20)]
    f = sender.send(sender.calls(rows))
    assert f is not None and (f.cls, f.lsn, f.located) == ("row_not_found", 87, "rerun")
    search = conn.texts[1:]
    assert search[0].startswith(d.rollback_to_savepoint_sql(CHUNK_SAVEPOINT))
    assert all("SET LOCAL lock_timeout = 20" in t for t in search)
    assert sender.round_trips == len(conn.texts) and conn.rollbacks == 0  # the caller rolls back


def test_a_lost_connection_is_not_searched_and_a_failure_the_caller_skips_is_not_either() -> None:
    d = PostgresDialect()
    conn = Conn(bad=5, error=("08S01", "[08S01] could not send data to server"), aborts=False)
    sender = Sender(conn, d, Planner(d, [ART]), 0)
    f = sender.send(sender.calls([_row(1, 1), _row(2, 5)]))
    assert f is not None and f.connection_lost and (f.lsn, f.located) == (None, "unlocated")
    assert len(conn.texts) == 1
    conn = Conn(bad=5, error=PG_NOT_FOUND, aborts=False)
    sender = Sender(conn, d, Planner(d, [ART]), 0)
    f = sender.send(sender.calls([_row(1, 1), _row(2, 5)]), locate=lambda f: f.cls != "row_not_found")
    assert f is not None and (f.lsn, f.located) == (None, "unlocated") and len(conn.texts) == 1


def test_sql_server_applies_the_chunks_before_again_then_the_failed_one_statement_by_statement() -> None:
    d = TsqlDialect()
    conn = Conn(bad=4242, error=TSQL_NOT_FOUND, aborts=True)
    sender = Sender(conn, d, Planner(d, [ART]), 0)
    rows = [_row(1000 + k, k) for k in range(1, 600)]
    rows.insert(550, _row(9, 4242))
    calls = sender.calls(rows)
    f = sender.send(calls)
    assert f is not None and (f.cls, f.code, f.lsn, f.located) == ("row_not_found", "20598", 9, "rerun")
    assert not any("SAVE TRANSACTION" in t for t in conn.texts)  # XACT_ABORT ON: no savepoint helps
    first_chunk = conn.texts[0]
    n_first = first_chunk.count("EXEC ")
    assert 0 < n_first < 550 and conn.rollbacks == 1
    # after the failed chunk: the first chunk again, whole, then one statement per round trip
    assert conn.texts[2] == first_chunk
    singles = conn.texts[3:]
    assert all(t.count("EXEC ") == 1 for t in singles) and len(singles) == 550 - n_first + 1


def test_postgres_chunks_past_the_savepoint_budget_go_without_and_are_applied_again(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import applier.apply.blame as blame_module

    monkeypatch.setattr(blame_module, "GUARDED_CHUNKS", 1)  # PostgreSQL caches 64 subxids
    d = PostgresDialect()
    conn = Conn(bad=99999, error=PG_NOT_FOUND, aborts=True)
    sender = Sender(conn, d, Planner(d, [ART]), 0)
    rows = [_row(1000 + k, k) for k in range(1, 8000)]
    rows.insert(6000, _row(9, 99999))
    f = sender.send(sender.calls(rows))
    assert f is not None and (f.lsn, f.located) == (9, "rerun")
    first, second = conn.texts[:2]
    assert first.startswith("SAVEPOINT") and not second.startswith("SAVEPOINT")
    # rolled back; the first chunk applied again (its savepoint is no use now), then one by one
    assert conn.rollbacks == 1 and conn.texts[2] in first and conn.texts[2].count("CALL ") == 5000
    assert all(t.count("CALL ") == 1 for t in conn.texts[3:]) and len(conn.texts[3:]) == 1001


def test_commands_counts_a_set_based_calls_rows() -> None:
    d = PostgresDialect()
    sender = Sender(None, d, Planner(d, [ART]), 0, set_apply=True)
    calls = sender.calls([_row(1, 1), _row(2, 2), _row(3, 3)])
    assert len(calls) == 1 and [r["lsn"] for r in commands(calls)] == [1, 2, 3]
    assert len(commands(calls, at_most=2)) == 2


def test_skip_codes_tell_unique_indexes_from_primary_keys() -> None:
    only_2601 = ErrorPolicy.parse("skip:2601")
    assert only_2601.skips("unique_index", "23505") and not only_2601.skips("duplicate_key", "23505")
    only_2627 = ErrorPolicy.parse("skip:2627")  # a PRIMARY KEY's or a UNIQUE constraint's
    assert only_2627.skips("duplicate_key", "23505") and only_2627.skips("unique_index", "23505")
    both = ErrorPolicy.parse("continue-on-data-consistency-errors")
    assert both.skips("unique_index", "2601") and both.skips("duplicate_key", "2627")
