"""applier explore, replay, shrink and export on a small stream of seeded bug 2 (a subscriber
trigger that drops an order line whose order is not there yet): found, replayed, shrunk to its
two transactions, exported (shrink and export, a dozen runs, under make test-faults). The three
seeded bugs at full size (1,000 transactions, budget 200, the exported test failing then
passing) are in test_repro_bugs.py (make test-faults)."""

from __future__ import annotations

import json
import py_compile

import pytest

from applier.cli import main
from applier.config import load_config, parse_config
from applier.repro.explore import explore
from applier.repro.export import export
from applier.repro.shrink import shrink
from tests.support.repro_streams import DATA, config, orders_stream

pytestmark = pytest.mark.integration

BUG = DATA / "order_lines_trigger.sql"
FIX = DATA / "order_lines_trigger_fixed.sql"


@pytest.fixture(scope="module")
def found(spark, target, tmp_path_factory):  # type: ignore[no-untyped-def]
    """An exploration of 20 transactions (10 orders, each line in the next transaction)."""
    work = tmp_path_factory.mktemp("repro-tools")
    changes = orders_stream(work / "stream", 10)
    cfg = config("orders", subscription="repro_tools")
    ex = explore(cfg, target, budget=5, out=work / "explore", changes=changes, custom_sql=[BUG], spark=spark)
    return work, changes, ex


def test_explore_stops_at_the_first_failing_schedule_and_keeps_its_run_folder(found):
    work, changes, ex = found
    assert ex.found is not None and ex.found.verdict == "diverged" and ex.found.divergent >= 1
    assert ex.tries[-1] == ex.found and all(t.verdict == "converged" for t in ex.tries[:-1])
    assert ex.run_dir == work / "explore" / f"seed-{ex.found.seed}"
    assert sorted(p.name for p in (work / "explore").iterdir()) == ["explore.json", ex.run_dir.name]
    saved = json.loads((work / "explore" / "explore.json").read_text())
    assert saved["found"]["seed"] == ex.found.seed and saved["strategy"] == "pct"
    for name in ("config.json", "inputs.json", "report.json", "schedule.jsonl", "outcome.json"):
        assert (ex.run_dir / name).is_file(), name
    run = json.loads((ex.run_dir / "config.json").read_text())["run"]
    assert (run["schedule"], run["schedule_strategy"], run["schedule_seed"]) == (
        "controlled",
        "pct",
        ex.found.seed,
    )
    outcome = json.loads((ex.run_dir / "outcome.json").read_text())
    assert {a for a, _ in outcome["divergent"]} == {"dbo.order_lines"}  # lines lost, silently
    assert outcome["conflicts"] == []


def test_every_try_starts_from_a_fresh_subscriber(spark, target, tmp_path):
    """The fixed trigger converges on every schedule: each try installs its tables anew and
    loads the snapshot again (a try on the last one's rows would meet duplicate keys)."""
    changes = orders_stream(tmp_path, 6)
    snapshot = tmp_path / "snap.jsonl"
    snapshot.write_text(
        "\n".join(
            json.dumps({"article": "dbo.orders", "image": {"id": 900 + i, "customer": "x"}}) for i in range(3)
        )
    )
    cfg = config("orders", subscription="repro_fresh")
    ex = explore(
        cfg,
        target,
        budget=2,
        out=tmp_path / "explore",
        changes=changes,
        snapshot=snapshot,
        custom_sql=[FIX],
        spark=spark,
    )
    assert ex.found is None and [t.verdict for t in ex.tries] == ["converged"] * 2
    assert [t.snapshot_rows for t in ex.tries] == [3, 3]
    assert [t.seed for t in ex.tries] == [0, 1]
    assert sorted(p.name for p in (tmp_path / "explore").iterdir()) == ["explore.json"]


def test_replay_gives_the_recorded_outcome_back(found, tmp_path, capsys):
    _, _, ex = found
    assert main(["replay", str(ex.run_dir), "--out", str(tmp_path / "again")]) == 0
    assert "same outcome as recorded" in capsys.readouterr().out
    assert json.loads((tmp_path / "again" / "outcome.json").read_text()) == json.loads(
        (ex.run_dir / "outcome.json").read_text()
    )
    steps = [json.loads(x) for x in (tmp_path / "again" / "schedule.jsonl").read_text().splitlines()]
    recorded = [json.loads(x) for x in (ex.run_dir / "schedule.jsonl").read_text().splitlines()]
    assert [(s["stream"], s["kind"], s["lsns"]) for s in steps] == [
        (s["stream"], s["kind"], s["lsns"]) for s in recorded
    ]
    run = json.loads((tmp_path / "again" / "config.json").read_text())["run"]
    assert run["schedule_strategy"] == "recorded" and run["schedule_file"] == str(
        (ex.run_dir / "schedule.jsonl").resolve()
    )


