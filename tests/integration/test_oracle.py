"""The key-event oracle (computed in Spark) against a plain in-memory serial replay."""

from __future__ import annotations

import json

import pytest

from applier.config import Workload, demo_config
from applier.records.schema import CHANGE_SCHEMA, SNAPSHOT_SCHEMA, make_lsn
from applier.sources.generator import LANES, generate_lane
from applier.verify.oracle import digest_diff, digested, oracle, oracle_digest

pytestmark = pytest.mark.integration
A = "dbo.t"


def replay(snapshot, changes):
    """Apply every command in commit order to a dict: the obvious, slow truth."""
    rows = {(a, k): img for a, k, img in snapshot}
    for c in sorted(changes, key=lambda c: c[0]):
        _lsn, _x, _c, art, op, _v, _before, after, _ch, kb, ka = c
        if op in ("U", "D"):
            assert (art, kb) in rows, f"replay: lsn {c[0]} finds no row {kb}"
            del rows[(art, kb)]
        if op in ("I", "U"):
            rows[(art, ka)] = after
    return rows


def cmd(x, op, before=None, after=None):
    img = lambda k, v: json.dumps({"id": k, "v": v}, separators=(",", ":"), sort_keys=True)  # noqa: E731
    b = img(*before) if before else None
    a = img(*after) if after else None
    return (
        make_lsn(x, 1),
        x,
        1,
        A,
        op,
        1,
        b,
        a,
        [],
        f"[{before[0]}]" if before else None,
        f"[{after[0]}]" if after else None,
    )


SEQUENCES = {
    # inserts only
    "insert": [cmd(1, "I", after=(5, "a")), cmd(2, "I", after=(6, "b"))],
    # a non-key update keeps the key: the produce after the remove wins
    "update": [cmd(1, "U", before=(1, "x"), after=(1, "y"))],
    "delete": [cmd(1, "D", before=(1, "x"))],
    # 1 -> 2 -> 3: only 3 survives
    "key_chain": [cmd(1, "U", before=(1, "x"), after=(2, "x")), cmd(2, "U", before=(2, "x"), after=(3, "x"))],
    # a <-> b through a temporary key
    "key_swap": [
        cmd(1, "U", before=(1, "x"), after=(9, "x")),
        cmd(2, "U", before=(2, "y"), after=(1, "y")),
        cmd(3, "U", before=(9, "x"), after=(2, "x")),
    ],
    "delete_then_reinsert": [cmd(1, "D", before=(1, "x")), cmd(2, "I", after=(1, "z"))],
    "insert_into_vacated_key": [cmd(1, "U", before=(1, "x"), after=(7, "x")), cmd(2, "I", after=(1, "n"))],
    "insert_update_delete": [
        cmd(1, "I", after=(8, "a")),
        cmd(2, "U", before=(8, "a"), after=(8, "b")),
        cmd(3, "D", before=(8, "b")),
    ],
}
SNAP = [
    (A, "[1]", json.dumps({"id": 1, "v": "x"}, separators=(",", ":"))),
    (A, "[2]", json.dumps({"id": 2, "v": "y"}, separators=(",", ":"))),
]


def spark_oracle(spark, snapshot, changes):
    got = oracle(
        spark.createDataFrame(changes, CHANGE_SCHEMA), spark.createDataFrame(snapshot, SNAPSHOT_SCHEMA)
    )
    return {(r["article"], r["key"]): r["image"] for r in got.collect()}


def digest_oracle(spark, snapshot, changes):
    got = oracle_digest(
        spark.createDataFrame(changes, CHANGE_SCHEMA), spark.createDataFrame(snapshot, SNAPSHOT_SCHEMA)
    )
    return {(r["article"], r["key"]): tuple(r["image"]) for r in got.collect()}


def digests_of(spark, rows):
    """The digests of a replay's rows, computed by the same Spark expression."""
    df = spark.createDataFrame([(a, k, img) for (a, k), img in rows.items()], SNAPSHOT_SCHEMA)
    return {(r["article"], r["key"]): tuple(r["image"]) for r in digested(df).collect()}


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_oracle_matches_serial_replay(spark, name):
    changes = SEQUENCES[name]
    truth = replay(SNAP, changes)
    assert spark_oracle(spark, SNAP, changes) == truth
    # the digest oracle (hash aggregate, used for the counts) holds the same rows, same texts
    assert digest_oracle(spark, SNAP, changes) == digests_of(spark, truth)


def test_digests_tell_texts_apart(spark):
    texts = ['{"id":1,"v":"x"}', '{"id":1,"v":"y"}', '{"id":1,"v":"x "}', '{"v":"x","id":1}', ""]
    rows = {(A, str(i)): t for i, t in enumerate(texts)}
    got = digests_of(spark, rows)
    assert len(set(got.values())) == len(texts)
    assert all(h1 != h2 for h1, h2 in got.values())  # two hashes, not one twice
    assert digests_of(spark, {(A, "x"): texts[0]})[(A, "x")] == got[(A, "0")]


