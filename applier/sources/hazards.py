"""Seeded hazard workloads: ordering bugs made to happen on purpose.

Each hazard is a small pattern of transactions repeated over fresh keys; lane l of the
workload's lanes (:func:`applier.sources.generator.lane_count`: 16 unless the workload is
large) owns a contiguous block of transactions, so a pattern's steps are consecutive transactions (and
land on different streams under round-robin). Each comes with its own articles, including
the constraints a subscriber may add (a unique index, a foreign key).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from applier.articles import Article
from applier.config import Config, Workload, parse_article_dicts
from applier.records.schema import make_lsn
from applier.sources.generator import LANES, lane_count
from applier.values import dumps_image, key_text

ROWS = "dbo.hz_rows"
UNIQ = "dbo.hz_unique"
PARENT = "dbo.hz_parent"
CHILD = "dbo.hz_child"

_ARTICLES = [
    {
        "name": ROWS,
        "columns": [
            {"name": "id", "type": "int", "key": True},
            {"name": "v", "type": "nvarchar(20)"},
            {"name": "n", "type": "int"},
        ],
    },
    {
        "name": UNIQ,
        "columns": [
            {"name": "id", "type": "int", "key": True},
            {"name": "code", "type": "int"},
            {"name": "v", "type": "nvarchar(20)"},
        ],
        "unique": [["code"]],
    },
    {
        "name": PARENT,
        "columns": [{"name": "id", "type": "int", "key": True}, {"name": "name", "type": "nvarchar(20)"}],
    },
    {
        "name": CHILD,
        "columns": [
            {"name": "id", "type": "int", "key": True},
            {"name": "parent_id", "type": "int"},
            {"name": "qty", "type": "int"},
        ],
        "references": [{"columns": ["parent_id"], "article": PARENT, "parent_columns": ["id"]}],
    },
]


@dataclass
class _Lane:
    lane: int
    rng: random.Random
    next_key: int
    snapshot: list[tuple[str, dict[str, Any]]]
    lanes: int = LANES

    def key(self) -> int:
        k = self.next_key
        self.next_key += self.lanes
        return k

    def row(self, article: str, **values: Any) -> dict[str, Any]:
        self.snapshot.append((article, values))
        return values

    def word(self) -> str:
        return "".join(self.rng.choice("abcdefgh'\"-é") for _ in range(self.rng.randint(1, 8)))


Cmd = tuple[str, str, dict[str, Any] | None, dict[str, Any] | None]  # article, op, before, after
Steps = list[list[Cmd]]  # one list of commands per transaction


def _key_chain(s: _Lane) -> Steps:
    a = s.row(ROWS, id=s.key(), v=s.word(), n=0)
    b, c = {**a, "id": s.key()}, None
    c = {**b, "id": s.key()}
    return [[(ROWS, "U", a, b)], [(ROWS, "U", b, c)]]


def _key_swap(s: _Lane) -> Steps:
    a = s.row(ROWS, id=s.key(), v="A" + s.word(), n=1)
    b = s.row(ROWS, id=s.key(), v="B" + s.word(), n=2)
    tmp = {**a, "id": s.key()}
    b_at_a = {**b, "id": a["id"]}
    a_at_b = {**a, "id": b["id"]}
    return [[(ROWS, "U", a, tmp)], [(ROWS, "U", b, b_at_a)], [(ROWS, "U", tmp, a_at_b)]]


def _delete_reinsert(s: _Lane) -> Steps:
    a = s.row(ROWS, id=s.key(), v=s.word(), n=0)
    again = {**a, "v": s.word(), "n": 1}
    return [[(ROWS, "D", a, None)], [(ROWS, "I", None, again)]]


def _vacated_insert(s: _Lane) -> Steps:
    a = s.row(ROWS, id=s.key(), v=s.word(), n=0)
    moved = {**a, "id": s.key()}
    newcomer = {"id": a["id"], "v": s.word(), "n": 9}
    return [[(ROWS, "U", a, moved)], [(ROWS, "I", None, newcomer)]]


def _reorder(s: _Lane) -> Steps:
    a = s.row(ROWS, id=s.key(), v=s.word(), n=0)
    fillers = [s.row(ROWS, id=s.key(), v=s.word(), n=0) for _ in range(40)]
    first = {**a, "n": 1}
    second = {**a, "n": 2}
    # The first update travels behind 40 other updates in its transaction, so that a stream
    # committing on its own gets the second update in first.
    busy: list[Cmd] = [(ROWS, "U", f, {**f, "n": 1}) for f in fillers]
    return [busy + [(ROWS, "U", a, first)], [(ROWS, "U", first, second)]]


def _unique_shuffle(s: _Lane) -> Steps:
    ka, kb = s.key(), s.key()
    a = s.row(UNIQ, id=ka, code=ka, v=s.word())
    b = s.row(UNIQ, id=kb, code=kb, v=s.word())
    a_tmp = {**a, "code": s.key()}
    b_new = {**b, "code": a["code"]}
    a_new = {**a_tmp, "code": b["code"]}
    return [[(UNIQ, "U", a, a_tmp)], [(UNIQ, "U", b, b_new)], [(UNIQ, "U", a_tmp, a_new)]]


def _parent_child(s: _Lane) -> Steps:
    p = {"id": s.key(), "name": s.word()}
    c = {"id": s.key(), "parent_id": p["id"], "qty": 1}
    c2 = {**c, "qty": 2}
    return [
        [(PARENT, "I", None, p)],
        [(CHILD, "I", None, c)],
        [(CHILD, "U", c, c2)],
        [(CHILD, "D", c2, None)],
        [(PARENT, "D", p, None)],
    ]


def _hot_key(s: _Lane) -> Steps:
    h = s.row(ROWS, id=s.key(), v=s.word(), n=0)
    steps: Steps = []
    for i in range(1, 9):
        nxt = {**h, "n": i}
        steps.append([(ROWS, "U", h, nxt)])
        h = nxt
    return steps


@dataclass(frozen=True)
class Hazard:
    name: str
    doc: str
    pattern: Callable[[_Lane], Steps]


HAZARDS: dict[str, Hazard] = {
    h.name: h
    for h in (
        Hazard("key-chain", "update a key 1->2 then 2->3 in consecutive transactions", _key_chain),
        Hazard("key-swap", "swap the keys of two rows through a temporary key (a->t, b->a, t->b)", _key_swap),
        Hazard("delete-reinsert", "delete a row, then insert the same key again", _delete_reinsert),
        Hazard(
            "vacated-insert",
            "move a row to a new key, then insert a row at the key it vacated",
            _vacated_insert,
        ),
        Hazard(
            "reorder",
            "two updates of non-key columns of one row; reordered, the older value wins silently",
            _reorder,
        ),
        Hazard(
            "unique-shuffle",
            "hand a unique secondary key from one row to another through a temporary value",
            _unique_shuffle,
        ),
        Hazard(
            "parent-child",
            "insert a parent then its child, update and delete the child, delete the parent "
            "(foreign key at the subscriber)",
            _parent_child,
        ),
        Hazard("hot-key", "one row updated by many consecutive transactions", _hot_key),
    )
}


def hazard_articles() -> tuple[Article, ...]:
    return parse_article_dicts(_ARTICLES, "<hazards>")


def effective_config(config: Config) -> Config:
    """A hazard workload brings its own articles."""
    if config.workload.kind in HAZARDS:
        return config.replace(articles=hazard_articles())
    return config


def generate_lane(
    articles: tuple[Article, ...], w: Workload, lane: int
) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """Same output as the uniform generator: ("snapshot", ...) then ("change", canonical row)."""
    hazard = HAZARDS[w.kind]
    by_name = {a.name: a for a in articles}
    lanes = lane_count(w)
    per_lane = -(-w.transactions // lanes)
    first = lane * per_lane + 1
    last = min(w.transactions, first + per_lane - 1)
    rng = random.Random(f"applier-hazard:{w.seed}:{w.kind}:{lane}")
    state = _Lane(lane, rng, w.initial_rows + 1 + lane + lanes, [], lanes)
    steps: Steps = []
    xact = first
    while xact + len(steps) <= last:
        more = hazard.pattern(state)
        if xact + len(steps) + len(more) - 1 > last:
            break
        steps.extend(more)
    for art, img in state.snapshot:
        a = by_name[art]
        yield "snapshot", (art, key_text(a, img), dumps_image(img))
    for step in steps:
        for cmd_id, (art, op, before, after) in enumerate(step, 1):
            a = by_name[art]
            changed = (
                [c for c in a.column_names if before is None or before.get(c) != after.get(c)]
                if after is not None
                else []
            )
            yield (
                "change",
                (
                    make_lsn(xact, cmd_id),
                    xact,
                    cmd_id,
                    art,
                    op,
                    1,
                    dumps_image(before) if before else None,
                    dumps_image(after) if after else None,
                    changed if op != "D" else [],
                    key_text(a, before) if before else None,
                    key_text(a, after) if after else None,
                ),
            )
        xact += 1
