"""The pure parts of the resets' explanation (applier.partition.dependencies): the unique and
parent keys a command holds with their role, the smaller commit batches a run's figures are
worked out for, and the figures in words (why the rounds reset, what would run in parallel)."""

from __future__ import annotations

import json

import pytest

from applier.partition.dependencies import BY_KIND, KINDS, constraint_keys
from applier.partition.figures import Figures, explain, smaller_batches
from applier.sources.hazards import CHILD, PARENT, ROWS, UNIQ, hazard_articles

ARTS = {a.name: a for a in hazard_articles()}


def img(**kw: object) -> str:
    return json.dumps(kw, separators=(",", ":"), sort_keys=True)


@pytest.mark.parametrize(
    ("article", "before", "after", "expected"),
    [
        # a child's insert comes to refer to its parent: it needs the parent key
        (CHILD, None, img(id=5, parent_id=3, qty=1), [(PARENT, "[3]", "parent", "adds")]),
        # an update in place keeps referring to it
        (
            CHILD,
            img(id=5, parent_id=3, qty=1),
            img(id=5, parent_id=3, qty=2),
            [(PARENT, "[3]", "parent", "keeps")],
        ),
        # moved to another parent: drops one, adds the other
        (
            CHILD,
            img(id=5, parent_id=3, qty=1),
            img(id=5, parent_id=4, qty=1),
            [(PARENT, "[3]", "parent", "drops"), (PARENT, "[4]", "parent", "adds")],
        ),
        # a delete drops its reference; a NULL parent constrains nothing
        (CHILD, img(id=5, parent_id=3, qty=1), None, [(PARENT, "[3]", "parent", "drops")]),
        (CHILD, None, img(id=5, parent_id=None, qty=1), []),
        # a unique value handed on: the old one freed, the new one taken
        (
            UNIQ,
            img(id=1, code=7, v="a"),
            img(id=1, code=8, v="a"),
            [(f"{UNIQ}#unique0", "[7]", "unique", "drops"), (f"{UNIQ}#unique0", "[8]", "unique", "adds")],
        ),
        # a key-only before image (a wal2json update's old keys) holds no unique value
        (UNIQ, img(id=1), img(id=1, code=8, v="a"), [(f"{UNIQ}#unique0", "[8]", "unique", "adds")]),
        # the row's own key is not among them (key_before / key_after carry it)
        (ROWS, img(id=1, v="a", n=0), img(id=2, v="a", n=0), []),
    ],
)
def test_constraint_keys_with_their_role(article, before, after, expected):
    assert constraint_keys(ARTS[article], before, after) == expected


def test_smaller_batches_are_round_figures_below_the_run_s():
    assert smaller_batches(100) == [50, 20, 10, 5, 2, 1]
    assert smaller_batches(16) == [10, 5, 2, 1]
    assert smaller_batches(1) == []


def _fig(**kw: object) -> Figures:
    base: dict[str, object] = {
        "dependent": 53,
        "rounds": 17,
        "resets_explained": 17,
        "within_transaction": 0,
        "kinds": ({"kind": "key_move", "commands": 53, "rounds": 17, "example": None},),
        "batches": (
            {"commit_batch_size": 50, "rounds": 34, "rounds_with": 30, "commands": 50},
            {"commit_batch_size": 20, "rounds": 85, "rounds_with": 40, "commands": 41},
            {"commit_batch_size": 10, "rounds": 170, "rounds_with": 12, "commands": 12},
            {"commit_batch_size": 1, "rounds": 1700, "rounds_with": 0, "commands": 0},
        ),
    }
    base.update(kw)
    return Figures(**base)  # type: ignore[arg-type]


def _explain(fig: Figures, **kw: object):  # type: ignore[no-untyped-def]
    args: dict[str, object] = {
        "rounds": 17,
        "resets": 17,
        "strategy": "key-hash",
        "model": "agent",
        "commit_batch_size": 100,
    }
    args.update(kw)
    return explain(fig, **args)  # type: ignore[arg-type]


def test_the_reason_names_the_dependency_and_its_count():
    par = _explain(_fig())
    assert par.reason == (
        "17 of 17 rounds reset to one stream: 53 commands depended on a command of another stream in "
        "the same round (in 17 of the 17 reset rounds): 53 on a key move (row not found, 20598)"
    )
    assert "\n" not in par.reason
    assert (
        par.kinds[0]["what"] == BY_KIND["key_move"].what
        and par.kinds[0]["conflict"] == "row not found, 20598"
    )


def test_the_advice_takes_the_largest_batch_whose_rounds_mostly_run_in_parallel():
    par = _explain(_fig())
    # 20: 40 of 85 rounds (most parallel); 10: 12 of 170 (nearly all)
    assert par.advice[0] == (
        "--commit-batch-size 20: a dependency in 40 of 85 rounds; 10: in 12 of 170 (now, at 100: in 17 of 17)"
    )
    assert par.advice[1].startswith("--model independent --partition writeset: ")
    assert "these 53 commands wait" in par.advice[1]


def test_dependencies_inside_one_transaction_are_not_cured_by_a_smaller_batch():
    batches = ({"commit_batch_size": 1, "rounds": 1700, "rounds_with": 900, "commands": 40},)
    par = _explain(_fig(within_transaction=40, batches=batches))
    assert par.advice[0].startswith("a smaller commit batch is not enough: 40 of the 53 commands depend on")
    assert "key-hash puts on another stream" in par.advice[0]


def test_reset_rounds_without_a_dependency_are_said():
    par = _explain(_fig(resets_explained=12))
    assert "(in 12 of the 17 reset rounds)" in par.reason
    assert par.reason.endswith(
        "; 5 reset rounds hold none: their conflicts come from outside the stream's order (the reset "
        "log: triggers, custom procedures, other sessions' locks)"
    )


def test_no_dependency_at_all_gives_no_advice():
    par = _explain(_fig(dependent=0, rounds=0, resets_explained=0, kinds=()))
    assert par.reason.startswith(
        "17 of 17 rounds reset to one stream, and no command depended on a command of another stream"
    )
    assert par.advice == ()


def test_writeset_is_not_advised_to_a_run_that_uses_it():
    par = _explain(_fig(), model="independent", strategy="writeset")
    assert not any("writeset" in a for a in par.advice)


def test_before_a_run_the_explanation_says_what_would_reset():
    par = _explain(_fig(resets_explained=None), resets=None, rounds=20)
    assert par.reason.startswith(
        "53 commands depend on a command of another stream in the same round, in 17 of 20 rounds: "
    )


def test_kinds_are_named_once_and_other_comes_last():
    names = [k.name for k in KINDS]
    assert len(names) == len(set(names)) and names[-1] == "other"
    assert all(k.short and k.what for k in KINDS)
