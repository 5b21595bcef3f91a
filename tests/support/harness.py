"""The publisher harness (issue 31): seeded concurrent traffic on a real PostgreSQL publisher,
captured through wal2json slots in both format versions, applied at N streams with every
partition strategy and apply model, and every subscriber table compared with the publisher's,
row for row.

**The publisher** (:func:`publish`) is tests/support/publisher.py's embedded cluster
(``wal_level = logical``). Three tables: ``public.accounts`` (an integer key), ``public.lines``
(a composite key) and ``public.tags`` (a text key), each with a column that often holds a large
value (6,000 characters of random hex: incompressible, so stored out of line, TOASTed) which most
updates leave unchanged. The tables hold rows before the first slot is created.

**The workload** (:class:`Client`): ``clients`` threads, each with its own pyodbc connection,
run seeded transactions of one to four operations at once: inserts, non-key updates, key moves
on the single, composite and text keys (chains k1 -> k2 -> k3 inside one transaction, and
continued by a later one; two keys swapped through a free one; a key moved away and back), a
statement moving every line of a group (a key change of several rows), deletes, re-inserts of a
deleted key (in the same transaction and in a later one), large values written, replaced, kept
and set to NULL, NULLs in every nullable column. Rows are picked
on the server (the next key at or after a seeded random one), so clients touch each other's rows
and the commit order interleaves their work. A transaction the publisher aborts (deadlock) is
retried. Key moves and inserts take keys from the client's own range, so no insert can collide.

**Captures** (:func:`publish`): ``applier capture --create-slot --snapshot`` creates the format
version 1 slot before the traffic starts and the version 2 slot while it runs (a third of the
transactions in; the clients' last third waits for it), each with the tables at its consistent
point; after the traffic both slots are read out. The expected state is the publisher's tables as text, read in a UTC session.

**Cells** (:func:`run_cell`): one ``applier.run`` per (format, read, N, strategy, model, set-apply) into
one subscriber database (a run creates its tables anew), then every table read back as text in
UTC and compared with the publisher's. A cell passes when applier's verdict is CONVERGED and every
table equals the publisher's; a combination README's "Ordering hazards" says may diverge
(round-robin with the independent model: a later command of a row may commit before an earlier
one on another stream, silently) passes when applier's verdict agrees with the comparison.

``python -m tests.support.harness --out out/publisher-matrix`` (``make publisher-matrix``) runs
the full matrix outside pytest; ``tests/integration/test_publisher_harness.py`` runs the small
version (``make test``) and the full one (``make test-e2e``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyodbc

from tests.support.publisher import Publisher, start_publisher, text_rows

TABLES = ("public.accounts", "public.lines", "public.tags")
KEYS = {"public.accounts": ("id",), "public.lines": ("grp", "n"), "public.tags": ("name",)}
DDL = (
    "CREATE TABLE public.accounts (id integer PRIMARY KEY, owner varchar(40) NOT NULL, "
    "balance numeric(14,2), note text, doc text, touched timestamptz NOT NULL)",
    "CREATE TABLE public.lines (grp integer, n integer, qty integer NOT NULL, label varchar(40), "
    "body text, PRIMARY KEY (grp, n))",
    "CREATE TABLE public.tags (name varchar(60) PRIMARY KEY, hits bigint NOT NULL, info text)",
)
MATRIX_TRANSACTIONS = 2000  # the full matrix's traffic (make test-e2e, make publisher-matrix)
BIG = 3000  # random bytes of a large value: 6,000 hex characters, stored out of line
SMALL = ("a", "it's", "ümlaut", "emoji \U0001f642", "", "x" * 36, "tab\there", "line\nbreak")
RETRIES = 20  # attempts of a transaction the publisher aborts (deadlock)
ABORTS = ("40P01", "40001")  # deadlock, serialization failure: the publisher's own conflicts


# -- the workload ------------------------------------------------------------------------------
@dataclass
class Tally:
    """What the clients did: transactions committed, aborted by the publisher and retried,
    statements run."""

    committed: int = 0
    retried: int = 0
    statements: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, committed: int = 0, retried: int = 0, statements: int = 0) -> None:
        with self.lock:
            self.committed += committed
            self.retried += retried
            self.statements += statements


def big(rng: random.Random) -> str:
    return rng.randbytes(BIG).hex()


def small(rng: random.Random) -> str | None:
    return None if rng.random() < 0.3 else rng.choice(SMALL) + str(rng.randint(0, 999))


def large_or_not(rng: random.Random) -> str | None:
    """A value for a column that often holds a large one: large, NULL or small."""
    r = rng.random()
    return big(rng) if r < 0.45 else None if r < 0.65 else rng.choice(SMALL)


class Client:
    """One connection running seeded transactions; keys it creates come from its own range."""

    def __init__(self, pub: Publisher, index: int, seed: int, initial: int, clients: int) -> None:
        self.rng = random.Random(f"{seed}:{index}")
        self.index = index
        self.clients = clients
        self.initial = initial
        self.fresh = 0
        self.chain: dict[str, Any] = {}  # table -> the key a move left it at (continued later)
        self.vacated: list[tuple[str, Any]] = []  # keys this client deleted, to insert again
        self.conn = pub.connect()
        self.conn.autocommit = False
        self.cur = self.conn.cursor()
        self.statements = 0

    def close(self) -> None:
        self.conn.close()

    # -- keys ---------------------------------------------------------------------------
    def new_id(self) -> int:
        self.fresh += 1
        return 100_000 * (self.index + 1) + self.fresh

    def new_name(self) -> str:
        self.fresh += 1
        return f"c{self.index}-{self.fresh:05d}"

    def somewhere(self) -> int:
        """A seeded point in the keys: hot rows, the rows before the slot, or some client's."""
        r = self.rng.random()
        if r < 0.15:
            return self.rng.randint(1, 12)  # hot rows every client touches
        if r < 0.55:
            return self.rng.randint(1, self.initial)
        c = self.rng.randrange(self.clients)
        return 100_000 * (c + 1) + self.rng.randint(1, max(1, self.fresh))

    def x(self, sql: str, *params: Any) -> Any:
        self.statements += 1
        return self.cur.execute(sql, *params)

    def pick_account(self) -> int | None:
        row = self.x(
            "SELECT id FROM public.accounts WHERE id >= ? ORDER BY id LIMIT 1 FOR UPDATE", self.somewhere()
        ).fetchone()
        return None if row is None else int(row[0])

    def pick_line(self) -> tuple[int, int] | None:
        row = self.x(
            "SELECT grp, n FROM public.lines WHERE grp >= ? ORDER BY grp, n LIMIT 1 FOR UPDATE",
            self.somewhere(),
        ).fetchone()
        return None if row is None else (int(row[0]), int(row[1]))

    def pick_tag(self) -> str | None:
        start = (
            f"t{self.rng.randint(0, self.initial):05d}"
            if self.rng.random() < 0.6
            else f"c{self.rng.randrange(self.clients)}"
        )
        row = self.x(
            "SELECT name FROM public.tags WHERE name >= ? ORDER BY name LIMIT 1 FOR UPDATE", start
        ).fetchone()
        return None if row is None else str(row[0])

    # -- operations ---------------------------------------------------------------------
    def insert_account(self, key: int | None = None) -> None:
        rng = self.rng
        self.x(
            "INSERT INTO public.accounts VALUES (?, ?, ?, ?, ?, now() - ? * interval '1 minute')",
            key if key is not None else self.new_id(),
            f"owner {rng.randint(0, 9999)}",
            None if rng.random() < 0.1 else f"{rng.randint(-99999, 99999)}.{rng.randint(0, 99):02d}",
            small(rng),
            large_or_not(rng),
            rng.randint(0, 100_000),
        )

    def update_account(self) -> None:
        """A non-key update: the large value, untouched, stays where it is (TOASTed)."""
        rng = self.rng
        key = self.pick_account()
        if key is None:
            return
        if rng.random() < 0.5:
            self.x(
                "UPDATE public.accounts SET balance = balance + ?, touched = touched + interval '1 second' "
                "WHERE id = ?",
                rng.randint(-500, 500),
                key,
            )
        else:
            self.x("UPDATE public.accounts SET note = ?, balance = NULL WHERE id = ?", small(rng), key)

    def rewrite_doc(self) -> None:
        key = self.pick_account()
        if key is not None:
            self.x("UPDATE public.accounts SET doc = ? WHERE id = ?", large_or_not(self.rng), key)

    def move_account(self) -> None:
        """k1 -> k2, and half the time -> k3 in the same transaction; a later one continues."""
        key = self.pick_account()
        if key is None:
            return
        for _ in range(1 + (self.rng.random() < 0.5)):
            new = self.new_id()
            self.x("UPDATE public.accounts SET id = ?, note = coalesce(note, 'moved') WHERE id = ?", new, key)
            key = new
        self.chain["public.accounts"] = key

    def swap_accounts(self) -> None:
        """Two rows' keys swapped through a free one: a -> t, b -> a, t -> b (each key used again
        by another row in the same transaction)."""
        a, b = self.pick_account(), self.pick_account()
        if a is None or b is None or a == b:
            return
        t = self.new_id()
        self.x("UPDATE public.accounts SET id = ? WHERE id = ?", t, a)
        self.x("UPDATE public.accounts SET id = ? WHERE id = ?", a, b)
        self.x("UPDATE public.accounts SET id = ?, balance = balance - 1 WHERE id = ?", b, t)

    def continue_chain(self) -> None:
        key = self.chain.pop("public.accounts", None)
        if key is not None:
            new = self.new_id()
            if self.x("UPDATE public.accounts SET id = ? WHERE id = ?", new, key).rowcount:
                self.chain["public.accounts"] = new

    def delete_account(self) -> None:
        key = self.pick_account()
        if key is not None and self.x("DELETE FROM public.accounts WHERE id = ?", key).rowcount:
            self.vacated.append(("public.accounts", key))

    def reinsert(self) -> None:
        """A key this client deleted earlier, inserted again."""
        if not self.vacated:
            return
        table, key = self.vacated.pop(self.rng.randrange(len(self.vacated)))
        if table == "public.accounts":
            self.insert_account(key)
        elif table == "public.tags":
            self.x("INSERT INTO public.tags VALUES (?, ?, ?)", key, self.rng.randint(0, 9), small(self.rng))
        else:
            self.insert_lines(key)

    def delete_and_reinsert(self) -> None:
        """The same key deleted and inserted again in one transaction."""
        key = self.pick_account()
        if key is not None and self.x("DELETE FROM public.accounts WHERE id = ?", key).rowcount:
            self.insert_account(key)

    def insert_lines(self, grp: int | None = None) -> None:
        grp = grp if grp is not None else self.new_id()
        for n in range(1, self.rng.randint(1, 3) + 1):
            self.x(
                "INSERT INTO public.lines VALUES (?, ?, ?, ?, ?)",
                grp,
                n,
                self.rng.randint(1, 50),
                small(self.rng),
                large_or_not(self.rng) if n == 1 else small(self.rng),
            )

    def update_line(self) -> None:
        key = self.pick_line()
        if key is not None:
            self.x(
                "UPDATE public.lines SET qty = qty + 1, label = ? WHERE grp = ? AND n = ?",
                small(self.rng),
                *key,
            )

    def move_line(self) -> None:
        """A composite key moved: its n, then (half the time) its group, in one transaction."""
        key = self.pick_line()
        if key is None:
            return
        grp, n = key
        new_n = self.new_id()
        self.x("UPDATE public.lines SET n = ? WHERE grp = ? AND n = ?", new_n, grp, n)
        if self.rng.random() < 0.5:
            new_grp = self.new_id()
            self.x(
                "UPDATE public.lines SET grp = ?, qty = qty * 2 WHERE grp = ? AND n = ?", new_grp, grp, new_n
            )

    def move_group(self) -> None:
        """Every line of a group moved to a new group by one statement (several key changes)."""
        key = self.pick_line()
        if key is not None:
            self.x("UPDATE public.lines SET grp = ? WHERE grp = ?", self.new_id(), key[0])

    def delete_lines(self) -> None:
        key = self.pick_line()
        if key is not None and self.x("DELETE FROM public.lines WHERE grp = ?", key[0]).rowcount:
            self.vacated.append(("public.lines", key[0]))

    def hit_tag(self) -> None:
        key = self.pick_tag()
        if key is not None:
            self.x("UPDATE public.tags SET hits = hits + 1 WHERE name = ?", key)

    def rename_tag(self) -> None:
        key = self.pick_tag()
        if key is None:
            return
        for _ in range(1 + (self.rng.random() < 0.4)):
            new = self.new_name()
            self.x("UPDATE public.tags SET name = ? WHERE name = ?", new, key)
            key = new

    def rename_and_back(self) -> None:
        """A text key moved away and back in one transaction, the row changed in between."""
        key = self.pick_tag()
        if key is None:
            return
        away = self.new_name()
        self.x("UPDATE public.tags SET name = ? WHERE name = ?", away, key)
        self.x("UPDATE public.tags SET hits = hits + 10 WHERE name = ?", away)
        self.x("UPDATE public.tags SET name = ? WHERE name = ?", key, away)

    def insert_tag(self) -> None:
        self.x("INSERT INTO public.tags VALUES (?, 0, ?)", self.new_name(), large_or_not(self.rng))

    def delete_tag(self) -> None:
        key = self.pick_tag()
        if key is not None and self.x("DELETE FROM public.tags WHERE name = ?", key).rowcount:
            self.vacated.append(("public.tags", key))

    OPERATIONS: tuple[tuple[str, int], ...] = (
        ("insert_account", 10),
        ("update_account", 22),
        ("rewrite_doc", 4),
        ("move_account", 7),
        ("swap_accounts", 3),
        ("continue_chain", 5),
        ("delete_account", 4),
        ("reinsert", 5),
        ("delete_and_reinsert", 3),
        ("insert_lines", 6),
        ("update_line", 10),
        ("move_line", 5),
        ("move_group", 2),
        ("delete_lines", 2),
        ("hit_tag", 8),
        ("rename_tag", 4),
        ("rename_and_back", 2),
        ("insert_tag", 3),
        ("delete_tag", 2),
    )

    def transaction(self) -> list[str]:
        names = [n for n, _ in self.OPERATIONS]
        weights = [w for _, w in self.OPERATIONS]
        return self.rng.choices(names, weights, k=self.rng.choice((1, 1, 2, 3, 4)))

    def run(self, transactions: int, tally: Tally, hold: threading.Event | None = None) -> None:
        """``transactions`` seeded transactions; with ``hold``, the last third waits for it to be
        set (the second slot is created meanwhile, so its capture holds that third at least)."""
        for i in range(transactions):
            last_third = hold is not None and i == transactions - transactions // 3
            if last_third and hold is not None and not hold.wait(timeout=300):
                raise TimeoutError("the second slot was not created within 300 s")
            ops = self.transaction()
            state = (self.rng.getstate(), self.fresh, dict(self.chain), list(self.vacated))
            for attempt in range(RETRIES):
                self.statements = 0
                try:
                    for op in ops:
                        getattr(self, op)()
                    self.conn.commit()
                    tally.add(committed=1, statements=self.statements)
                    break
                except pyodbc.Error as e:
                    self.conn.rollback()
                    if e.args[0] not in ABORTS or attempt == RETRIES - 1:
                        raise
                    tally.add(retried=1)
                    # the same transaction again, from the same seeded state
                    rng_state, self.fresh, chain, vacated = state
                    self.rng.setstate(rng_state)
                    self.chain, self.vacated = dict(chain), list(vacated)
                    time.sleep(0.005 * (attempt + 1))


