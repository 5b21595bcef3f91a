"""`applier generate` writes canonical files that `--changes/--snapshot` read back: the same
stream, converging the same way; writing again into the same folder replaces the output."""

from __future__ import annotations

import pytest

from applier.config import RunSettings, Workload, demo_config
from applier.sources.dataset import generate, write_changes
from tests.support.runs import run

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_generated_files_read_back_and_converge(spark, target, tmp_path, fmt):
    cfg = demo_config().replace(
        workload=Workload(
            kind="key-chains", initial_rows=120, transactions=100, key_update_share=0.1, seed=4
        ),
        run=RunSettings(subscription=f"roundtrip-{fmt}", streams=2, commit_batch_size=25),
    )
    cs = generate(spark, cfg)
    write_changes(cs, tmp_path, fmt)
    ch, sn = write_changes(cs, tmp_path, fmt)  # again: replaces the first output
    n = cs.changes.count()
    result, report = run(spark, cfg, target, changes=ch, snapshot=sn)
    assert report["commands"] == n == 500
    assert report["snapshot_rows"] == 240
    assert report["verdict"] == "converged", report["divergent"][:2]
