"""Generated workloads converge at N = 1, 2, 4, 8; with key changes and N > 1 the agent resets."""

from __future__ import annotations

import pytest

from applier.config import RunSettings, Workload, demo_config
from tests.support.runs import run

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("workload", ["key-chains", "uniform"])
@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_workload_converges(spark, any_target, workload, n):
    cfg = demo_config().replace(
        workload=Workload(
            kind=workload,
            initial_rows=300,
            transactions=400,
            commands_per_transaction=5,
            key_update_share=0.08,
            chain_length=3,
            seed=7,
        ),
        run=RunSettings(subscription=f"{workload}-{n}", streams=n, commit_batch_size=50),
    )
    result, report = run(spark, cfg, any_target)
    assert report["verdict"] == "converged", report["divergent"][:3]
    assert result.exit_code == 0
    assert report["commands"] == 400 * 5
    assert report["transactions"] == 400
    assert report["rows_found"] == report["rows_expected"] > 0
    applied = report["outcomes"].get("applied", 0) + report["outcomes"].get("reapplied", 0)
    assert applied == report["commands"]
    if n == 1:
        assert report["resets"] == 0 and sum(report["conflicts"].values()) == 0
    else:
        assert report["resets"] > 0
        assert report["conflicts"]["row_not_found"] > 0