def test_replay_says_what_differs(found, target, monkeypatch, capsys):
    """Exit 1 and the differences when the outcome is not the recorded one (the run itself is
    stood in for: replay's comparison is what is tested here), 2 when there is no run folder."""
    import applier.repro.replay as replay_module
    from applier.repro.runner import Attempt

    _, _, ex = found
    recorded = json.loads((ex.run_dir / "outcome.json").read_text())
    got = {**recorded, "divergent": recorded["divergent"][:-1], "conflicts": [[7, 1, "row_not_found"]]}
    monkeypatch.setattr(replay_module, "attempt", lambda *a, **k: Attempt(got, 0.1))
    assert main(["replay", str(ex.run_dir), "--target", target.connection_string]) == 1
    out = capsys.readouterr().out
    assert "different outcome:" in out
    assert 'conflicts: 0 then, 1 now: 1 new (first [7, 1, "row_not_found"])' in out
    assert f"divergent: {len(recorded['divergent'])} then, {len(got['divergent'])} now: 1 gone" in out
    assert main(["replay", str(ex.run_dir.parent / "nothing")]) == 2
    assert "no such run folder" in capsys.readouterr().err


@pytest.fixture(scope="module")
def shrunk(found, spark, target):  # type: ignore[no-untyped-def]
    work, _, ex = found
    lines: list[str] = []
    return shrink(ex.run_dir, target, out=work / "shrunk", spark=spark, say=lines.append), lines


@pytest.mark.faults  # a shrink is a dozen runs: minutes
def test_shrink_keeps_the_order_and_its_line(shrunk):
    s, lines = shrunk
    assert s.reproduced and s.outcome is not None and s.outcome["verdict"] == "diverged"
    assert s.original == {"transactions": 20, "commands": 20, "snapshot_rows": 0, "streams": 4}
    assert s.minimal["transactions"] == 2 and s.minimal["commands"] == 2 and s.minimal["snapshot_rows"] == 0
    (order,), (line,) = [
        [r for r in s.case.changes if r["article"] == a] for a in ("dbo.orders", "dbo.order_lines")
    ]
    assert line["after"]["order_id"] == order["after"]["id"] and order["lsn"] < line["lsn"]
    assert [p.name for p in s.phases] == ["transactions", "commands", "snapshot rows", "streams"]
    assert s.phases[0].before == 20 and s.phases[0].after == 2 and s.runs == sum(p.runs for p in s.phases) + 1
    assert (
        any("serially" in x for x in lines) or s.phases[0].runs >= 2
    )  # a cut that fails serially is not kept
    d = s.run_dir
    assert d is not None
    for name in ("config.json", "inputs.json", "schedule.jsonl", "outcome.json", "shrink.json", "case.txt"):
        assert (d / name).is_file(), name
    figures = json.loads((d / "shrink.json").read_text())
    assert figures["minimal"]["transactions"] == 2 and figures["runs"] == s.runs
    inputs = json.loads((d / "inputs.json").read_text())
    assert inputs["changes"] == str((d / "case" / "changes.jsonl").resolve())


@pytest.mark.faults  # a shrink is a dozen runs: minutes
def test_export_writes_a_self_contained_reproducer(shrunk, tmp_path):
    s, _ = shrunk
    x = export(s.run_dir, tmp_path / "x")
    out = x.out
    for name in (
        "README.md",
        "config.json",
        "changes.jsonl",
        "schedule.jsonl",
        "outcome.json",
        "ddl.sql",
        "procedures.sql",
        "setup.sql",
        "interleaved.sql",
        "test_repro.py",
        "repro.json",
        "custom/00-order_lines_trigger.sql",
    ):
        assert (out / name).is_file(), name
    assert not (out / "snapshot.jsonl").exists()
    assert (out / "custom/00-order_lines_trigger.sql").read_text() == BUG.read_text()
    cfg = parse_config(json.loads((out / "config.json").read_text()), "config.json")
    assert (cfg.run.schedule, cfg.run.schedule_strategy, cfg.run.schedule_file) == (
        "controlled",
        "recorded",
        "schedule.jsonl",
    )
    assert cfg.run.model == "independent" and cfg.run.streams == s.minimal["streams"]
    assert 'CREATE TABLE "dbo"."order_lines"' in (out / "ddl.sql").read_text()
    assert "sp_MSins_dboorder_lines" in (out / "procedures.sql").read_text()
    setup = (out / "setup.sql").read_text()
    assert (
        setup.index("CREATE TABLE")
        < setup.index("sp_MSins_dboorders")
        < setup.index("order_lines_need_order")
    )
    sql = (out / "interleaved.sql").read_text()
    body = [ln for ln in sql.splitlines() if ln and not ln.startswith("--")]
    assert body[0] == "BEGIN;" and body.count("BEGIN;") == body.count("COMMIT;") == 2
    assert 'CALL "sp_MSins_dboorder_lines"(CAST(' in sql and "-- session " in sql
    # The line goes in before its order: the reordering the recorded schedule holds.
    assert sql.index('"sp_MSins_dboorder_lines"(') < sql.index('"sp_MSins_dboorders"(')
    py_compile.compile(str(out / "test_repro.py"), doraise=True)
    text = (out / "test_repro.py").read_text()
    assert "tests." not in text and "conftest" not in text and "shared" not in text
    load_config(out / "config.json")  # also a configuration file for applier run --config
    # A second export over the first is allowed; over someone else's folder it is not.
    export(s.run_dir, out)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("x")
    assert main(["export", str(s.run_dir), "--out", str(tmp_path / "mine")]) == 2


