"""Verify in proportion to the change (issue 32, ``applier.verify.scope``): a stream that touches a
small share of a large snapshot is read back by its keys alone, the rest of each article checked
by a digest the subscriber takes after the load and again at verify; a row changed outside the
stream's keys makes the verdict diverged, and ``verify = "full"`` reads every row as before."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Any

import pytest

from applier import failpoints
from applier.config import parse_config
from tests.support.changes import write_jsonl
from tests.support.runs import run, run_subscriptions
from tests.support.subscriber import rows

pytestmark = pytest.mark.integration

ART = "dbo.big"
SNAPSHOT_ROWS = 20_000  # the smallest snapshot mode auto reads by its keys (scope.AUTO_MIN_ROWS)
COMMANDS = 200


def _config(name: str, verify: str = "auto"):  # type: ignore[no-untyped-def]
    return parse_config(
        {
            "run": {"subscription": name, "streams": 4, "commit_batch_size": 10, "verify": verify},
            "articles": [
                {
                    "name": ART,
                    "columns": [
                        {"name": "id", "type": "int", "key": True},
                        {"name": "v", "type": "nvarchar(40)"},
                        {"name": "n", "type": "int"},
                    ],
                }
            ],
        },
        f"<test {name}>",
    )


@dataclasses.dataclass(frozen=True)
class Stream:
    changes: Path
    snapshot: Path
    final: dict[int, dict[str, Any]]  # the rows after the stream (a replay)
    touched: frozenset[int]  # every key a command touches
    updated: int  # a key a non-key update touches (and nothing later)
    untouched: int  # a key no command touches


def _stream(folder: Path, snapshot_rows: int = SNAPSHOT_ROWS, commands: int = COMMANDS) -> Stream:
    """A snapshot of ``snapshot_rows`` rows and ``commands`` commands over a few of them: non-key
    updates, key changes, deletes and inserts, one transaction of two commands each."""
    rnd = random.Random(32)
    rows_ = {i: {"id": i, "v": f"row {i}", "n": i % 7} for i in range(1, snapshot_rows + 1)}
    snap = write_jsonl(
        folder / "snapshot.jsonl", [{"article": ART, "image": dict(r)} for r in rows_.values()]
    )
    out, touched, fresh = [], set(), snapshot_rows + 1
    last_update: dict[int, int] = {}
    for lsn in range(1, commands + 1):
        base = {"lsn": lsn, "xact_seqno": 1 + (lsn - 1) // 2, "command_id": 1 + (lsn - 1) % 2, "article": ART}
        roll = rnd.random()
        if roll < 0.3:  # an insert of a new key
            after = {"id": fresh, "v": f"new {lsn}", "n": lsn}
            out.append({**base, "op": "I", "after": after})
            rows_[fresh] = after
            touched.add(fresh)
            fresh += 1
            continue
        k = rnd.choice(sorted(rows_)[: snapshot_rows // 2])  # the lower half: the rest stays untouched
        before = rows_[k]
        touched.add(k)
        if roll < 0.7:  # a non-key update
            after = {**before, "v": f"upd {lsn}", "n": before["n"] + 1}
            out.append({**base, "op": "U", "before": before, "after": after})
            rows_[k] = after
            last_update[k] = lsn
        elif roll < 0.85:  # a key change to a new key
            after = {**before, "id": fresh}
            out.append({**base, "op": "U", "before": before, "after": after})
            del rows_[k]
            rows_[fresh] = after
            touched.add(fresh)
            fresh += 1
            last_update.pop(k, None)
        else:
            out.append({**base, "op": "D", "before": before})
            del rows_[k]
            last_update.pop(k, None)
    changes = write_jsonl(folder / "changes.jsonl", out)
    updated = max(k for k in last_update if k in rows_)
    untouched = snapshot_rows  # the upper half is never touched
    assert untouched not in touched
    return Stream(changes, snap, rows_, frozenset(touched), updated, untouched)


@pytest.fixture(scope="module")
def stream(tmp_path_factory: pytest.TempPathFactory) -> Stream:
    return _stream(tmp_path_factory.mktemp("verify-scope"))


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Stream:
    """A snapshot mode auto reads whole: the tests that ask for mode touched."""
    return _stream(tmp_path_factory.mktemp("verify-scope-small"), 2_000, 100)


def _own_tables(target) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(
        r[0]
        for r in rows(
            target, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'applier'"
        )
    )


def test_a_few_commands_over_a_large_snapshot_read_back_only_their_rows(spark, pg, stream) -> None:
    target = pg.subscriber("scope_small_share")
    result, report = run(
        spark, _config("scope_small_share"), target, changes=stream.changes, snapshot=stream.snapshot
    )
    assert report["verdict"] == "converged", report["divergent"][:2]
    v = report["verify"]
    present = len(stream.touched & set(stream.final))
    # the rows read are the touched keys' rows the subscriber holds: 2 a command at most
    assert v["mode"] == "keys" and v["requested"] == "auto"
    assert v["rows_read"] == present and present <= 2 * COMMANDS
    art = v["articles"][ART]
    assert art["read"] == "keys" and art["touched_keys"] == len(stream.touched)
    assert art["rest_rows"] == len(stream.final) - present
    # the rows outside the keys are counted in, as the digest found them
    assert report["rows_expected"] == report["rows_found"] == len(stream.final)
    assert report["by_article"][ART]["expected"] == len(stream.final)
    # the stream's keys and the baselines are gone once verified: only applier's own tables stay
    assert _own_tables(target) == sorted(target.dialect.OWN_TABLES)
    assert rows(target, 'SELECT count(*) FROM "applier"."baselines"') == [(0,)]
    # taking the keys is one Spark job of the prepare phase; verify still runs one
    assert result.cost["prepare"]["jobs"] <= 4 and result.cost["verify"]["jobs"] == 1, result.cost


SPILL = """
CREATE FUNCTION dbo.spill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id = {hit} THEN  -- an update the stream makes also changes a row it never touches
        {action};
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER spill AFTER UPDATE ON dbo.big FOR EACH ROW EXECUTE FUNCTION dbo.spill();
"""
ACTIONS = {
    "changed": "UPDATE dbo.big SET v = 'behind applier''s back' WHERE id = {victim}",
    "went": "DELETE FROM dbo.big WHERE id = {victim}",
}


def _spill(stream: Stream, tmp_path: Path, what: str) -> Path:
    custom = tmp_path / f"spill-{what}.sql"
    action = ACTIONS[what].format(victim=stream.untouched)
    custom.write_text(SPILL.format(hit=stream.updated, action=action), encoding="utf-8")
    return custom


@pytest.mark.parametrize(
    ("what", "mode"), [("changed", "auto"), pytest.param("went", "touched", marks=pytest.mark.e2e)]
)
def test_a_row_changed_outside_the_stream_s_keys_diverges_and_is_named(
    spark, pg, stream, small, tmp_path, what, mode
) -> None:
    """A trigger at the subscriber: the stream's update of one row also changes (or deletes) a
    row no command touches. The digest of the rest differs: diverged, with a one-line reason;
    the article is then read whole, and the row named."""
    s = stream if mode == "auto" else small
    name = f"scope_spill_{what}"
    _, report = run(
        spark,
        _config(name, mode),
        pg.subscriber(name),
        changes=s.changes,
        snapshot=s.snapshot,
        custom_sql=[_spill(s, tmp_path, what)],
    )
    assert report["verdict"] == "diverged"
    reason = report["reason"]
    assert "\n" not in reason and reason.startswith(
        f"{ART}: rows outside the stream's keys changed, appeared or went"
    )
    snapshot_rows = SNAPSHOT_ROWS if mode == "auto" else 2_000
    rest = snapshot_rows - len(s.touched & set(range(1, snapshot_rows + 1)))
    assert reason.endswith(f"({rest:,} rows -> {rest - (what == 'went'):,})"), reason
    v = report["verify"]
    assert v["articles"][ART]["read"] == "whole" and v["articles"][ART]["rest"] == "changed"
    # read whole, the row is named: kind and key, and no command of the stream touched it
    (d,) = report["divergent"]
    assert d["key"] == [s.untouched] and d["kind"] == ("different" if what == "changed" else "missing")
    assert d["commands"] == []


def test_verify_full_reads_every_row_and_names_the_row(spark, pg, small, tmp_path) -> None:
    name = "scope_spill_full"
    _, full = run(
        spark,
        _config(name, "full"),
        pg.subscriber(name),
        changes=small.changes,
        snapshot=small.snapshot,
        custom_sql=[_spill(small, tmp_path, "changed")],
    )
    assert full["verdict"] == "diverged" and full["reason"] is None
    assert full["verify"]["mode"] == "whole" and full["verify"]["rows_read"] == len(small.final)
    assert full["verify"]["articles"][ART]["why"] == "asked for (--verify full)"
    assert [(x["key"], x["kind"], x["columns"]) for x in full["divergent"]] == [
        ([small.untouched], "different", ["v"])
    ]


def test_a_filtered_subscription_is_read_by_its_keys(spark, pg) -> None:
    """Two filtered subscribers (one with a column list) of a generated stream whose updates move
    rows in and out of each filter and change keys: each is read by the stream's keys and
    converges to the oracle filtered its way."""
    cfg = parse_config(
        {
            "run": {"streams": 2, "commit_batch_size": 20, "verify": "touched"},
            "workload": {
                "kind": "uniform",
                "initial_rows": 400,
                "transactions": 30,
                "commands_per_transaction": 3,
                "key_update_share": 0.2,
            },
            "articles": [
                {
                    "name": "dbo.gen",
                    "columns": [
                        {"name": "id", "type": "int", "key": True},
                        {"name": "v", "type": "nvarchar(40)"},
                        {"name": "n", "type": "int"},
                    ],
                }
            ],
            "subscriptions": [
                {
                    "name": "even_n",
                    "articles": [{"name": "dbo.gen", "where": "n % 2 = 0", "columns": ["id", "n"]}],
                },
                {"name": "low_ids", "articles": [{"name": "dbo.gen", "where": "id < 300"}]},
            ],
        },
        "<test filtered by keys>",
    )
    res, targets = run_subscriptions(spark, pg, cfg, "scope_filtered")
    for s in res.subscriptions:
        assert s.verdict.value == "converged", (s.name, s.check.to_json())
        v = s.check.verify
        assert v["mode"] == "keys", v
        held = rows(targets[s.name], 'SELECT count(*) FROM "dbo"."gen"')[0][0]
        keys = v["articles"]["dbo.gen"]["touched_keys"]
        assert s.check.rows_found == held and 0 < v["rows_read"] <= keys <= 2 * 90 and v["rows_read"] < held
    assert sum(s.routing.get("U>D", 0) + s.routing.get("U>I", 0) for s in res.subscriptions) > 0


def test_a_run_stopped_after_its_load_resumes_and_verifies_by_its_keys(spark, pg, small, monkeypatch) -> None:
    """The baselines are in the subscriber, written with the load's phase: a run stopped right
    after the load (as a kill there would) resumes, and verify reads it by the keys and digests
    the first process took."""
    name = "scope_resume"
    target = pg.subscriber(name)

    class Stopped(Exception):
        pass

    def reach(point: str) -> None:
        if point == "load.done":
            raise Stopped(point)

    monkeypatch.setattr(failpoints, "reach", reach)
    with pytest.raises(Stopped):
        run(spark, _config(name, "touched"), target, changes=small.changes, snapshot=small.snapshot)
    monkeypatch.undo()
    assert rows(target, 'SELECT phase FROM "applier"."runs"') == [("loaded",)]
    held = rows(target, 'SELECT article, touched_keys FROM "applier"."baselines"')
    assert held == [(ART, len(small.touched))]
    _, report = run(
        spark, _config(name, "touched"), target, changes=small.changes, snapshot=small.snapshot, resume=True
    )
    assert report["verdict"] == "converged", report["divergent"][:2]
    assert report["verify"]["mode"] == "keys"
    assert report["verify"]["rows_read"] == len(small.touched & set(small.final))
    assert report["rows_found"] == len(small.final)


@pytest.mark.e2e  # longer: make test-e2e (the Babelfish cases: make test-tsql)
def test_a_change_behind_applier_s_back_while_it_was_down_is_seen(spark, pg, small, monkeypatch) -> None:
    name = "scope_resume_spill"
    target = pg.subscriber(name)

    class Stopped(Exception):
        pass

    def reach(point: str) -> None:
        if point == "load.done":
            raise Stopped(point)

    monkeypatch.setattr(failpoints, "reach", reach)
    with pytest.raises(Stopped):
        run(spark, _config(name, "touched"), target, changes=small.changes, snapshot=small.snapshot)
    monkeypatch.undo()
    rows(target, 'DELETE FROM "dbo"."big" WHERE id = ? RETURNING id', small.untouched)
    _, report = run(
        spark, _config(name, "touched"), target, changes=small.changes, snapshot=small.snapshot, resume=True
    )
    assert report["verdict"] == "diverged"
    assert [(d["key"], d["kind"]) for d in report["divergent"]] == [([small.untouched], "missing")]


# Every column type the digest must see a change of, with two values each (None: NULL). The
# rows outside the stream's keys are checked by it alone: a change it misses is a divergence
# verify misses.
TYPED = [
    ("tiny", "tinyint", 7, 8),
    ("small", "smallint", -3, 3),
    ("big", "bigint", 2**40, 2**40 + 1),
    ("flag", "bit", True, False),
    ("amount", "decimal(12,2)", "10.50", "10.51"),
    ("price", "money", "1.2345", "1.2346"),
    ("ratio", "float", 1 / 3, 1 / 3 + 2**-52),  # the last bit of a double
    ("r4", "real", 0.5, 0.50000006),  # the last bit of a single
    ("code", "char(4)", "ab  ", "abc "),
    ("name", "varchar(20)", "a|b", "a|c"),
    ("uname", "nvarchar(20)", "名前", "名後"),
    ("note", "nvarchar(max)", "", None),  # empty is not NULL
    ("day", "date", "2024-03-10", "2024-03-11"),
    ("tod", "time(6)", "10:11:12.000001", "10:11:12.000002"),
    ("old", "datetime", "2024-03-10T10:11:12.003000", "2024-03-10T10:11:12.007000"),
    ("at", "datetime2(6)", "2024-03-10T10:11:12.123456", "2024-03-10T10:11:12.123457"),
    ("when", "datetimeoffset(6)", "2024-03-10T10:11:12.000000+01:00", "2024-03-10T10:11:12.000001+01:00"),
    (
        "ref",
        "uniqueidentifier",
        "8e2f3c1a-1b2c-4d5e-8f90-0123456789ab",
        "8e2f3c1a-1b2c-4d5e-8f90-0123456789ac",
    ),
    ("blob", "varbinary(16)", "AAE=", "AAI="),
    ("fixed", "binary(2)", "AAE=", "AQA="),
]


def test_the_rest_digest_sees_a_change_of_every_column_type(any_target) -> None:
    """The subscriber's digest of an article's rest: equal for the same rows in any order,
    different when any one value of any type changes (NULL and '' included), equal again once
    it is put back."""
    from applier.apply.install import install
    from applier.articles import Article, Column, parse_type
    from applier.verify.scope import rest_digests

    cols = [Column("id", parse_type("int"), False)] + [Column(n, parse_type(t)) for n, t, _, _ in TYPED]
    art = Article("scope", "typed", tuple(cols), ("id",))
    d = any_target.dialect
    install(any_target, [art], "scope-typed")
    conn = any_target.connect()
    try:
        cur = conn.cursor()
        for stmt in d.touched_ddl(art):  # no key touched: every row is the rest
            cur.execute(stmt)
        conn.commit()
        a = {n: x for n, _, x, _ in TYPED}

        def put(rows_: list[dict[str, Any]]) -> None:
            cur.execute(f"DELETE FROM {d.table(art)}")
            cur.execute(d.bulk_insert_sql(art), json.dumps(rows_))
            conn.commit()

        first = [{"id": i, **a} for i in (1, 2, 3)]
        put(first)
        base = rest_digests(any_target, [art])[art.name]
        assert base is not None and base[0] == 3
        put(list(reversed(first)))
        assert rest_digests(any_target, [art])[art.name] == base  # order plays no part
        missed = []
        for n, _, _, other in TYPED:
            put([first[0], {**first[1], n: other}, first[2]])
            if rest_digests(any_target, [art])[art.name] == base:
                missed.append(n)
        assert missed == []
        put(first)
        assert rest_digests(any_target, [art])[art.name] == base
    finally:
        conn.close()


SPILL_TSQL = """
CREATE TRIGGER dbo.spill ON dbo.big AFTER UPDATE AS
BEGIN
    SET NOCOUNT ON;
    IF EXISTS (SELECT 1 FROM inserted WHERE id = {hit})
        UPDATE dbo.big SET v = N'behind applier''s back' WHERE id = {victim};
