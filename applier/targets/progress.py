"""The progress table in the subscriber: ``applier.progress(subscription, stream, last_lsn, last_round)``,
and beside it the run each subscription holds: ``applier.runs(subscription, fingerprint,
settings, phase, snapshot_rows)``, and what verify compares the rows outside the stream's keys
with: ``applier.baselines(subscription, article, touched_keys, rest_rows, rest_digest)``
(``applier.verify.scope``), and the snapshot's key ranges loaded:
``applier.ranges(subscription, range_no, row_count, layout)`` (``applier.apply.snapshot``).

Every commit of a stream also writes its progress row, inside the same transaction, the way
the Distribution Agent keeps its subscription watermark: a rerun after a crash starts from
there (nothing lost, nothing applied twice), the ``independent`` model's writeset
dependencies wait on it, and the console's progress bar reads it. The run row says which run
those rows belong to (its settings and their digest) and the phase it reached, so that
``--resume`` continues only that run, from that phase.

A stream cut into segments (``applier.pipeline.segments``) keeps, beside segment 0's rows under
the subscription's own name, each later segment's under ``<subscription>/<k>`` (its rounds
count from 0 again), and one row per barrier event under ``<subscription>/barriers``: stream =
the barrier's place among the stream's barriers, last_lsn = its lsn, last_round = its outcome
(:data:`APPLIED_HERE`, or :data:`AS_ROWS`: a statement rolled back, its rows applied instead).
A barrier's row commits in the transaction of its effect (the ALTER TABLE and the procedures,
the statement, the procedure call), so a resumed run skips exactly the barriers it shows.

A snapshot load commits each key range with its ranges row, so a resumed load loads only
the ranges not recorded.

The statements are templates of each dialect (``sql/<dialect>/progress_*``, ``run_*``, ``range_*``,
``sql/common/``); this module is the one place that runs them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from applier.dialects.base import Dialect

# The phases of a run, in order: its input validated, nothing installed yet; tables and
# procedures created; the snapshot wholly loaded (with its row count); the streams applying;
# every round applied.
STARTED, INSTALLED, LOADED, APPLYING, APPLIED = "started", "installed", "loaded", "applying", "applied"

# A barrier's outcome, in its progress row's last_round: its effect committed at the subscriber;
# a statement whose row count differed (or that failed), rolled back: its rows are applied instead.
APPLIED_HERE, AS_ROWS = 1, 0


def segment_name(subscription: str, k: int) -> str:
    """The name segment ``k``'s progress rows carry (segment 0: the subscription's own)."""
    return subscription if k == 0 else f"{subscription}/{k}"


def barriers_name(subscription: str) -> str:
    """The name the subscription's barrier rows carry."""
    return f"{subscription}/barriers"


@dataclass(frozen=True)
class BarrierMark:
    """The watermark of one barrier event: its progress row, written in the transaction of its
    effect."""

    subscription: str
    index: int  # its place among the stream's barriers (0, 1, ...)
    lsn: int

    def params(self, outcome: int) -> tuple[Any, ...]:
        """The parameters of :attr:`ProgressTable.upsert_sql` recording ``outcome``."""
        return ProgressTable.upsert_params(barriers_name(self.subscription), self.index, self.lsn, outcome)


@dataclass(frozen=True)
class RunRecord:
    """The run a subscription holds in the subscriber."""

    fingerprint: str
    settings: dict[str, Any]
    phase: str
    snapshot_rows: int | None


@dataclass(frozen=True)
class Baseline:
    """An article's rows outside the stream's keys, as the subscriber held them after the snapshot
    load: how many, and the digest it took of them (None: the article is read whole, its touched
    keys being too many of its rows)."""

    article: str
    touched_keys: int
    rest_rows: int
    rest_digest: Decimal | None


@dataclass(frozen=True)
class LoadedRange:
    """A key range of the snapshot committed: its rows, and the layout of the ranges it is one of
    (the digest of their boundaries, :attr:`applier.apply.snapshot.KeyRanges.layout`)."""

    rows: int
    layout: str


