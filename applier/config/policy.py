"""The error policy of a run: which errors a run stops on and which it skips.

Owns :class:`ErrorPolicy` and the table that maps SQL Server's native error numbers to
conflict classes, so that ``skip:2601:2627:20598`` means the same on every dialect. A skip
code must be one that some dialect of :data:`applier.dialects.DIALECTS` knows.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from applier.errors import ConfigError

# SQL Server native error numbers -> the conflict classes they raise, so that
# skip:2601:2627:20598 means the same on every dialect (PostgreSQL reports 23505 / RP598 for
# them). 2601 is a unique index's duplicate; 2627 a PRIMARY KEY's or a UNIQUE constraint's.
NATIVE_CLASS: dict[str, tuple[str, ...]] = {
    "20598": ("row_not_found",),
    "2601": ("unique_index",),
    "2627": ("duplicate_key", "unique_index"),
    "547": ("foreign_key",),
    "1222": ("lock_timeout",),
    "1205": ("deadlock",),
}

DATA_CONSISTENCY_CODES = ("2601", "2627", "20598")  # -SkipErrors of the agent profile of that name
POLICY_FORMS = "strict, skip:<codes>, continue-on-data-consistency-errors"


@cache
def known_codes() -> frozenset[str]:
    """Every native error number and SQLSTATE some dialect classifies (its ``KNOWN_CODES``)."""
    from applier.dialects import DIALECTS  # here: the dialects must stay free to import this package

    return frozenset(code for d in DIALECTS.values() for code in d.KNOWN_CODES)


@dataclass(frozen=True)
class ErrorPolicy:
    """strict: any error that a single connection also hits stops the run.
    skip: those native codes / SQLSTATEs are skipped and recorded."""

    kind: str = "strict"
    codes: tuple[str, ...] = ()

    @staticmethod
    def parse(text: str) -> ErrorPolicy:
        """``strict``, ``skip:<code>:<code>...`` or ``continue-on-data-consistency-errors``."""
        t = text.strip()
        if t == "strict":
            return ErrorPolicy()
        if t == "continue-on-data-consistency-errors":
            return ErrorPolicy("skip", DATA_CONSISTENCY_CODES)
        if t.startswith("skip:"):
            codes = tuple(c for c in t[5:].split(":") if c)
            if not codes:
                raise ConfigError("error policy skip: needs codes, e.g. skip:2601:2627:20598")
            known = known_codes()
            bad = [c for c in codes if c not in known]
            if bad:
                raise ConfigError(
                    f"error policy {text!r}: unknown error code(s) {bad} "
                    f"(codes a dialect knows: {', '.join(sorted(known))})"
                )
            return ErrorPolicy("skip", codes)
        raise ConfigError(f"unknown error policy {text!r} ({POLICY_FORMS})")

    def __str__(self) -> str:
        return "strict" if self.kind == "strict" else "skip:" + ":".join(self.codes)

    def skips(self, cls: str, code: str) -> bool:
        """Whether an error (conflict class, SQLSTATE or native number) is skipped."""
        if self.kind != "skip":
            return False
        return code in self.codes or any(cls in NATIVE_CLASS.get(c, ()) for c in self.codes)
