"""The columnar ``updates`` generator: canonical images, before images that are the state the
stream left, deterministic whatever the partitioning, and the lane generator where it can't."""

from __future__ import annotations

import json

import pytest

from applier.config import Workload, parse_config
from applier.records.schema import make_lsn
from applier.sources import columnar
from applier.sources.dataset import generate
from applier.values import dumps_image, key_text, validate_encoded

pytestmark = pytest.mark.integration

ARTICLES = {
    "articles": [
        {
            "name": "dbo.wide",
            "columns": [
                {"name": "id", "type": "int", "key": True},
                {"name": "qty", "type": "smallint", "nullable": False},
                {"name": "price", "type": "decimal(9,3)"},
                {"name": "whole", "type": "numeric(5,0)"},
                {"name": "flag", "type": "bit"},
                {"name": "code", "type": "nchar(6)"},
                {"name": "note", "type": "nvarchar(10)"},
                {"name": "day", "type": "date"},
                {"name": "seq", "type": "int", "identity": True, "nullable": False},
            ],
        },
        {
            "name": 'Sales.Ord"er',
            "columns": [
                {"name": "k", "type": "nvarchar(20)", "key": True},
                {"name": "n", "type": "tinyint"},
                {"name": 'we"ird é col', "type": "varchar(8)"},
            ],
        },
    ]
}


def _config(transactions: int = 200, size: int = 25, rows: int = 300):
    cfg = parse_config(ARTICLES, "<test>")
    w = Workload(
        kind="updates", initial_rows=rows, transactions=transactions, commands_per_transaction=size, seed=7
    )
    return cfg.replace(workload=w)


def test_stream_replays_from_its_snapshot(spark) -> None:  # type: ignore[no-untyped-def]
    cfg = _config()
    assert columnar.supports(cfg.articles, cfg.workload) is None
    cs = generate(spark, cfg)
    assert "columnar" in cs.origin
    by_name = {a.name: a for a in cfg.articles}
    state: dict[tuple[str, str], dict] = {}
    for r in cs.snapshot.collect():
        a = by_name[r["article"]]
        image = json.loads(r["image"])
        assert dumps_image(image) == r["image"]  # canonical text
        assert key_text(a, image) == r["key"]
        for c in a.replicated:
            assert validate_encoded(c, image[c.name]) == image[c.name], (c.name, image)
        state[(r["article"], r["key"])] = image
    assert len(state) == 2 * 300
    rows = cs.changes.orderBy("lsn").collect()
    assert len(rows) == 200 * 25
    assert {r["article"] for r in rows} == set(by_name)
    changed_any = set()
    for n, r in enumerate(rows):
        assert r["lsn"] == make_lsn(n // 25 + 1, n % 25 + 1) and r["xact_seqno"] == n // 25 + 1
        assert r["op"] == "U" and r["key_before"] == r["key_after"]
        a = by_name[r["article"]]
        before, after = json.loads(r["before"]), json.loads(r["after"])
        assert dumps_image(after) == r["after"] and dumps_image(before) == r["before"]
        assert before == state[(r["article"], r["key_before"])], f"lsn {r['lsn']}: before is not the state"
        assert 1 <= len(r["changed"]) <= 2
        assert list(r["changed"]) == [c for c in a.column_names if c in r["changed"]]  # column order
        assert a.key[0] not in r["changed"] and "seq" not in r["changed"]
        for c in a.replicated:
            if c.name not in r["changed"]:
                assert after[c.name] == before[c.name], (r["lsn"], c.name)
            assert validate_encoded(c, after[c.name]) == after[c.name], (c.name, after)
        changed_any.update(r["changed"])
        state[(r["article"], r["key_after"])] = after
    assert changed_any == {"qty", "price", "whole", "flag", "code", "note", "day", "n", 'we"ird é col'}
    cs.unpersist()


def test_same_stream_whatever_the_partitioning(spark) -> None:  # type: ignore[no-untyped-def]
    cfg = _config(transactions=40, size=10, rows=50)
    a = columnar.changes(spark, cfg.articles, cfg.workload).orderBy("lsn").collect()
    b = columnar.changes(spark, cfg.articles, cfg.workload).repartition(7).orderBy("lsn").collect()
    assert a == b
    other = cfg.replace(workload=Workload(**{**cfg.workload.__dict__, "seed": 8}))
    c = columnar.changes(spark, other.articles, other.workload).orderBy("lsn").collect()
    assert [r["after"] for r in c] != [r["after"] for r in a]


def test_what_it_cannot_generate_goes_to_the_lane_generator(spark) -> None:  # type: ignore[no-untyped-def]
    cfg = parse_config(
        {
            "articles": [
                {
                    "name": "dbo.t",
                    "columns": [
                        {"name": "id", "type": "int", "key": True},
                        {"name": "x", "type": "float"},
                    ],
                }
            ]
        },
        "<test>",
    )
    cfg = cfg.replace(
        workload=Workload(kind="updates", initial_rows=20, transactions=5, commands_per_transaction=4)
    )
    assert "column x is float" in (columnar.supports(cfg.articles, cfg.workload) or "")
    cs = generate(spark, cfg)
    assert "columnar" not in cs.origin
    assert cs.changes.count() == 20
    assert columnar.supports(cfg.articles, Workload(kind="uniform")) == "workload uniform"
