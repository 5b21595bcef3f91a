"""A schema change's watermark on Babelfish (T-SQL over TDS): ``applier run`` with a stream that
adds a column mid-stream (``tests/support/segmented.py``) is killed with SIGKILL between the
ALTER TABLE (with the procedures regenerated and the watermark) and its commit, or right after
the commit; ``--resume`` then finishes the run.

Killed before the commit, the subscriber holds neither the column nor the watermark: T-SQL's
ALTER TABLE and CREATE/DROP PROCEDURE are transactional here (``applier.apply.barriers``). Killed
after it, the resume skips the change (run again, ``ALTER TABLE ... ADD`` would fail: the column
is there). Either way the run converges and a T-SQL audit trigger holds every row change of the
stream once, as in ``tests/faults/test_barrier_resume.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

import applier
from applier.report.json import subscription_report
from tests.support.killing import audited, once_each, run_killed
from tests.support.segmented import CONFIG, TSQL_CUSTOM, Stream
from tests.support.subscriber import rows

pytestmark = pytest.mark.tsql

MOMENTS = [("barrier.apply", 1), ("barrier.applied", 1)]


@pytest.fixture(scope="module")
def subscriber(babelfish: Any) -> Any:
    """A T-SQL database of this module's own."""
    return babelfish.subscriber("bbf_barriers")


@pytest.mark.parametrize(("point", "at"), MOMENTS, ids=[f"ddl-{p}@{a}" for p, a in MOMENTS])
def test_kill_9_at_a_schema_change_then_resume_applies_each_change_once(
    spark, subscriber, tmp_path, point, at
):
    target = subscriber
    name = f"bbf_ddl_{point.replace('.', '_')}"
    stream = Stream(name, seed=len(name))
    stream.traffic(20)
    stream.add_column()
    stream.traffic(20)
    changes, snapshot = stream.write(tmp_path)
    custom = tmp_path / f"{name}.sql"
    custom.write_text(TSQL_CUSTOM.format(name=name), encoding="utf-8")
    cfg_file = tmp_path / f"{name}.toml"
    cfg_file.write_text(CONFIG.format(name=name, streams=2, batch=4), encoding="utf-8")
    args = ["--config", str(cfg_file), "--changes", str(changes), "--snapshot", str(snapshot)]
    run_killed(
        [*args, "--custom-sql", str(custom), "--target", target.connection_string], point, at, tmp_path
    )

    barrier = rows(
        target, "SELECT stream, last_round FROM applier.progress WHERE subscription = ?", f"{name}/barriers"
    )
    added = rows(
        target,
        "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'dbo' AND table_name = ? "
        "AND column_name = 'extra'",
        name,
    )[0][0]
    if point == "barrier.apply":
        assert (barrier, added) == ([], 0), "the ALTER TABLE or its watermark outlived the kill"
    else:
        assert (barrier, added) == ([(0, 1)], 1)

    result = applier.run(
        applier.load_config(cfg_file),
        target,
        spark=spark,
        changes=changes,
        snapshot=snapshot,
        custom_sql=[custom],
        resume=True,
    )
    sub = result.subscriptions[0]
    report = subscription_report(sub, result.settings)
    assert report["verdict"] == "converged", (report["reason"], report.get("divergent", [])[:3])
    assert report["outcomes"].get("resumed", 0) > 0, report["outcomes"]
    assert [c["version"] for c in sub.schema_changes] == [2]
    wrong = once_each(stream.expected(), audited(target, f"[dbo].[audit_{name}]"))
    assert wrong is None, wrong