class ProgressTable:
    """The progress table's statements for one dialect, and the few ways applier uses them."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.upsert_sql = dialect.progress_upsert_sql()
        self.select_sql = dialect.progress_select_sql()

    def ddl(self) -> list[str]:
        """Create the table (idempotent), with the objects generated statements rely on."""
        return self.dialect.progress_ddl()

    @staticmethod
    def upsert_params(subscription: str, stream: int, last_lsn: int, last_round: int) -> tuple[Any, ...]:
        """The parameters of :attr:`upsert_sql`, in its order."""
        return (subscription, stream, last_lsn, last_round)

    def clear(self, cur: Any, subscription: str) -> None:
        """Forget a subscription's progress (and its audit of commands): its next run starts
        from the beginning."""
        cur.execute(self.dialect.progress_clear_sql(), subscription)
        cur.execute(self.dialect.applied_clear_sql(), subscription)

    @property
    def audit_sql(self) -> str:
        """``[run] audit_commands``: the commit's command lsns, sent with its commands."""
        return self.dialect.applied_insert_sql()

    @staticmethod
    def audit_params(subscription: str, stream: int, rnd: int, lsns: Sequence[int]) -> tuple[Any, ...]:
        return (subscription, stream, rnd, ",".join(str(int(x)) for x in lsns))

    def audited(self, cur: Any, subscription: str) -> list[int]:
        """Every command lsn the subscription's commits recorded, once per commit that carried it."""
        table, q = self.dialect.applied_table(), self.dialect.quote
        cur.execute(f"SELECT {q('lsns')} FROM {table} WHERE {q('subscription')} = ?", subscription)
        return [int(x) for (text,) in cur.fetchall() for x in str(text).split(",") if x]

    def read(self, cur: Any, subscription: str) -> dict[int, tuple[int, int]]:
        """stream -> (last lsn, last round) committed."""
        cur.execute(self.select_sql, subscription)
        return {int(s): (int(lsn), int(rnd)) for s, lsn, rnd in cur.fetchall()}

    def forget_segments(self, cur: Any, subscription: str, segments: int) -> None:
        """Forget the progress of segments 1 .. ``segments`` - 1 and of every barrier: a new apply
        of the subscription (segment 0's rows are the install's to clear)."""
        for k in range(1, segments):
            self.clear(cur, segment_name(subscription, k))
        self.clear(cur, barriers_name(subscription))

    def read_barriers(self, cur: Any, subscription: str) -> dict[int, tuple[int, int]]:
        """The barriers an earlier run applied: their place -> (lsn, outcome)."""
        return self.read(cur, barriers_name(subscription))

    def last_round(self, cur: Any, subscription: str) -> int | None:
        """The last round any stream of the subscription committed (None: none yet)."""
        v = cur.execute(self.dialect.progress_max_round_sql(), subscription).fetchone()[0]
        return None if v is None else int(v)

    def read_run(self, cur: Any, subscription: str) -> RunRecord | None:
        """The run the subscriber holds for ``subscription`` (None: none was ever installed)."""
        row = cur.execute(self.dialect.run_select_sql(), subscription).fetchone()
        if row is None:
            return None
        rows = None if row[3] is None else int(row[3])
        return RunRecord(str(row[0]), json.loads(row[1]), str(row[2]), rows)

    def write_run(
        self,
        cur: Any,
        subscription: str,
        fingerprint: str,
        settings: dict[str, Any],
        phase: str,
        snapshot_rows: int | None = None,
    ) -> None:
        """Record the run and the phase it reached (commit with the work of that phase)."""
        text = json.dumps(settings, sort_keys=True, default=str)
        cur.execute(self.dialect.run_upsert_sql(), subscription, fingerprint, text, phase, snapshot_rows)

    def write_baselines(self, cur: Any, subscription: str, baselines: Sequence[Baseline]) -> None:
        """Replace the subscription's baselines (commit with the load's phase)."""
        self.clear_baselines(cur, subscription)
        sql = self.dialect.baseline_insert_sql()
        for b in baselines:
            cur.execute(sql, subscription, b.article, b.touched_keys, b.rest_rows, b.rest_digest)

    def read_baselines(self, cur: Any, subscription: str) -> dict[str, Baseline]:
        """article -> its baseline, for the subscription."""
        cur.execute(self.dialect.baseline_select_sql(), subscription)
        out = {}
        for article, keys, rows, digest in cur.fetchall():
            d = None if digest is None else Decimal(digest)
            out[str(article)] = Baseline(str(article), int(keys), int(rows), d)
        return out

    def clear_baselines(self, cur: Any, subscription: str) -> None:
        cur.execute(self.dialect.baseline_clear_sql(), subscription)

    def write_range(self, cur: Any, subscription: str, range_no: int, rows: int, layout: str) -> None:
        """Record a key range of the snapshot as loaded (commit with its rows)."""
        cur.execute(self.dialect.range_insert_sql(), subscription, range_no, rows, layout)

    def read_ranges(self, cur: Any, subscription: str) -> dict[int, LoadedRange]:
        """range number -> the key range of the subscription's snapshot committed."""
        cur.execute(self.dialect.range_select_sql(), subscription)
        return {int(n): LoadedRange(int(rows), str(layout)) for n, rows, layout in cur.fetchall()}

    def clear_ranges(self, cur: Any, subscription: str) -> None:
        """Forget the subscription's loaded ranges (its tables are created again, empty)."""
        cur.execute(self.dialect.range_clear_sql(), subscription)
