"""Seeded change-stream generator: workloads ``uniform``, ``key-chains`` and ``updates``.

The key space is cut into L lanes (:func:`lane_count`); lane l owns the key numbers k with
k % L == l and the transactions t with (t - 1) % L == l, so each lane can be generated on its
own Spark task from (seed, lane) alone, yet every command is consistent with the state the
earlier commands left (an update or delete always finds its row at the publisher). The
result does not depend on the number of Spark executors.

L is 16 (``LANES``) up to 16 x ``LANE_COMMANDS`` commands, and beyond that grows with the
workload (the next multiple of 16 that keeps every lane at ``LANE_COMMANDS`` commands or
fewer), so the generator's parallelism (one task per lane) and each lane's memory follow
the stream's size. A lane is one sequence of draws from its own seeded generator, so a
seed's stream is defined for its lane count: the same seed and workload give the same
stream on any cluster, but a workload large enough for more lanes is not a prefix of a
smaller one's stream.

- uniform: inserts, non-key updates and deletes of random rows, plus key updates at
  ``key_update_share``.
- key-chains: the same, but key updates form chains k1 -> k2 -> ... of ``chain_length``
  links, one link per transaction of the lane (the documented 1->2, 2->3 hazard).
- updates: only single-row non-key updates of live rows of the initial snapshot (the
  benchmark's stream: no conflicts at any N; a lane without rows falls back to inserts).
"""

from __future__ import annotations

import datetime as dt
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from applier.articles import Article, Column
from applier.config import Workload
from applier.errors import ConfigError
from applier.records.schema import make_lsn
from applier.values import dumps_image, encode, key_text

LANES = 16  # lanes of every workload of up to LANES * LANE_COMMANDS commands
LANE_COMMANDS = 1_000_000  # commands one lane generates at most (beyond 16 lanes)
BASE_DATE = dt.datetime(2020, 1, 1)
# Mostly ASCII, some quotes, Unicode and separators: the values a binder must survive.
TEXT_ALPHABET = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ0123456789'\";--éßж中"


def key_values(article: Article, k: int) -> dict[str, Any]:
    """Key number -> key column values (injective). Composite keys: (k // 8, k % 8 + 1, 1...)."""
    cols = article.key_columns
    raw = [k] if len(cols) == 1 else [k // 8, k % 8 + 1] + [1] * (len(cols) - 2)
    return {c.name: encode(c, _from_int(c, v)) for c, v in zip(cols, raw, strict=True)}


def _from_int(c: Column, v: int) -> Any:
    kind = c.type.kind
    if kind == "int":
        return v
    if kind == "decimal":
        return v
    if kind == "str":
        return f"k{v}"
    if kind == "uuid":
        return uuid.UUID(int=v)
    if kind == "bytes":
        return v.to_bytes(8, "big")
    if kind == "date":
        return (BASE_DATE + dt.timedelta(days=v)).date()
    if kind == "datetime":
        return BASE_DATE + dt.timedelta(seconds=v)
    raise ConfigError(f"cannot generate keys for column {c.name!r} of type {c.type}")


def random_value(c: Column, rng: random.Random) -> Any:
    """A random Python value that fits the column (then encoded)."""
    if c.nullable and rng.random() < 0.1:
        return None
    t = c.type
    kind = t.kind
    if kind == "int":
        lo, hi = t.int_range or (0, 10**6)
        return rng.randint(max(lo, -(10**6)), min(hi, 10**6))
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "decimal":
        scale = t.scale or 0
        digits = min((t.precision or 18) - scale, 6)
        return (
            f"{rng.randint(-(10**digits) + 1, 10**digits - 1)}.{rng.randint(0, 10**scale - 1):0{scale}d}"
            if scale
            else str(rng.randint(-(10**digits) + 1, 10**digits - 1))
        )
    if kind == "float":
        return round(rng.uniform(-1e6, 1e6), 6)
    if kind == "str":
        n = t.length if t.length and t.length > 0 else 64
        size = rng.randint(1, min(n, 24))
        s = "".join(rng.choice(TEXT_ALPHABET) for _ in range(size))
        return s.ljust(n) if t.base in ("char", "nchar") else s
    if kind == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    if kind == "bytes":
        n = t.length if t.length and t.length > 0 else 32
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, min(n, 16))))
    if kind == "date":
        return (BASE_DATE + dt.timedelta(days=rng.randint(0, 3000))).date()
    if kind == "datetime":
        micro = rng.randint(0, 999) * 1000 if t.base == "datetime" else rng.randint(0, 999999)
        if t.base == "smalldatetime":
            micro = 0
        base = BASE_DATE + dt.timedelta(seconds=rng.randint(0, 10**8))
        return base.replace(microsecond=micro) if t.base != "smalldatetime" else base.replace(second=0)
    if kind == "time":
        return dt.time(rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59), rng.randint(0, 999999))
    raise ConfigError(f"cannot generate values for column {c.name!r} of type {t}")