def seed_tables(pub: Publisher, rows: int, seed: int) -> None:
    """The rows the tables hold before any slot: accounts 1..rows, groups 1..rows/2 of three
    lines, tags t00001..; a large value in about half of them."""
    rng = random.Random(f"{seed}:before")
    conn = pub.connect()
    try:
        conn.autocommit = False
        cur = conn.cursor()
        cur.fast_executemany = False
        cur.executemany(
            "INSERT INTO public.accounts VALUES (?, ?, ?, ?, ?, timestamptz '2024-03-10 01:30:00-05' + ? * interval '1 hour')",
            [
                (i, f"owner {i}", f"{i}.25" if i % 7 else None, small(rng), large_or_not(rng), i)
                for i in range(1, rows + 1)
            ],
        )
        cur.executemany(
            "INSERT INTO public.lines VALUES (?, ?, ?, ?, ?)",
            [
                (g, n, g * n, small(rng), large_or_not(rng) if n == 1 else None)
                for g in range(1, rows // 2 + 1)
                for n in (1, 2, 3)
            ],
        )
        cur.executemany(
            "INSERT INTO public.tags VALUES (?, ?, ?)",
            [(f"t{i:05d}", i, large_or_not(rng)) for i in range(1, rows + 1)],
        )
        conn.commit()
    finally:
        conn.close()


# -- the publisher and its captures ------------------------------------------------------------
FORMATS = ("wal2json", "wal2json2")


@dataclass(frozen=True)
class Published:
    """The captures, their snapshots, the articles from the publisher's catalog, and the
    publisher's tables as text once every transaction committed."""

    folder: Path
    articles: Path
    changes: dict[str, Path]  # format -> capture file
    snapshots: dict[str, Path]  # format -> snapshot file
    expected: dict[str, list[tuple[Any, ...]]]  # table -> rows as text, ordered by key
    transactions: int  # committed by the clients
    retried: int  # aborted by the publisher (deadlocks) and run again
    statements: int
    seconds: float  # the traffic's wall time
    unchanged_toast: dict[str, int]  # format -> updates whose capture left out a large value


def table_rows(cs: str, table: str) -> list[tuple[Any, ...]]:
    """Every row of ``table``, every column as text, read in a UTC session, ordered by its key."""
    return text_rows(cs, table, ", ".join(KEYS[table]))


def _capture(*args: str) -> None:
    from applier.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["capture", *args])
    assert code == 0, f"applier capture {' '.join(a for a in args if 'Pwd=' not in a)}: exit {code}"


