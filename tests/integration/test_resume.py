"""Exactly once: a run stopped part-way and resumed on the same subscriber applies each
command once, skipping what the progress table shows committed."""

from __future__ import annotations

import json

import pytest

from applier.config import RunSettings, Workload, demo_config
from applier.sources.generator import LANES, generate_lane
from tests.integration.helpers import run, write_jsonl

pytestmark = pytest.mark.integration


def _records(cfg):
    snap, changes = [], []
    for lane in range(LANES):
        for kind, r in generate_lane(cfg.articles, cfg.workload, lane):
            if kind == "snapshot":
                snap.append({"article": r[0], "image": json.loads(r[2])})
            else:
                lsn, x, c, art, op, _v, before, after, changed, _kb, _ka = r
                changes.append(
                    {
                        "lsn": lsn,
                        "xact_seqno": x,
                        "command_id": c,
                        "article": art,
                        "op": op,
                        "before": json.loads(before) if before else None,
                        "after": json.loads(after) if after else None,
                        "changed": changed,
                    }
                )
    return snap, sorted(changes, key=lambda r: r["lsn"])


def test_resumed_run_applies_nothing_twice(spark, any_target, tmp_path):
    cfg = demo_config().replace(
        workload=Workload(
            kind="key-chains", initial_rows=200, transactions=160, key_update_share=0.1, seed=5
        ),
        run=RunSettings(subscription="resume", streams=4, commit_batch_size=20),
    )
    snap, changes = _records(cfg)
    head = [c for c in changes if c["xact_seqno"] <= 80]  # the first 4 rounds: "the crash"
    snap_f = write_jsonl(tmp_path / "snap.jsonl", snap)
    _, first = run(
        spark, cfg, any_target, changes=write_jsonl(tmp_path / "head.jsonl", head), snapshot=snap_f
    )
    assert first["verdict"] == "converged"

    result, report = run(
        spark,
        cfg,
        any_target,
        changes=write_jsonl(tmp_path / "all.jsonl", changes),
        snapshot=snap_f,
        resume=True,
    )
    assert report["outcomes"]["resumed"] == len(head)
    assert report["outcomes"].get("applied", 0) + report["outcomes"].get("reapplied", 0) == len(
        changes
    ) - len(head)
    assert report["verdict"] == "converged", report["divergent"][:2]