END
"""
SPILL_PG = SPILL.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION").format(
    hit="{hit}", action=ACTIONS["changed"]
)


@pytest.mark.e2e  # longer: make test-e2e (the Babelfish cases: make test-tsql)
@pytest.mark.parametrize("spill", [False, True], ids=["converges", "spills"])
def test_read_by_its_keys_on_every_engine(spark, any_target, small, tmp_path, spill) -> None:
    """Mode touched on each engine (T-SQL's digest is HASHBYTES over the row's text): the rows
    read are the touched keys' rows; a trigger's change of a row outside them is diverged."""
    custom = []
    if spill:
        text = SPILL_TSQL if any_target.dialect.language == "tsql" else SPILL_PG
        custom.append(tmp_path / "spill.sql")
        custom[0].write_text(text.format(hit=small.updated, victim=small.untouched), encoding="utf-8")
    name = f"scope_engine_{int(spill)}"
    _, report = run(
        spark,
        _config(name, "touched"),
        any_target,
        changes=small.changes,
        snapshot=small.snapshot,
        custom_sql=custom,
    )
    if not spill:
        assert report["verdict"] == "converged", report["divergent"][:2]
        assert report["verify"]["mode"] == "keys"
        assert report["verify"]["rows_read"] == len(small.touched & set(small.final))
        assert report["rows_found"] == len(small.final)
        return
    assert report["verdict"] == "diverged"
    assert report["reason"].startswith(f"{ART}: rows outside the stream's keys changed, appeared or went")
    assert [(d["key"], d["kind"]) for d in report["divergent"]] == [([small.untouched], "different")]


def _hazard(workload: str, partition: str, model: str, policy: str, verify: str):  # type: ignore[no-untyped-def]
    from applier.config import ErrorPolicy, RunSettings, Workload, demo_config

    return demo_config().replace(
        workload=Workload(kind=workload, transactions=192, initial_rows=0, seed=11),
        run=RunSettings(
            subscription=f"scope-{workload}",
            streams=4,
            partition=partition,
            model=model,
            lock_timeout_ms=300,
            error_policy=ErrorPolicy.parse(policy),
            verify=verify,
        ),
    )


HAZARDS = [
    ("reorder", "round-robin", "independent", "strict"),  # a silent lost update, an inverted pair
    ("key-chain", "key-hash", "agent", "continue-on-data-consistency-errors"),  # skipped links
]


@pytest.mark.e2e  # longer: make test-e2e (the Babelfish cases: make test-tsql)
@pytest.mark.parametrize("hazard", HAZARDS, ids=[h[0] for h in HAZARDS])
def test_a_divergence_inside_the_keys_is_found_and_blamed_as_the_full_check_does(
    spark, any_target, hazard
) -> None:
    """Read by its keys, a divergent subscriber gives what the full check of the same subscriber
    gives (a resume of the finished run with verify full: nothing left to apply, the whole
    subscriber read): counts, rows, their blame's commands; and the blame itself as before."""
    _, keys = run(spark, _hazard(*hazard, "touched"), any_target)
    _, full = run(spark, _hazard(*hazard, "full"), any_target, resume=True)
    assert keys["verdict"] == full["verdict"]
    # key chains under the skip policy always diverge; the reorder race nearly always does
    assert keys["verdict"] == "diverged" or hazard[0] == "reorder"
    assert keys["verify"]["mode"] == "keys" and full["verify"]["mode"] == "whole"
    # no snapshot: every row the subscriber holds has a key the stream touches
    assert keys["verify"]["rows_read"] == full["verify"]["rows_read"] == full["rows_found"] > 0
    for k in ("divergence", "rows_expected", "rows_found", "by_article"):
        assert keys[k] == full[k], k

    def rows_(report: dict[str, Any]) -> list[Any]:
        fields = ("article", "key", "kind", "expected", "found", "columns")
        return [(*(d[f] for f in fields), [c["lsn"] for c in d["commands"]]) for d in report["divergent"]]

    assert rows_(keys) == rows_(full)
    if hazard[0] == "reorder" and keys["divergent"]:  # a silent lost update: the inverted pair
        d = keys["divergent"][0]
        assert d["kind"] == "different" and d["inverted"] is not None
    elif hazard[0] == "key-chain":  # each skipped link leaves its row at the middle key
        assert keys["skipped"] > 0 and keys["divergent_rows"] == 2 * keys["skipped"]
        assert keys["skips"]["rows_lost"] == keys["divergent_rows"]


@pytest.mark.e2e  # longer: make test-e2e (the Babelfish cases: make test-tsql)
def test_keys_that_cannot_be_taken_leave_a_verify_that_reads_every_row(spark, pg, small, monkeypatch) -> None:
    """Reading by the keys only saves time: where the keys cannot be uploaded, the run goes on
    and verify reads every row, saying why."""
    from applier.verify import scope

    def refuse(*_: Any) -> None:
        raise RuntimeError("no room for the keys")

    monkeypatch.setattr(scope, "_create_keys_tables", refuse)
    name = "scope_no_keys"
    _, report = run(
        spark, _config(name, "touched"), pg.subscriber(name), changes=small.changes, snapshot=small.snapshot
    )
    assert report["verdict"] == "converged", report["divergent"][:2]
    v = report["verify"]
    assert v["mode"] == "whole" and v["rows_read"] == len(small.final)
    assert v["articles"][ART]["why"] == "no digest of its rows outside the stream's keys in the subscriber"