def _left_out(path: Path, version: int) -> int:
    """Updates in a capture whose new row lacks a column (an unchanged TOASTed value)."""
    width = {"public.accounts": 6, "public.lines": 5, "public.tags": 3}
    n = 0
    with path.open(encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            changes = doc.get("change", []) if version == 1 else [doc]
            for c in changes:
                kind = c.get("kind") or {"U": "update"}.get(c.get("action", ""))
                if kind != "update":
                    continue
                got = len(c["columnnames"]) if version == 1 else len(c["columns"])
                n += got < width[f"{c['schema']}.{c['table']}"]
    return n


def publish(
    folder: Path,
    *,
    seed: int,
    transactions: int,
    clients: int = 4,
    initial: int = 60,
    say: Callable[[str], None] = lambda _: None,
) -> Published:
    """Start a publisher, fill its tables, create the version 1 slot (with its snapshot), run
    ``transactions`` seeded transactions on ``clients`` connections at once (creating the version
    2 slot a third of the way in, while they run), read both slots out, and keep the publisher's
    final tables as text. The publisher is stopped on return."""
    from applier.catalog.files import articles_toml
    from applier.catalog.target import read_target

    folder.mkdir(parents=True, exist_ok=True)
    changes = {f: folder / f"capture.{f}.jsonl" for f in FORMATS}
    snapshots = {f: folder / f"snapshot.{f}.jsonl" for f in FORMATS}
    for path in (*changes.values(), *snapshots.values()):
        path.unlink(missing_ok=True)  # a capture continues an existing file: start anew
    tables = ",".join(TABLES)
    with start_publisher(timezone="America/St_Johns") as pub:
        src = pub.connection_string
        pub.execute(*DDL)
        seed_tables(pub, initial, seed)
        slot = {f: f"harness_{f}" for f in FORMATS}

        def create(fmt: str) -> None:
            _capture("--source", src, "--slot", slot[fmt], "--create-slot", "--format", fmt,
                     "--tables", tables, "--out", str(changes[fmt]), "--snapshot", str(snapshots[fmt]))  # fmt: skip

        create("wal2json")
        tally = Tally()
        workers = [Client(pub, i, seed, initial, clients) for i in range(clients)]
        share = [transactions // clients + (i < transactions % clients) for i in range(clients)]
        errors: list[BaseException] = []

        created = threading.Event()

        def work(c: Client, n: int) -> None:
            try:
                c.run(n, tally, created)
            except BaseException as e:  # noqa: BLE001 - re-raised on the main thread
                errors.append(e)

        started = time.monotonic()
        threads = [
            threading.Thread(target=work, args=(c, n), daemon=True)
            for c, n in zip(workers, share, strict=True)
        ]
        for t in threads:
            t.start()
        while tally.committed < transactions // 3 and any(t.is_alive() for t in threads):
            time.sleep(0.02)
        try:
            create("wal2json2")  # while the clients run: the slot's consistent point among them
        finally:
            created.set()
        for t in threads:
            t.join()
        seconds = time.monotonic() - started
        for c in workers:
            c.close()
        if errors:
            raise errors[0]
        say(
            f"publisher: {tally.committed} transactions ({tally.statements} statements, {tally.retried} "
            f"retried after a deadlock) on {clients} connections in {seconds:.1f} s"
        )
        for fmt in FORMATS:
            _capture("--source", src, "--slot", slot[fmt], "--format", fmt, "--tables", tables,
                     "--out", str(changes[fmt]))  # fmt: skip
        catalog = read_target(src, list(TABLES))
        articles = folder / "articles.toml"
        articles.write_text(articles_toml(catalog, "the publisher"), encoding="utf-8")
        expected = {t: table_rows(src, t) for t in TABLES}
    left = {f: _left_out(changes[f], i + 1) for i, f in enumerate(FORMATS)}
    return Published(
        folder, articles, changes, snapshots, expected, tally.committed, tally.retried, tally.statements,
        round(seconds, 2), left,
    )  # fmt: skip


# -- the cells ---------------------------------------------------------------------------------
# README "Ordering hazards": round-robin deals whole transactions to streams; with the
# independent model a later change of a row may commit before an earlier one on another stream
# and nothing fails (a silent reorder). Key-hash with the independent model too: a stream's
# deferred transaction does not hold back the other streams, so a later key move into a key it
# inserted (or a later update of the row it moved) may commit first, silently, and the deferred
# replay then meets a duplicate key or a row not found (seen in a v2 capture: "the command at lsn
# 29: duplicate_key"). Those cells may diverge, and then applier must say so. Every other
# combination below must converge; writeset (which waits for each such dependency) runs with the
# independent model only (the agent commits per round, a dependency inside a round would never
# show as committed).
MAY_DIVERGE = {("round-robin", "independent"), ("key-hash", "independent")}
UNSUPPORTED = {("writeset", "agent")}
PARALLEL = (
    ("key-hash", "agent"),
    ("key-hash", "independent"),
    ("round-robin", "agent"),
    ("round-robin", "independent"),
    ("writeset", "independent"),
)


# How a cell reads its format's capture: "capture" as captured (``run --format``), or
# "converted": the canonical files ``applier convert --format F --snapshot`` wrote once from it
# (the same reader; a cell then costs a third: no capture read and no TOASTed values filled).
READS = ("capture", "converted")


@dataclass(frozen=True)
class Cell:
    format: str
    streams: int
    partition: str
    model: str
    set_apply: bool
    read: str = "capture"

    @property
    def must_converge(self) -> bool:
        return (self.partition, self.model) not in MAY_DIVERGE

    @property
    def name(self) -> str:
        mode = "set" if self.set_apply else "rows"
        return f"{self.format}-{self.read}-n{self.streams}-{self.partition}-{self.model}-{mode}"


def cells(
    formats: Sequence[str] = FORMATS,
    streams: Sequence[int] = (1, 4, 8),
    combos: Sequence[tuple[str, str]] = PARALLEL,
    set_apply: Sequence[bool] = (False, True),
    read: str = "capture",
) -> list[Cell]:
    """N = 1 runs the serial baseline (``single``) with both models; every N above 1 each
    parallel combination in ``combos``."""
    out = []
    for fmt in formats:
        for n in streams:
            pairs = [("single", "agent"), ("single", "independent")] if n == 1 else list(combos)
            for partition, model in pairs:
                for s in set_apply:
                    out.append(Cell(fmt, n, partition, model, s, read))
    return out


def matrix_cells(streams: Sequence[int] = (1, 4, 8)) -> list[Cell]:
    """The full matrix on the converted captures, and per format one cell reading the capture
    itself (N = 4, key-hash, agent)."""
    direct = [Cell(f, 4, "key-hash", "agent", False, "capture") for f in FORMATS]
    return direct + cells(streams=streams, read="converted")


@dataclass(frozen=True)
class Converted:
    """A capture converted once by ``applier convert --snapshot``: the canonical folders."""

    changes: Path
    snapshot: Path
    seconds: float


def convert(spark: Any, published: Published, formats: Sequence[str] = FORMATS) -> dict[str, Converted]:
    """Each format's capture and snapshot as canonical files (``applier.api.convert``)."""
    from applier.api import convert as convert_capture
    from applier.config import load_config

    out = {}
    config = load_config(published.articles)
    for fmt in formats:
        folder = published.folder / f"converted.{fmt}"
        done = convert_capture(
            config, published.changes[fmt], folder, fmt, spark=spark, snapshot=published.snapshots[fmt]
        )
        out[fmt] = Converted(done.changes, done.snapshot, round(done.seconds, 2))
    return out


def run_cell(
    spark: Any,
    endpoint: Any,
    published: Published,
    cell: Cell,
    converted: dict[str, Converted] | None = None,
) -> dict[str, Any]:
    """One run of ``cell`` into ``endpoint`` (its tables created anew), then every table compared
    with the publisher's, row for row. Returns the cell's figures."""
    import applier
    from applier.config import load_config, with_overrides

    config = with_overrides(
        load_config(published.articles),
        run={
            "subscription": "harness",
            "streams": cell.streams,
            "partition": cell.partition,
            "model": cell.model,
            "set_apply": cell.set_apply,
            "lock_timeout_ms": 300,
        },
    )
    started = time.monotonic()
    if cell.read == "capture":
        inputs: dict[str, Any] = {
            "changes": published.changes[cell.format],
            "snapshot": published.snapshots[cell.format],
            "changes_format": cell.format,
        }
    else:
        assert converted is not None, "convert() the captures first"
        done = converted[cell.format]
        inputs = {"changes": done.changes, "snapshot": done.snapshot}
    result = applier.run(config, endpoint, spark=spark, **inputs)
    seconds = time.monotonic() - started
    (sub,) = result.subscriptions
    s = sub.summary
    equal, compared, differing = 0, 0, []
    for table in TABLES:
        got = table_rows(endpoint.connection_string, table)
        want = published.expected[table]
        compared += len(want)
        if got == want:
            equal += 1
        else:
            differing.append(_difference(table, want, got))
    verdict = sub.verdict.value
    same = equal == len(TABLES)
    if cell.must_converge:
        ok = verdict == "converged" and same
    else:  # applier's own verdict must agree with the publisher
        ok = (verdict == "converged") == same and verdict != "unknown"
    return {
        **asdict(cell),
        "must_converge": cell.must_converge,
        "transactions": s.transactions,
        "commands": s.commands,
        "conflicts": sum(s.conflicts.values()),
        "conflicts_by_class": {k: v for k, v in s.conflicts.items() if v},
        "resets": s.resets,
        "rounds": s.rounds,
        "rounds_parallel": s.rounds_parallel,
        "deferred": s.deferred,
        "rows_compared": compared,
        "tables_equal": equal,
        "tables": len(TABLES),
        "verdict": verdict,
        "divergent_rows": sub.check.divergent_rows,
        "reason": sub.check.reason or sub.failed,
        "publisher_differences": differing,
        "ok": ok,
        "seconds": round(seconds, 2),
    }


def _difference(table: str, want: list[tuple[Any, ...]], got: list[tuple[Any, ...]]) -> str:
    """The first difference of a table, shown short (large values cut)."""
    n = len(KEYS[table])
    w = {r[:n]: r for r in want}
    g = {r[:n]: r for r in got}

    def cut(r: tuple[Any, ...] | None) -> Any:
        return (
            None
            if r is None
            else tuple(v[:30] + "..." if isinstance(v, str) and len(v) > 40 else v for v in r)
        )

    missing = [k for k in w if k not in g]
    extra = [k for k in g if k not in w]
    different = [k for k in w if k in g and w[k] != g[k]]
    first = (different or missing or extra)[0]
    return (
        f"{table}: {len(missing)} missing, {len(extra)} extra, {len(different)} different; "
        f"first {first}: publisher {cut(w.get(first))}, subscriber {cut(g.get(first))}"
    )


# -- figures -----------------------------------------------------------------------------------
COLUMNS = (
    ("format", "format"),
    ("read", "read"),
    ("streams", "N"),
    ("partition", "strategy"),
    ("model", "model"),
    ("set_apply", "set"),
    ("transactions", "xacts"),
    ("commands", "cmds"),
    ("conflicts", "conflicts"),
    ("resets", "resets"),
    ("rounds", "rounds"),
    ("rounds_parallel", "parallel"),
    ("deferred", "deferred"),
    ("rows_compared", "rows"),
    ("tables_equal", "equal"),
    ("verdict", "verdict"),
    ("seconds", "s"),
)


def row_text(r: dict[str, Any]) -> str:
    """One cell as a line (progress while the matrix runs)."""
    return table_text([r]).splitlines()[1]


def table_text(rows: Sequence[dict[str, Any]]) -> str:
    """The cells as a plain text table (a cell that may diverge is marked *)."""

    def show(r: dict[str, Any], k: str) -> str:
        v = r[k]
        if k == "set_apply":
            return "on" if v else "off"
        if k == "tables_equal":
            return f"{v}/{r['tables']}"
        if k == "verdict":
            return v + ("" if r["must_converge"] else " *") + ("" if r["ok"] else " FAIL")
        return str(v)

    head = [h for _, h in COLUMNS]
    body = [[show(r, k) for k, _ in COLUMNS] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    lines = [
        "  ".join(x.ljust(w) for x, w in zip(line, widths, strict=True)).rstrip() for line in [head, *body]
    ]
    return "\n".join(lines)


def figures(
    published: Published,
    rows: Sequence[dict[str, Any]],
    seconds: float,
    converted: dict[str, Converted] | None = None,
) -> dict[str, Any]:
    """The matrix's figures: the publisher's traffic, the conversions, every cell, the failures."""
    return {
        "publisher": {
            "transactions": published.transactions,
            "retried_after_deadlock": published.retried,
            "statements": published.statements,
            "seconds": published.seconds,
            "updates_with_unchanged_toast": published.unchanged_toast,
            "rows": {t: len(r) for t, r in published.expected.items()},
        },
        "converted_seconds": {f: c.seconds for f, c in (converted or {}).items()},
        "cells": list(rows),
        "failed": [r for r in rows if not r["ok"]],
        "seconds": round(seconds, 1),
        # the machine's load at the end (1, 5, 15 minutes): the seconds above depend on it
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }


def run_matrix(
    spark: Any,
    endpoint: Any,
    published: Published,
    grid: Sequence[Cell],
    on_row: Callable[[dict[str, Any]], None] | None = None,
    converted: dict[str, Converted] | None = None,
) -> list[dict[str, Any]]:
    if converted is None and any(c.read == "converted" for c in grid):
        converted = convert(spark, published, sorted({c.format for c in grid if c.read == "converted"}))
    rows = []
    for cell in grid:
        row = run_cell(spark, endpoint, published, cell, converted)
        rows.append(row)
        if on_row:
            on_row(row)
    return rows


@contextlib.contextmanager
def subscriber() -> Iterator[Any]:
    """A subscriber cluster (embedded PostgreSQL) and its database for the cells."""
    from applier.targets.embedded import EmbeddedPostgres

    server = EmbeddedPostgres().start()
    try:
        yield server.subscriber("harness")
    finally:
        server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.support.harness", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="out/publisher-matrix", help="folder for the captures and figures.json")
    p.add_argument("--transactions", type=int, default=MATRIX_TRANSACTIONS)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--seed", type=int, default=31)
    p.add_argument("--streams", default="1,4,8", help="comma-separated N of the matrix")
    a = p.parse_args(argv)
    from applier.sparkenv.session import spark_session

    out = Path(a.out)
    streams = [int(n) for n in a.streams.split(",")]
    started = time.monotonic()
    published = publish(out, seed=a.seed, transactions=a.transactions, clients=a.clients, say=print)
    spark = spark_session(max(*streams, 4), app="applier-harness", quick_jit=True)  # direct cells: N = 4
    try:
        converted = convert(spark, published)
        with subscriber() as endpoint:
            rows = run_matrix(
                spark,
                endpoint,
                published,
                matrix_cells(streams),
                on_row=lambda r: print(row_text(r)),
                converted=converted,
            )
    finally:
        spark.stop()
    result = figures(published, rows, time.monotonic() - started, converted)
    (out / "figures.json").write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    print(table_text(rows))
    print(
        f"{len(rows)} cells, {len(result['failed'])} failed, {result['seconds']} s; figures in {out / 'figures.json'}"
    )
    return 1 if result["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
