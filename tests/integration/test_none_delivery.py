"""NONE delivery: the operation is not replicated, so the subscriber keeps what it would have
removed, and that is convergence, not divergence."""

from __future__ import annotations

import pytest

from applier.config import RunSettings, Workload, parse_config
from tests.support.runs import run

pytestmark = pytest.mark.integration


def test_deletes_not_replicated_keep_their_rows_and_converge(spark, target):
    cfg = parse_config(
        {
            "articles": [
                {
                    "name": "dbo.keep_all",
                    "columns": [
                        {"name": "id", "type": "int", "key": True},
                        {"name": "v", "type": "nvarchar(20)"},
                    ],
                    "delete": "NONE",
                }
            ]
        }
    )
    w = Workload(
        kind="uniform",
        initial_rows=100,
        transactions=120,
        commands_per_transaction=3,
        key_update_share=0.0,
        seed=9,
    )
    cfg = cfg.replace(workload=w, run=RunSettings(subscription="none-delivery", streams=2))
    result, report = run(spark, cfg, target)
    assert report["verdict"] == "converged", report["divergent"][:2]
    # Nothing is ever deleted at this subscriber: it holds the snapshot plus every insert.
    assert report["rows_found"] == report["rows_expected"] > 100
