"""Pure parts of issue 4: writeset keys, hazard generators, the inverted-pair rule."""

from __future__ import annotations

import json

import pytest

from applier.config import HAZARD_WORKLOADS, Workload
from applier.partition.strategies import write_keys
from applier.sources.hazards import CHILD, HAZARDS, LANES, UNIQ, generate_lane, hazard_articles
from applier.verify.diff import inverted_pair

ARTS = {a.name: a for a in hazard_articles()}


def img(**kw):
    return json.dumps(kw, separators=(",", ":"), sort_keys=True)


def test_write_keys_cover_primary_unique_and_parent_keys():
    u = write_keys(ARTS[UNIQ], img(id=1, code=7, v="a"), img(id=1, code=8, v="a"))
    assert u == ["dbo.hz_unique [1]", "dbo.hz_unique#unique0 [7]", "dbo.hz_unique#unique0 [8]"]
    c = write_keys(ARTS[CHILD], None, img(id=5, parent_id=3, qty=1))
    assert c == ["dbo.hz_child [5]", "dbo.hz_parent [3]"]  # the child depends on its parent's key


def test_null_foreign_key_constrains_nothing():
    assert write_keys(ARTS[CHILD], None, img(id=5, parent_id=None, qty=1)) == ["dbo.hz_child [5]"]


def test_every_hazard_is_documented_in_one_line():
    assert set(HAZARDS) == set(HAZARD_WORKLOADS)
    for h in HAZARDS.values():
        assert h.doc and "\n" not in h.doc


@pytest.mark.parametrize("name", HAZARD_WORKLOADS)
def test_hazard_streams_are_consistent_and_reproducible(name):
    arts = tuple(ARTS.values())
    w = Workload(kind=name, transactions=16 * 16, initial_rows=0, seed=3)
    out = [r for lane in range(LANES) for r in generate_lane(arts, w, lane)]
    assert out == [r for lane in range(LANES) for r in generate_lane(arts, w, lane)]
    rows = {(r[0], r[1]) for kind, r in out if kind == "snapshot"}
    changes = sorted((r for kind, r in out if kind == "change"), key=lambda r: r[0])
    assert changes, name
    for _l, _x, _c, art, op, _v, _b, _a, _ch, kb, ka in changes:
        if op in ("U", "D"):
            assert (art, kb) in rows, (name, op, kb)
            rows.remove((art, kb))
        if op in ("I", "U"):
            assert (art, ka) not in rows, (name, op, ka)
            rows.add((art, ka))


def cmd(lsn, stream, t_exec, t_commit):
    return {"lsn": lsn, "xact_seqno": lsn, "stream": stream, "t_exec": t_exec, "t_commit": t_commit}


def test_inverted_pair_found_when_the_later_command_ran_before_the_earlier_committed():
    pair = inverted_pair([cmd(1, 0, 10.0, 12.0), cmd(2, 1, 11.0, 11.5)])
    assert pair is not None and (pair["first"], pair["second"]) == (1, 2)


def test_no_inversion_when_applied_in_order_or_on_one_stream():
    assert inverted_pair([cmd(1, 0, 10.0, 10.5), cmd(2, 1, 11.0, 11.5)]) is None
    assert inverted_pair([cmd(1, 0, 10.0, 12.0), cmd(2, 0, 11.0, 12.0)]) is None  # same stream keeps order


def test_skipped_command_never_committed_counts_as_inverted():
    assert inverted_pair([cmd(1, 1, 10.0, None), cmd(2, 0, 10.5, 10.6)]) is not None
