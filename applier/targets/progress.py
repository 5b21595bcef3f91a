"""The progress table in the subscriber: ``applier.progress(subscription, stream, last_lsn, last_round)``.

Every commit of a stream also writes its row here, inside the same transaction, the way the
Distribution Agent keeps its subscription watermark: a rerun after a crash starts from there
(nothing lost, nothing applied twice), the ``independent`` model's writeset dependencies wait
on it, and the console's progress bar reads it. Its statements are templates of each dialect
(``sql/<dialect>/progress_*.sql.j2``, ``sql/common/``); this module is the one place that
runs them.
"""

from __future__ import annotations

from typing import Any

from applier.dialects.base import Dialect


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
        """Forget a subscription's progress: its next run starts from the beginning."""
        cur.execute(self.dialect.progress_clear_sql(), subscription)

    def read(self, cur: Any, subscription: str) -> dict[int, tuple[int, int]]:
        """stream -> (last lsn, last round) committed."""
        cur.execute(self.select_sql, subscription)
        return {int(s): (int(lsn), int(rnd)) for s, lsn, rnd in cur.fetchall()}

    def last_round(self, cur: Any, subscription: str) -> int | None:
        """The last round any stream of the subscription committed (None: none yet)."""
        v = cur.execute(self.dialect.progress_max_round_sql(), subscription).fetchone()[0]
        return None if v is None else int(v)