def random_row(article: Article, k: int, rng: random.Random) -> dict[str, Any]:
    row = {c.name: encode(c, random_value(c, rng)) for c in article.replicated if c.name not in article.key}
    row.update(key_values(article, k))
    return {c: row[c] for c in article.column_names}


@dataclass
class _Table:
    """The live rows of one article in one lane."""

    rows: dict[int, dict[str, Any]]
    keys: list[int]
    pos: dict[int, int]
    next_fresh: int
    step: int = LANES  # the lane count: the next fresh key of this lane is next_fresh + step

    def add(self, k: int, row: dict[str, Any]) -> None:
        self.rows[k] = row
        self.pos[k] = len(self.keys)
        self.keys.append(k)

    def remove(self, k: int) -> dict[str, Any]:
        i = self.pos.pop(k)
        last = self.keys.pop()
        if last != k:
            self.keys[i] = last
            self.pos[last] = i
        return self.rows.pop(k)


def lane_count(w: Workload) -> int:
    """The lanes of a workload: LANES, or the next multiple of LANES that keeps every lane
    at LANE_COMMANDS commands or fewer. A function of the workload alone (never of the
    cluster), so a seed gives one stream."""
    need = -(-w.commands // LANE_COMMANDS)
    return max(LANES, -(-need // LANES) * LANES)


def lane_initial_keys(w: Workload, lane: int, lanes: int | None = None) -> range:
    n = lane_count(w) if lanes is None else lanes
    first = lane if lane > 0 else n
    return range(first, w.initial_rows + 1, n)


def generate_lane(
    articles: tuple[Article, ...], w: Workload, lane: int
) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """Yield ("snapshot", (article, key, image)) then ("change", canonical row) for one lane."""
    lanes = lane_count(w)
    rng = random.Random(f"applier:{w.seed}:{lane}")
    tables: dict[str, _Table] = {}
    fresh0 = w.initial_rows + 1
    fresh0 += (lane - fresh0) % lanes
    for a in articles:
        t = _Table({}, [], {}, fresh0, lanes)
        for k in lane_initial_keys(w, lane, lanes):
            row = random_row(a, k, rng)
            t.add(k, row)
            yield "snapshot", (a.name, key_text(a, row), dumps_image(row))
        tables[a.name] = t
    chains: list[tuple[str, int, int]] = []  # (article, current key number, links left)
    p_key = w.key_update_share
    for xact in range(lane + 1, w.transactions + 1, lanes):
        touched_by_chain: set[tuple[str, int]] = set()
        for cmd_id in range(1, w.commands_per_transaction + 1):
            a = articles[rng.randrange(len(articles))]
            t = tables[a.name]
            lsn = make_lsn(xact, cmd_id)
            if w.kind == "updates" and t.keys:
                yield "change", (lsn, xact, cmd_id, a.name, "U", 1, *_plain_update(a, t, rng))
                continue
            r = rng.random()
            if r < p_key and t.keys:
                ku = _key_update(a, t, w, rng, chains, touched_by_chain, xact)
                if ku is not None:
                    yield "change", (lsn, xact, cmd_id, a.name, "U", 1, *ku)
                    continue
            r2 = rng.random()
            if not t.keys or r2 < 0.25:
                k = t.next_fresh
                t.next_fresh += t.step
                after = random_row(a, k, rng)
                t.add(k, after)
                yield (
                    "change",
                    (
                        lsn,
                        xact,
                        cmd_id,
                        a.name,
                        "I",
                        1,
                        None,
                        dumps_image(after),
                        list(a.column_names),
                        None,
                        key_text(a, after),
                    ),
                )
            elif r2 < 0.45 and len(t.keys) > 1:
                k = t.keys[rng.randrange(len(t.keys))]
                if any(c[0] == a.name and c[1] == k for c in chains):
                    chains[:] = [c for c in chains if not (c[0] == a.name and c[1] == k)]
                before = t.remove(k)
                yield (
                    "change",
                    (
                        lsn,
                        xact,
                        cmd_id,
                        a.name,
                        "D",
                        1,
                        dumps_image(before),
                        None,
                        [],
                        key_text(a, before),
                        None,
                    ),
                )
            else:
                yield "change", (lsn, xact, cmd_id, a.name, "U", 1, *_plain_update(a, t, rng))


def _plain_update(a: Article, t: _Table, rng: random.Random) -> tuple[Any, ...]:
    """A non-key update of one random live row: one or two columns get new values."""
    k = t.keys[rng.randrange(len(t.keys))]
    before = t.rows[k]
    after = dict(before)
    candidates = [c for c in a.replicated if c.name not in a.key and not c.identity]
    changed: list[str] = []
    for c in rng.sample(candidates, min(len(candidates), rng.randint(1, 2))):
        after[c.name] = encode(c, random_value(c, rng))
        changed.append(c.name)
    t.rows[k] = after
    kt = key_text(a, before)
    return (
        dumps_image(before),
        dumps_image(after),
        [n for n in a.column_names if n in changed],
        kt,
        kt,
    )


def _key_update(
    a: Article,
    t: _Table,
    w: Workload,
    rng: random.Random,
    chains: list[tuple[str, int, int]],
    touched: set[tuple[str, int]],
    xact: int,
) -> tuple[Any, ...] | None:
    """A key-changing update; for key-chains it continues a pending chain when it can. None
    when the key has an identity column: SQL Server cannot update one (the procedures never
    SET it), so the publisher could not have written this change."""
    if any(c.identity for c in a.key_columns):
        return None
    k: int | None = None
    left = 1
    if w.kind == "key-chains":
        for i, (art, ck, links) in enumerate(chains):
            if art == a.name and (art, ck) not in touched and ck in t.rows:
                k, left = ck, links
                del chains[i]
                break
        if k is None:
            left = w.chain_length
    if k is None:
        k = t.keys[rng.randrange(len(t.keys))]
        chains[:] = [c for c in chains if not (c[0] == a.name and c[1] == k)]
    new_k = t.next_fresh
    t.next_fresh += t.step
    before = t.remove(k)
    after = dict(before)
    after.update(key_values(a, new_k))
    changed = [c for c in a.key if before[c] != after[c]]
    # Most key updates also change a non-key column, as applications do.
    others = [c for c in a.replicated if c.name not in a.key and not c.identity]
    if others and rng.random() < 0.5:
        c = rng.choice(others)
        after[c.name] = encode(c, random_value(c, rng))
        changed.append(c.name)
    t.add(new_k, after)
    if w.kind == "key-chains" and left > 1:
        chains.append((a.name, new_k, left - 1))
        touched.add((a.name, new_k))
    return (
        dumps_image(before),
        dumps_image(after),
        [n for n in a.column_names if n in changed],
        key_text(a, before),
        key_text(a, after),
    )