def _sessions(script: str) -> list[tuple[int, str]]:
    """interleaved.sql as (session, statement) in order: each statement under the comment
    naming its session."""
    out, session = [], None
    for line in script.splitlines():
        if line.startswith("-- session "):
            session = int(line.split()[2])
        elif line.strip() and not line.startswith("--"):
            assert session is not None
            out.append((session, line))
    return out


@pytest.mark.faults  # a shrink is a dozen runs: minutes
def test_the_exported_sql_replays_the_bug_by_hand(shrunk, pg, tmp_path):
    """What a DBA does with the export: setup.sql, then interleaved.sql's statements each in
    the session its comment names, in order; the line is lost as in the run."""
    import pyodbc

    s, _ = shrunk
    out = export(s.run_dir, tmp_path / "x").out
    db = pg.subscriber("repro_by_hand")
    setup = pyodbc.connect(db.connection_string, autocommit=True)
    setup.cursor().execute((out / "setup.sql").read_text())
    steps = _sessions((out / "interleaved.sql").read_text())
    conns = {n: pyodbc.connect(db.connection_string, autocommit=True) for n in {n for n, _ in steps}}
    try:
        assert len(conns) >= 2 and [x for _, x in steps].count("COMMIT;") == 2
        for n, stmt in steps:
            conns[n].cursor().execute(stmt)
        cur = setup.cursor()
        assert cur.execute("SELECT count(*) FROM dbo.orders").fetchone()[0] == 1
        assert cur.execute("SELECT count(*) FROM dbo.order_lines").fetchone()[0] == 0  # dropped
    finally:
        for c in (setup, *conns.values()):
            c.close()


def test_tries_on_the_same_articles_empty_the_tables_the_last_one_installed(spark, pg, tmp_path):
    """explore's tries (and shrink's runs) reuse the tables an earlier try installed with the
    same articles and custom SQL: emptied and loaded again (the table's OID stays), never a
    database holding anything else (the orders' trigger is installed anew each time above)."""
    import pyodbc

    from applier.config import with_overrides

    cfg = with_overrides(
        load_config(DATA / "key_chain.toml"),
        run={"subscription": "repro_warm"},
        workload={"transactions": 40, "initial_rows": 30},
    )
    target = pg.subscriber("repro_warm")  # a database of its own: nothing else in it
    oids: list[int] = []
    rows: list[int] = []

    def seen(_try) -> None:  # type: ignore[no-untyped-def]
        conn = pyodbc.connect(target.connection_string, autocommit=True)
        try:
            oids.append(conn.execute("SELECT 'dbo.kc_rows'::regclass::oid::bigint").fetchone()[0])
            rows.append(conn.execute("SELECT COUNT(*) FROM dbo.kc_rows").fetchone()[0])
        finally:
            conn.close()

    ex = explore(
        cfg,
        target,
        budget=3,
        out=tmp_path / "explore",
        custom_sql=[DATA / "key_chain_update_fixed.sql"],
        spark=spark,
        on_try=seen,
    )
    assert [t.verdict for t in ex.tries] == ["converged"] * 3, ex.tries
    assert len(set(oids)) == 1, oids  # installed once, emptied twice
    assert [t.snapshot_rows for t in ex.tries] == [30] * 3  # each try loaded the snapshot again
    assert len(set(rows)) == 1, rows  # and ended where the others did
