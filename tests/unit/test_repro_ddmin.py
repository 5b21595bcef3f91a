"""ddmin (applier.repro.ddmin): 1-minimal failing subsequences, each subset tested once."""

from __future__ import annotations

import itertools
import random

import pytest

from applier.repro.ddmin import Cached, _split, ddmin


def test_one_culprit_among_a_thousand():
    tests = Cached(lambda xs: 617 in xs)
    assert ddmin(range(1000), tests) == (617,)
    assert tests.runs <= 2 * 10 + 2  # binary search: two halves per level


def test_a_pair_is_kept_whole_and_order_is_kept():
    # An ordering bug needs two transactions (the chain's first and second link).
    assert ddmin(list(range(100)), lambda xs: 13 in xs and 71 in xs) == (13, 71)
    assert ddmin(list("zyxwvu"), lambda xs: "x" in xs and "u" in xs) == ("x", "u")


@pytest.mark.parametrize("seed", range(20))
def test_result_fails_and_is_one_minimal(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 60)
    needed = set(rng.sample(range(n), rng.randint(1, min(4, n))))
    # Also fails when an alternative culprit set is there: the result is 1-minimal, not minimum.
    other = set(rng.sample(range(n), rng.randint(1, min(3, n))))

    def fails(xs):
        return needed <= set(xs) or other <= set(xs)

    got = ddmin(range(n), fails)
    assert fails(got)
    assert list(got) == sorted(got)
    for i in range(len(got)):
        assert not fails(got[:i] + got[i + 1 :]) or len(got) == 1


def test_each_subset_is_run_once():
    calls = []

    def fails(xs):
        calls.append(frozenset(xs))
        return {3, 5} <= set(xs)

    tests = Cached(fails)
    assert ddmin(range(8), tests) == (3, 5)
    assert len(calls) == len(set(calls)) == tests.runs
    runs = tests.runs
    assert tests(range(8)) is True and tests.runs == runs + 1  # the whole was never asked
    assert tests(range(8)) is True and tests.runs == runs + 1  # asked again: from the cache


def test_a_single_item_is_minimal_already():
    tests = Cached(lambda xs: True)
    assert ddmin([42], tests) == (42,)
    assert tests.runs == 0


def test_split_keeps_everything_in_order():
    for n, parts in itertools.product(range(1, 12), range(1, 8)):
        got = _split(list(range(n)), min(parts, n))
        assert [x for p in got for x in p] == list(range(n))
        assert all(got) and max(map(len, got)) - min(map(len, got)) <= 1
