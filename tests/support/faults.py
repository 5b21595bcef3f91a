"""Kill -9 and audit helpers for the fault tests (tests/faults/): ``applier run`` killed at a fail
point in a session of its own, an audit of every row change the subscriber committed (embedded
PostgreSQL), and the (operation, key) multiset a generated stream must leave there.

The audit's triggers fire once per statement and read the statement's transition table, so a
1,000,000-row snapshot load costs one audit INSERT per load statement, not one per row.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyodbc

from applier.sources import hazards
from applier.sources.generator import LANES, generate_lane
from applier.targets.progress import ProgressTable
from tests.support.killing import audited, run_killed

# Installed with the run's custom SQL (part of every install). The audit table is never dropped:
# an install that drops and creates the audited table again (a load redone from scratch) keeps
# what the audit saw before, so a row loaded again shows twice. PostgreSQL allows a transition
# table on a trigger of one event only: three triggers.
AUDIT = """
CREATE TABLE IF NOT EXISTS "dbo"."audit_{name}" (op char(1) NOT NULL, id integer NOT NULL);
CREATE OR REPLACE FUNCTION "dbo"."audit_{name}_i"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO "dbo"."audit_{name}" SELECT 'I', id FROM added; RETURN NULL; END $$;
CREATE OR REPLACE FUNCTION "dbo"."audit_{name}_u"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO "dbo"."audit_{name}" SELECT 'U', id FROM added; RETURN NULL; END $$;
CREATE OR REPLACE FUNCTION "dbo"."audit_{name}_d"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO "dbo"."audit_{name}" SELECT 'D', id FROM removed; RETURN NULL; END $$;
CREATE TRIGGER "audit_{name}_i" AFTER INSERT ON "dbo"."{name}" REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION "dbo"."audit_{name}_i"();
CREATE TRIGGER "audit_{name}_u" AFTER UPDATE ON "dbo"."{name}" REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION "dbo"."audit_{name}_u"();
CREATE TRIGGER "audit_{name}_d" AFTER DELETE ON "dbo"."{name}" REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION "dbo"."audit_{name}_d"();
"""


def audit_file(tmp: Path, name: str) -> Path:
    """The custom SQL file that audits table ``dbo.<name>``."""
    path = tmp / f"{name}-audit.sql"
    path.write_text(AUDIT.format(name=name), encoding="utf-8")
    return path


def expected_changes(cfg: Any, snapshot: bool = True) -> Counter[tuple[str, int]]:
    """The (operation, key) of every row change a generated stream makes (its snapshot's rows as
    inserts, unless ``snapshot`` is False)."""
    lanes = hazards.generate_lane if cfg.workload.kind in hazards.HAZARDS else generate_lane
    out: Counter[tuple[str, int]] = Counter()
    for lane in range(LANES):
        for kind, r in lanes(cfg.articles, cfg.workload, lane):
            if kind == "snapshot":
                if snapshot:
                    out["I", json.loads(r[2])["id"]] += 1
                continue
            op, before, after = r[4], r[6], r[7]
            image = json.loads(after if op in "IU" else before)
            out[op, image["id"]] += 1
    return out


def expected_lsns(cfg: Any) -> Counter[int]:
    """The lsn of every command a generated stream holds, once each: what ``[run]
    audit_commands`` records (``applier.applied_commands``) after an exactly-once apply."""
    lanes = hazards.generate_lane if cfg.workload.kind in hazards.HAZARDS else generate_lane
    return Counter(
        int(r[0])
        for lane in range(LANES)
        for kind, r in lanes(cfg.articles, cfg.workload, lane)
        if kind != "snapshot"
    )


def kill_at(connection_string: str, cfg_file: Path, custom: Path, point: str, at: int, tmp: Path) -> None:
    """``applier run`` of ``cfg_file`` with ``custom`` on ``connection_string``, killed with SIGKILL
    at the ``at``-th pass of the fail point ``point`` (:mod:`applier.failpoints`); fails the test
    if it was not, or if ``applier clean`` leaves anything in its scratch folders."""
    args = ["--config", str(cfg_file), "--custom-sql", str(custom), "--target", connection_string]
    run_killed(args, point, at, tmp)


def each_once(target: Any, cfg: Any, name: str, set_apply: bool) -> None:
    """Every row change of the generated stream of ``cfg`` (snapshot included) in the audit of
    ``dbo.<name>`` once: none doubled, none lost. Set-based apply merges the updates of one key
    inside a call, so the trigger sees fewer updates than commands: there every command is
    counted by the commits' own record of the commands they carried (``[run] audit_commands``),
    each exactly once, and the audit's inserts and deletes once."""
    audit = audited(target, '"dbo"."audit_' + name + '"')
    expected = expected_changes(cfg)
    if set_apply:
        conn = pyodbc.connect(target.connection_string, autocommit=True)
        try:
            carried = Counter(ProgressTable(target.dialect).audited(conn.cursor(), name))
        finally:
            conn.close()
        want = expected_lsns(cfg)
        twice, missing = carried - want, want - carried
        assert not twice and not missing, (
            f"{sum(twice.values())} commands committed twice {sorted(twice)[:5]}, "
            f"{sum(missing.values())} never {sorted(missing)[:5]} (of {sum(want.values())})"
        )
        audit = Counter({k: v for k, v in audit.items() if k[0] != "U"})
        expected = Counter({k: v for k, v in expected.items() if k[0] != "U"})
    doubled, lost = audit - expected, expected - audit
    assert not doubled and not lost, (
        f"{sum(doubled.values())} row changes doubled {list(doubled.items())[:5]}, "
        f"{sum(lost.values())} lost {list(lost.items())[:5]}"
    )