@pytest.mark.parametrize("kind", ["uniform", "key-chains"])
def test_oracle_matches_replay_on_generated_streams(spark, kind):
    cfg = demo_config()
    w = Workload(
        kind=kind, initial_rows=64, transactions=160, commands_per_transaction=4, key_update_share=0.3
    )
    snap, changes = [], []
    for lane in range(LANES):
        for what, r in generate_lane(cfg.articles, w, lane):
            (snap if what == "snapshot" else changes).append(r)
    expected = replay(snap, changes)  # also proves every generated update/delete finds its row
    assert spark_oracle(spark, snap, changes) == expected
    assert digest_oracle(spark, snap, changes) == digests_of(spark, expected)
    assert any(c[4] == "U" and c[9] != c[10] for c in changes), "key changes present"


def test_range_split_read_gives_the_verdict_and_digests_of_one_range(spark, target):
    """The subscriber read in many ranges of its first key column (and the composite key's
    article too) holds the same rows as read whole; the verdict and counts of a divergent
    subscriber are the same either way."""
    import dataclasses

    from applier.apply.install import install
    from applier.apply.snapshot import load_snapshot
    from applier.verify.diff import verify
    from applier.verify.target import read_target

    arts = tuple(dataclasses.replace(a, schema="ranges") for a in demo_config().articles)
    w = Workload(kind="uniform", initial_rows=120, transactions=60, commands_per_transaction=4)
    snap, changes = [], []
    for lane in range(LANES):
        for what, r in generate_lane(arts, w, lane):
            (snap if what == "snapshot" else changes).append(r)
    truth = replay(snap, changes)
    held = sorted(truth.items())
    (a0, k0), _ = held[-1]  # an order line (composite key)
    accounts = [x for x in held if x[0][0] == "ranges.accounts"]
    (a1, k1), img1 = accounts[len(accounts) // 2]
    changed = json.dumps({**json.loads(img1), "owner": "changed"}, separators=(",", ":"), sort_keys=True)
    # the subscriber misses one row and holds another with other values
    held = [(ak, changed if ak == (a1, k1) else img) for ak, img in held if ak != (a0, k0)]
    install(target, arts, "ranges")
    load_snapshot(
        spark.createDataFrame([(a, k, img) for (a, k), img in held], SNAPSHOT_SCHEMA), target, arts, "ranges"
    )

    whole = read_target(spark, target, arts, tasks=1, max_rows=10**9)
    split = read_target(spark, target, arts, tasks=3, max_rows=25, min_rows=1)
    assert whole.rdd.getNumPartitions() == 1 and split.rdd.getNumPartitions() > 2 * len(arts)
    rows = sorted(tuple(r) for r in whole.collect())
    assert sorted(tuple(r) for r in split.collect()) == rows and len(rows) == len(held)

    changes_df = spark.createDataFrame(changes, CHANGE_SCHEMA)
    snap_df = spark.createDataFrame(snap, SNAPSHOT_SCHEMA)
    expected = oracle(changes_df, snap_df)
    checks = [
        verify(expected, found, changes_df, None, digests=digest_diff(changes_df, snap_df, found))
        for found in (whole, split)
    ]
    assert checks[0].verdict.value == checks[1].verdict.value == "diverged"
    assert checks[0].counts == checks[1].counts and checks[0].counts["missing"] == 1
    assert checks[0].counts["different"] == 1
    assert checks[0].by_article == checks[1].by_article


def test_digest_diff_tells_every_kind_as_the_images_diff_does(spark):
    """The one group-by of digests (oracle.digest_diff) finds the same kinds on the same keys
    as the join of the images (diff.diff_all), and a key the subscriber holds twice."""
    from applier.verify.diff import diff_all

    changes = SEQUENCES["insert"]
    truth = replay(SNAP, changes)
    held = dict(truth)
    (gone, _), (changed, img), (twice, img2) = sorted(truth.items())[:3]
    del held[gone]
    held[changed] = img + " "
    held[(A, '["999"]')] = '{"x":1}'
    rows = [(a, k, v) for (a, k), v in held.items()]
    rows.append((*twice, img2))  # held twice, same image
    dup = twice
    found = spark.createDataFrame(rows, SNAPSHOT_SCHEMA)
    changes_df = spark.createDataFrame(changes, CHANGE_SCHEMA)
    snap_df = spark.createDataFrame(SNAP, SNAPSHOT_SCHEMA)
    by_digest = {
        (r["article"], r["key"]): (r["kind"], r["nfound"])
        for r in digest_diff(changes_df, snap_df, found).collect()
    }
    by_image = {
        (r["article"], r["key"]): r["kind"] for r in diff_all(oracle(changes_df, snap_df), found).collect()
    }
    assert by_digest[gone] == ("missing", 0) and by_digest[changed] == ("different", 1)
    assert by_digest[(A, '["999"]')] == ("extra", 1)
    assert by_digest[(dup[0], dup[1])] == ("different", 2)
    assert {k: kind for k, (kind, n) in by_digest.items() if n < 2} == {
        k: kind for k, kind in by_image.items() if k != (dup[0], dup[1])
    }
