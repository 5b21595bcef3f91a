"""Exactly once under every kill: ``applier run`` is killed with SIGKILL (its whole process group,
as a kill -9 of the agent would) at 20 seeded moments spread over generating, installing,
loading the snapshot (before any key range committed, and after one: the resume loads only the
others), applying (a share sent, between the N streams' commits, a reset round re-applied on one
connection before and after its commit) and verifying; ``--resume`` on the same subscriber then
finishes the run.

Each converges, and an audit trigger in the subscriber (installed with the run's custom SQL,
so it is part of every install) records every row change that committed: the multiset of
(operation, key) it holds must equal the stream's own, snapshot included. A command applied
twice shows as one more entry (an update re-applied from its after image leaves the same row,
but not the same audit); a lost one as one fewer.

The moments are fail points (:mod:`applier.failpoints`): the n-th pass of a named point by
any process of the run, counted across Spark's workers, so every run is killed at the same
place.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import applier
from applier.apply.snapshot import LOADER_ROWS, RANGE_ROWS
from applier.verify.scope import AUTO_MIN_ROWS
from tests.support.faults import each_once, kill_at
from tests.support.runs import run

pytestmark = [pytest.mark.integration, pytest.mark.faults]

CONFIG = """
[run]
subscription = "{name}"
streams = 4
commit_batch_size = 4
model = "{model}"
set_apply = {set_apply}
audit_commands = {set_apply}
verify = "{verify}"

[workload]
kind = "key-chains"
initial_rows = {initial_rows}
transactions = 400
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

# The audit table is never dropped: an install that creates the audited table again (a load
# redone from scratch) keeps what the audit saw before, so a row loaded again shows twice.
AUDIT = """
CREATE TABLE IF NOT EXISTS "dbo"."audit_{name}" (op char(1) NOT NULL, id integer NOT NULL);
CREATE OR REPLACE FUNCTION "dbo"."audit_{name}"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO "dbo"."audit_{name}" VALUES ('D', OLD.id);
        RETURN OLD;
    END IF;
    INSERT INTO "dbo"."audit_{name}" VALUES (left(TG_OP, 1), NEW.id);
    RETURN NEW;
END
$$;
CREATE TRIGGER "audit_{name}" AFTER INSERT OR UPDATE OR DELETE ON "dbo"."{name}"
    FOR EACH ROW EXECUTE FUNCTION "dbo"."audit_{name}"();
"""

# (fail point, pass): 20 moments from generating to verifying, agent model, row by row.
MOMENTS = [
    ("generate.lane", 1),
    ("generate.lane", 11),
    ("install.tables", 1),
    ("install.procedures", 1),
    ("install.done", 1),
    ("load.batch", 1),  # no key range committed: the resume loads them all
    ("load.range", 1),  # 2 loaders (LARGE): one range committed, the other loader's not: loaded once
    ("load.constraints", 1),
    ("load.done", 1),
    ("apply.share", 1),
    ("apply.share", 97),
    ("apply.commit", 1),  # one stream of round 0 committed, three not
    ("apply.commit", 2),
    ("apply.commit", 130),
    ("apply.commit", 201),  # about round 50 of 100 (a round reset to one stream passes none)
    ("apply.reapply", 1),  # the first reset round applied on one connection, not committed
    ("apply.reapplied", 1),  # ... committed, the streams not yet told
    ("apply.reapply", 4),
    ("apply.done", 1),
    ("verify.read", 1),
]
# Moments that need a snapshot of several key ranges loaded by several tasks: a small one is one
# range, loaded by one (RANGE_ROWS, LOADER_ROWS).
LARGE = {("load.range", 1): 2 * max(RANGE_ROWS, LOADER_ROWS) + 5_000}
# Other apply paths, fewer moments each.
OTHER = [
    ("set", "apply.share", 5),
    ("set", "apply.commit", 9),
    ("set", "apply.reapply", 2),
    ("independent", "apply.commit", 40),
    ("independent", "apply.share", 77),
    ("independent", "apply.reapply", 3),
    # verify by the stream's keys: its keys and baselines written with the load's phase
    ("touched", "load.constraints", 1),
    ("touched", "load.done", 1),
    ("touched", "apply.commit", 9),
    ("touched", "verify.read", 1),
]


def _case(
    spark,
    pg,
    target,
    tmp_path: Path,
    name: str,
    point: str,
    at: int,
    model: str,
    set_apply: bool,
    verify: str = "auto",
):  # type: ignore[no-untyped-def]
    initial_rows = LARGE.get((point, at), 300)
    cfg_file = tmp_path / f"{name}.toml"
    cfg_file.write_text(
        CONFIG.format(
            name=name,
            model=model,
            set_apply=str(set_apply).lower(),
            seed=len(name) + at,
            verify=verify,
            initial_rows=initial_rows,
        ),
        encoding="utf-8",
    )
    custom = tmp_path / f"{name}-audit.sql"
    custom.write_text(AUDIT.format(name=name), encoding="utf-8")
    cfg = applier.load_config(cfg_file)
    kill_at(pg.connection_string(), cfg_file, custom, point, at, tmp_path)

    _result, report = run(spark, cfg, target, resume=True, custom_sql=[custom])
    assert report["verdict"] == "converged", report.get("divergent", [])[:3]
    # verify reads by the keys the killed run took (a kill before the load's phase: taken again);
    # in mode auto, a snapshot as large as LARGE's is read by keys too
    by_keys = verify == "touched" or initial_rows >= AUTO_MIN_ROWS
    assert report["verify"]["mode"] == ("keys" if by_keys else "whole"), report["verify"]
    each_once(target, cfg, name, set_apply)


@pytest.mark.parametrize(("point", "at"), MOMENTS, ids=[f"{p}@{n}" for p, n in MOMENTS])
def test_kill_9_then_resume_applies_each_command_once(spark, pg, target, tmp_path, point, at):
    name = "k_" + point.replace(".", "_") + f"_{at}"
    _case(spark, pg, target, tmp_path, name, point, at, "agent", False)


@pytest.mark.parametrize(("mode", "point", "at"), OTHER, ids=[f"{m}-{p}@{n}" for m, p, n in OTHER])
def test_kill_9_then_resume_other_apply_paths(spark, pg, target, tmp_path, mode, point, at):
    name = f"k_{mode}_" + point.replace(".", "_") + f"_{at}"
    model = "independent" if mode == "independent" else "agent"
    _case(
        spark,
        pg,
        target,
        tmp_path,
        name,
        point,
        at,
        model,
        mode == "set",
        "touched" if mode == "touched" else "auto",
    )
