"""``applier lint`` on custom procedures, by text and by a probe on the embedded PostgreSQL;
then the same procedures in a run: without the zero-row check the subscriber diverges, with
it the run converges."""

from __future__ import annotations

from pathlib import Path

import pytest

from applier.cli import main
from tests.support.changes import key_update, write_jsonl
from tests.support.runs import run, streams_of
from tests.support.subscriber import rows, table_exists

pytestmark = pytest.mark.integration

_UPD = """
-- custom SCALL update procedure of dbo."{table}"
CREATE OR REPLACE PROCEDURE dbo.upd_{table}(c1 integer, c2 varchar(40), c3 integer, pkc1 integer, bitmap bytea)
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE dbo."{table}" AS t SET
        id = CASE WHEN (get_byte(bitmap, 0) & 1) = 1 THEN c1 ELSE t.id END,
        v  = CASE WHEN (get_byte(bitmap, 0) & 2) = 2 THEN c2 ELSE t.v END,
        n  = CASE WHEN (get_byte(bitmap, 0) & 4) = 4 THEN c3 ELSE t.n END
    WHERE t.id = pkc1;
    {check}
END $$;
"""
_DEL = """
/* custom CALL delete procedure: IF NOT FOUND THEN RAISE in a comment does not count */
CREATE OR REPLACE PROCEDURE dbo.del_{table}(pkc1 integer)
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM dbo."{table}" AS t WHERE t.id = pkc1;
    {check}
END $$;
"""
_CHECK = (
    "IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = 'RP598', "
    "MESSAGE = 'row not found: [id] = ' || pkc1, DETAIL = '20598'; END IF;"
)
_NO_CHECK = "-- IF NOT FOUND THEN RAISE ... (forgotten)"


def _files(tmp_path: Path, table: str, check: bool) -> tuple[Path, Path]:
    c = _CHECK if check else _NO_CHECK
    sql = tmp_path / f"{table}.sql"
    sql.write_text(_UPD.format(table=table, check=c) + _DEL.format(table=table, check=c), encoding="utf-8")
    cfg = tmp_path / f"{table}.toml"
    cfg.write_text(
        f"""
[[articles]]
name = "dbo.{table}"
columns = [
  {{ name = "id", type = "int", key = true }},
  {{ name = "v", type = "nvarchar(40)" }},
  {{ name = "n", type = "int" }},
]
update = "SCALL dbo.upd_{table}"
delete = "CALL dbo.del_{table}"
""",
        encoding="utf-8",
    )
    return sql, cfg


def test_lint_flags_missing_check_by_text_and_probe(target, tmp_path, capsys):
    sql, cfg = _files(tmp_path, "lint_nocheck", check=False)
    code = main(
        ["lint", "--config", str(cfg), "--custom-sql", str(sql), "--target", target.connection_string]
    )
    out = capsys.readouterr().out
    assert code == 1, out
    for op in ("update", "delete"):
        assert (
            f"warning: dbo.lint_nocheck {op} procedure dbo.{op[:3]}_lint_nocheck (text): no zero-row check"
            in out
        )
        assert (
            f"dbo.lint_nocheck {op} procedure dbo.{op[:3]}_lint_nocheck (probe): a call with a key that does not exist succeeded"
            in out
        )
    # the probe ran in a transaction that was rolled back: no table, no procedure left behind
    assert not table_exists(target, "dbo", "lint_nocheck")
    assert rows(target, "SELECT count(*) FROM pg_proc WHERE proname = 'upd_lint_nocheck'") == [(0,)]
    # text only, without a subscriber
    code = main(["lint", "--config", str(cfg), "--custom-sql", str(sql), "--no-probe"])
    out = capsys.readouterr().out
    assert code == 1 and "(probe)" not in out and out.count("(text): no zero-row check") == 2


def test_lint_passes_procedures_with_the_check(target, tmp_path, capsys):
    sql, cfg = _files(tmp_path, "lint_check", check=True)
    code = main(
        ["lint", "--config", str(cfg), "--custom-sql", str(sql), "--target", target.connection_string]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "2 custom procedure(s) checked (text and probe): no findings" in out


def test_the_flagged_procedure_diverges_and_the_checked_one_converges(spark, target, tmp_path):
    """One run, two articles: the same key chain 1 -> 2 -> 3 on each, the two links on
    different streams of one round. The article whose procedure lint flagged loses the
    second link silently; the one with the check raises 20598, is re-applied on one
    connection and converges."""
    from applier.config import parse_config

    files = {t: _files(tmp_path, t, check)[0] for t, check in (("run_nocheck", False), ("run_check", True))}
    # Round 0 (transactions 1, 2): the unchecked chain; round 1 (3, 4): the checked chain. A
    # reset re-applies only its own round, so round 0's silent loss stays.
    records = []
    for i, t in enumerate(files):
        for xact, (old, new) in ((2 * i + 1, (1, 2)), (2 * i + 2, (2, 3))):
            records.append(key_update(xact << 20 | 1, xact, f"dbo.{t}", old, new))

    def cfg(n: int):  # type: ignore[no-untyped-def]
        cols = [
            {"name": "id", "type": "int", "key": True},
            {"name": "v", "type": "nvarchar(40)"},
            {"name": "n", "type": "int"},
        ]
        return parse_config(
            {
                "run": {"streams": n, "commit_batch_size": 2, "subscription": "lint-run"},
                "articles": [
                    {"name": f"dbo.{t}", "columns": cols, "update": f"SCALL dbo.upd_{t}"} for t in files
                ],
            }
        )

    def split(n: int) -> bool:
        s = streams_of(spark, cfg(n), records, n, tmp_path)
        return s[0] != s[1] and s[2] != s[3]  # each chain's links on two streams

    n = next(n for n in range(2, 9) if split(n))
    snap = write_jsonl(
        tmp_path / "snap.jsonl",
        [{"article": f"dbo.{t}", "image": {"id": 1, "v": "x", "n": 0}} for t in files],
    )
    changes = write_jsonl(tmp_path / "chains.jsonl", records)
    result, report = run(
        spark, cfg(n), target, changes=changes, snapshot=snap, custom_sql=list(files.values())
    )
    assert report["verdict"] == "diverged" and result.exit_code == 1
    assert {d["article"] for d in report["divergent"]} == {"dbo.run_nocheck"}
    assert rows(target, 'SELECT id FROM dbo."run_nocheck"') == [(2,)]  # the second link was lost
    assert rows(target, 'SELECT id FROM dbo."run_check"') == [(3,)]  # converged
    assert report["conflicts"]["row_not_found"] >= 1
