"""How an apply error is classified: its :class:`ConflictClass` (what the report counts) and
the :class:`Classified` error the sender acts on. Each dialect classifies by the server's code,
never by English text (:meth:`applier.dialects.base.Dialect.classify`)."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Collection
from dataclasses import dataclass


class ConflictClass(str, enum.Enum):
    """Classes of apply errors, as the report counts them."""

    ROW_NOT_FOUND = "row_not_found"  # 20598
    DUPLICATE_KEY = "duplicate_key"  # the table's primary key: 2627 / 23505
    UNIQUE_INDEX = "unique_index"  # any other unique index or constraint: 2601 (2627) / 23505
    LOCK_TIMEOUT = "lock_timeout"  # 1222 / 55P03
    DEADLOCK = "deadlock"  # 1205 / 40P01
    FOREIGN_KEY = "foreign_key"  # 547 / 23503
    OTHER = "other"


@dataclass(frozen=True)
class Classified:
    """An apply error as the agent sees it."""

    cls: ConflictClass
    code: str  # SQLSTATE or native error number, as text
    transient: bool  # retry the same work on the same connection (tenacity)
    connection_lost: bool = False
    message: str = ""
    # The constraint or index that fired, as the server names it (duplicates, foreign keys).
    constraint: str | None = None

    def keyed(self, primary_keys: Collection[str]) -> Classified:
        """A duplicate told apart by the constraint that fired: one of ``primary_keys`` (the
        names :meth:`applier.dialects.base.Dialect.primary_key_name` gave the tables' primary keys) is duplicate_key,
        any other unique index or constraint unique_index."""
        dup = self.cls is ConflictClass.DUPLICATE_KEY
        # without case: Babelfish names a constraint in lower case ([PK_t] is pk_t there)
        if dup and self.constraint and self.constraint.casefold() not in {p.casefold() for p in primary_keys}:
            return dataclasses.replace(self, cls=ConflictClass.UNIQUE_INDEX)
        return self
