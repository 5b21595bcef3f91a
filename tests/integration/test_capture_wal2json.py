"""wal2json's own regression examples (tests/data/captures/wal2json, eulerto/wal2json BSD-3)
applied through ``applier.run(..., changes_format="wal2json"|"wal2json2")`` at N = 4 streams on
the embedded PostgreSQL: each converges, and the subscriber then holds the rows the example
documents: its tables' rows when the slot was created (the snapshot, from the .sql's INSERTs
before ``pg_create_logical_replication_slot``) changed by what the .out shows captured.

Tables without a primary key are keyed as tests/support/wal2json_examples.py says; their updates
and deletes without a replica identity are not in wal2json's output (the publisher only warns),
so the subscriber keeps those rows: the capture's outcome, which the test expects. savepoint:
the rolled-back inserts (peter, albert) are not in the capture and not at the subscriber.
One run per capture, each in a database of its own.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import applier
from applier.values import encode_row, validate_encoded
from tests.support.changes import write_jsonl
from tests.support.subscriber import rows
from tests.support.wal2json_examples import DATA, ROW, articles, config, row

pytestmark = pytest.mark.integration

PK, NOPK, UNIQ = "public.table_with_pk", "public.table_without_pk", "public.table_with_unique"
F = ROW["f"]
ROW2 = row(a=2, b=4, c=5, d=6)  # delete3's second table_with_pk row
U1 = row(n=False)  # delete4/update4: INSERT (1, 2, 3, ..., 1.23, ..., false, ...)
U2 = row(a=2, b=4, c=5, d=6, g=4.56)  # and (4, 5, 6, ..., 4.56, ..., true, ...)
PK_ROW = {"a": 123, "b": "2020-04-26T16:23:59.000000", "c": "Melanosuchus Niger", "d": True, "e": "4.560"}
THREE = {PK: [ROW], NOPK: [ROW], UNIQ: [ROW]}

# example -> (snapshot rows per article, expected subscriber rows per article)
EXAMPLES: dict[str, tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]] = {
    "insert1": (
        {},
        {
            PK: [ROW],
            NOPK: [ROW],
            UNIQ: [ROW],
            "test \"schema.test \" with 'quotes'": [{"id": 1, "col spaces": 2, 'col"quotes': 3}],
        },
    ),
    # UPDATE table_without_pk / table_with_unique: no replica identity, not captured
    "update1": (THREE, {PK: [row(b=-1, f=-F)], NOPK: [ROW], UNIQ: [ROW]}),
    "update2": (THREE, THREE),  # REPLICA IDENTITY NOTHING: no update captured
    "update3": (THREE, {PK: [row(f=-F)], NOPK: [row(f=-F)], UNIQ: [row(f=-F)]}),  # FULL
    "update4": ({UNIQ: [U1, U2]}, {UNIQ: [{**U1, "c": -2}, {**U2, "g": -4.56}]}),  # USING INDEX (g, n)
    "delete1": (THREE, {PK: [], NOPK: [ROW], UNIQ: [ROW]}),
    "delete2": (THREE, THREE),  # REPLICA IDENTITY NOTHING: no delete captured
    "delete3": ({PK: [ROW, ROW2], NOPK: [ROW], UNIQ: [ROW]}, {PK: [], NOPK: [], UNIQ: []}),  # FULL
    "delete4": ({UNIQ: [U1, U2]}, {UNIQ: []}),  # USING INDEX (g, n)
    "pk": (
        {},
        {"public.w2j_pk_with_pk": [], "public.w2j_pk_without_pk": [PK_ROW], "public.w2j_pk_with_ri": []},
    ),
    "savepoint": (
        {},
        {
            "public.xpto": [
                {"a": a, "b": b}
                for a, b in [
                    (1, "john"),
                    (2, "smith"),
                    (3, "robert"),
                    (4, "marie"),
                    (5, "ernesto"),
                    (8, "francisco"),
                ]
            ]
        },
    ),
    "include_xids": ({}, {"public.tbl": [{"id": i} for i in range(1, 6)]}),
    "include_lsn": ({}, {"public.tbl": [{"id": i} for i in range(1, 6)]}),
}

CAPTURES = sorted((ex, v) for ex in EXAMPLES for v in (1, 2) if (DATA / f"{ex}.v{v}.jsonl").exists())


def _held(target: Any, article: Any) -> list[dict[str, Any]]:
    q = target.dialect.quote
    cols = ", ".join(q(c.name) for c in article.replicated)
    order = ", ".join(q(k) for k in article.key)
    got = rows(
        target,
        f"SELECT {cols} FROM {target.dialect.qualified(article.schema, article.table)} ORDER BY {order}",
    )
    return [encode_row(article, dict(zip(article.column_names, r, strict=True))) for r in got]


# make test runs one (the composite key change SET b = -b); make test-e2e every one (each is a
# run of its own, ~30 s on two cores).
QUICK = {("update1", 1)}


@pytest.mark.parametrize(
    ("example", "version"),
    [
        pytest.param(e, v, id=f"{e}-v{v}", marks=() if (e, v) in QUICK else pytest.mark.e2e)
        for e, v in CAPTURES
    ],
)
def test_wal2json_example_converges_to_its_documented_rows(spark, pg, tmp_path, example, version):
    snapshot, expected = EXAMPLES[example]
    arts = articles(example)
    snap = write_jsonl(
        tmp_path / "snapshot.jsonl",
        [{"article": name, "image": image} for name, images in snapshot.items() for image in images],
    )
    target = pg.subscriber(f"w2j_{example}_v{version}")
    result = applier.run(
        config(example, streams=4),
        target,
        spark=spark,
        changes=DATA / f"{example}.v{version}.jsonl",
        snapshot=snap,
        changes_format="wal2json" if version == 1 else "wal2json2",
    )
    (sub,) = result.subscriptions
    assert sub.verdict is applier.Verdict.CONVERGED, sub.check.to_json()
    for name, want in expected.items():
        article = arts[name]
        canonical = [{c.name: validate_encoded(c, r.get(c.name)) for c in article.replicated} for r in want]
        assert sorted(_held(target, article), key=json.dumps) == sorted(canonical, key=json.dumps), name
