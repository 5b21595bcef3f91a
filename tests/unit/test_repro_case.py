"""Run folders read back and the case as records (applier.repro.case), outcomes compared
(applier.repro.runner): no database, no Spark."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from applier.config import Config, parse_config
from applier.errors import InputError
from applier.repro.case import Case, config_file_dict, config_from_dict, describe, read_records, read_run_dir
from applier.repro.runner import differences, error_outcome, same_failure
from applier.sources.hazards import hazard_articles

ARTICLE = {
    "name": "dbo.t",
    "columns": [{"name": "id", "type": "int", "key": True}, {"name": "v", "type": "nvarchar(10)"}],
}


def _config(**run) -> Config:
    return parse_config({"run": run, "workload": {"kind": "uniform"}, "articles": [ARTICLE]}, "<t>")


def _rec(lsn, xact, op="U", before=None, after=None):
    return {
        "lsn": lsn,
        "xact_seqno": xact,
        "command_id": 1,
        "article": "dbo.t",
        "op": op,
        "before": before,
        "after": after,
    }


def test_config_json_round_trips():
    cfg = _config(streams=3, schedule="controlled", schedule_seed=9)
    back = config_from_dict(json.loads(json.dumps(cfg.to_dict())), "config.json")
    assert back.run == cfg.run and back.articles == cfg.articles and back.source == "<t>"


def test_config_json_of_a_hazard_workload_drops_its_placeholder_articles():
    cfg = parse_config({"workload": {"kind": "reorder"}}, "<t>")
    back = config_from_dict(cfg.to_dict(), "config.json")
    assert back.workload.kind == "reorder"
    from applier.repro.case import case_config

    assert case_config(back).articles == hazard_articles()
    assert "workload" not in config_file_dict(case_config(back), workload=False)
    # A case's configuration (the hazard's articles, no workload) is a configuration file again.
    parse_config(config_file_dict(case_config(back), workload=False), "<case>")


def test_a_redacted_subscription_target_is_refused():
    d = _config().to_dict()
    d["subscriptions"] = [{"name": "s", "target": "***"}]
    with pytest.raises(InputError, match="own target"):
        config_from_dict(d, "config.json")


def test_read_run_dir_names_what_is_missing(tmp_path):
    with pytest.raises(InputError, match="no such run folder"):
        read_run_dir(tmp_path / "nope")
    with pytest.raises(InputError, match=r"not a run folder \(no config.json"):
        read_run_dir(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(_config().to_dict()))
    (tmp_path / "inputs.json").write_text(
        json.dumps({"changes": str(tmp_path / "gone.jsonl"), "snapshot": None})
    )
    with pytest.raises(InputError, match="gone"):
        read_run_dir(tmp_path)
    (tmp_path / "changes.jsonl").write_text(json.dumps(_rec(1, 1, "I", None, {"id": 1, "v": "a"})) + "\n")
    (tmp_path / "inputs.json").write_text(
        json.dumps(
            {"changes": str(tmp_path / "changes.jsonl"), "snapshot": None, "custom_sql": ["custom/00-x.sql"]}
        )
    )
    f = read_run_dir(tmp_path)
    assert f.outcome is None and f.schedule is None and f.verdict == "unknown"
    assert f.custom_sql == (tmp_path / "custom" / "00-x.sql",)


def test_records_from_json_lines_folders_and_parquet(tmp_path):
    recs = [_rec(2, 1, "I", None, {"id": 1, "v": "a"}), _rec(5, 2, "D", {"id": 1, "v": "a"})]
    folder = tmp_path / "changes"
    folder.mkdir()
    (folder / "part-0.jsonl").write_text(json.dumps(recs[0]) + "\n\n")
    (folder / "part-1.jsonl").write_text(json.dumps(recs[1]) + "\n")
    (folder / "_SUCCESS").write_text("")
    assert read_records(folder) == recs
    table = pa.table(
        {
            "lsn": [2],
            "xact_seqno": [1],
            "command_id": [1],
            "article": ["dbo.t"],
            "op": ["U"],
            "schema_version": [1],
            "before": ['{"id":1,"v":"a"}'],
            "after": ['{"id":1,"v":"b"}'],
            "changed": [["v"]],
            "key_before": ["[1]"],
            "key_after": ["[1]"],
        }
    )
    pq.write_table(table, tmp_path / "c.parquet")
    assert read_records(tmp_path / "c.parquet") == [
        {
            "lsn": 2,
            "xact_seqno": 1,
            "command_id": 1,
            "article": "dbo.t",
            "op": "U",
            "schema_version": 1,
            "before": {"id": 1, "v": "a"},
            "after": {"id": 1, "v": "b"},
            "changed": ["v"],
        }
    ]
    snap = pa.table({"article": ["dbo.t"], "key": ["[1]"], "image": ['{"id":1,"v":"a"}']})
    pq.write_table(snap, tmp_path / "s.parquet")
    assert read_records(tmp_path / "s.parquet") == [{"article": "dbo.t", "image": {"id": 1, "v": "a"}}]
    (tmp_path / "bad.jsonl").write_text("{nope\n")
    with pytest.raises(InputError, match="bad.jsonl:1"):
        read_records(tmp_path / "bad.jsonl")


def test_case_cuts_and_writes(tmp_path):
    a, b = {"id": 1, "v": "a"}, {"id": 2, "v": "b"}
    case = Case(
        (_rec(10, 1, "U", a, {**a, "v": "x"}), _rec(11, 1, "U", b, {**b, "v": "y"}), _rec(20, 2, "D", a)),
        ({"article": "dbo.t", "image": a}, {"article": "dbo.t", "image": b}),
    )
    assert case.transactions == [1, 2]
    assert case.keep_transactions([2]).sizes() == {"transactions": 1, "commands": 1, "snapshot_rows": 2}
    assert [r["lsn"] for r in case.keep_commands([11, 20]).changes] == [11, 20]
    assert case.keep_rows([1]).snapshot == ({"article": "dbo.t", "image": b},)
    ch, sn = case.write(tmp_path / "c")
    assert (
        read_records(ch) == list(case.changes) and sn is not None and read_records(sn) == list(case.snapshot)
    )
    ch, sn = case.keep_rows(()).write(tmp_path / "c")
    assert sn is None and not (tmp_path / "c" / "snapshot.jsonl").exists()
    lines = describe(_config(), case)
    assert lines[0] == 'snapshot dbo.t {"id": 1, "v": "a"}'
    assert 'xact 1 lsn 10 U dbo.t [1]: v "a" -> "x"' in lines
    assert "xact 2 lsn 20 D dbo.t [1]" in lines


def test_same_failure_and_differences():
    div = {"verdict": "diverged", "conflicts": [], "divergent": [["dbo.t", [3]]]}
    assert same_failure(div, {**div, "divergent": [["dbo.t", [4]]]})  # the verdict is what shrink keeps
    assert not same_failure(div, {"verdict": "converged", "conflicts": [], "divergent": []})
    err = error_outcome(RuntimeError("boom\nmore"))
    assert err["error"] == "RuntimeError: boom"
    assert same_failure(err, error_outcome(RuntimeError("other")))
    assert not same_failure(err, error_outcome(ValueError("boom")))
    assert differences(div, json.loads(json.dumps(div))) == []  # lists from JSON compare as recorded
    got = differences(div, {"verdict": "converged", "conflicts": [[5, 1, "row_not_found"]], "divergent": []})
    assert got[0] == "verdict diverged then, converged now"
    assert got[1].startswith('conflicts: 0 then, 1 now: 1 new (first [5, 1, "row_not_found"])')
    assert got[2].startswith('divergent: 1 then, 0 now: 1 gone (first ["dbo.t", [3]])')


def test_lineage_follows_a_row_through_its_key_changes():
    from applier.repro.shrink import _Rows, _seeds

    def u(lsn, old, new):
        return _rec(lsn, lsn, "U", {"id": old, "v": "a"}, {"id": new, "v": "a"})

    case = Case(
        (
            _rec(1, 1, "I", None, {"id": 1, "v": "a"}),
            u(2, 7, 8),  # another row
            u(3, 1, 2),  # chain link 1
            u(4, 2, 3),  # chain link 2
            _rec(5, 5, "D", {"id": 3, "v": "a"}),  # found no row: how the lost link came to light
            u(6, 8, 9),
        )
    )
    rows = _Rows(case, _config())
    assert rows.lineage("dbo.t", "[3]", 5) == {1, 3, 4}
    assert rows.lineage("dbo.t", "[3]", float("inf")) == {1, 3, 4, 5}
    assert rows.lineage("dbo.t", "[9]", float("inf")) == {2, 6}
    outcome = {"verdict": "diverged", "conflicts": [[5, 0, "row_not_found"]], "divergent": [["dbo.t", [9]]]}
    report = {
        "divergent": [
            {"article": "dbo.t", "key": [9], "commands": [{"lsn": 6, "outcome": "not_applied"}]},
            {
                "article": "dbo.t",
                "key": [2],
                "commands": [{"lsn": 3, "outcome": "applied"}],
                "inverted": {"first": 3, "second": 4},
            },
        ]
    }
    # The conflict's history without it, then with it; rows never applied are passed over.
    assert _seeds(case, _config(), outcome, report) == [{1, 3, 4}, {1, 3, 4, 5}, {3, 4}]


def test_a_slice_is_closed_under_row_history():
    from applier.repro.shrink import _Rows

    def u(lsn, xact, old, new):
        return _rec(lsn, xact, "U", {"id": old, "v": "a"}, {"id": new, "v": "a"})

    case = Case(
        (
            _rec(1, 1, "I", None, {"id": 5, "v": "a"}),
            u(2, 2, 1, 2),
            u(3, 3, 2, 3),
            _rec(4, 3, "U", {"id": 5, "v": "a"}, {"id": 5, "v": "b"}),  # needs the insert of xact 1
            u(5, 4, 9, 9),
        )
    )
    rows = _Rows(case, _config())
    xact_of = {r["lsn"]: r["xact_seqno"] for r in case.changes}
    assert rows.closed([3], xact_of) == [1, 2, 3]
    assert rows.closed([4], xact_of) == [4]
    assert rows.closed([3], xact_of, limit=2) is None


def test_export_without_a_recorded_schedule_runs_its_own_seed_again(tmp_path):
    """A try that raised before its steps were recorded (explore writes its outcome): the
    export keeps the controlled seed, and says so; T-SQL scripts on request."""
    from applier.repro.export import export

    run = tmp_path / "run"
    run.mkdir()
    cfg = _config(schedule="controlled", schedule_seed=5, streams=2)
    (run / "config.json").write_text(json.dumps(cfg.to_dict()))
    changes = tmp_path / "changes.jsonl"
    changes.write_text(json.dumps(_rec(1, 1, "I", None, {"id": 1, "v": "it's"})) + "\n")
    (run / "inputs.json").write_text(
        json.dumps({"changes": str(changes), "snapshot": None, "custom_sql": []})
    )
    (run / "outcome.json").write_text(json.dumps(error_outcome(RuntimeError("boom"))))
    x = export(run, tmp_path / "x", dialect="tsql")
    assert "schedule.jsonl" not in x.files and x.steps == 0
    saved = json.loads((x.out / "config.json").read_text())["run"]
    assert (saved["schedule"], saved["schedule_strategy"], saved["schedule_seed"]) == ("controlled", "pct", 5)
    assert "schedule_file" not in saved or saved["schedule_file"] is None
    assert json.loads((x.out / "repro.json").read_text())["schedule"] is None
    assert "create table [dbo].[t]" in (x.out / "ddl.sql").read_text().lower()
    assert "-- the initial snapshot: 0 row(s)" in (x.out / "setup.sql").read_text()
    assert "RuntimeError: boom" in (x.out / "README.md").read_text()
    compile((x.out / "test_repro.py").read_text(), "test_repro.py", "exec")
    # Without a controlled schedule to run again there is nothing to export.
    (run / "config.json").write_text(json.dumps(_config().to_dict()))
    with pytest.raises(InputError, match="nothing to export"):
        export(run, tmp_path / "y")
