"""Errors applier raises on purpose. Each names the place it comes from."""

from __future__ import annotations

from collections.abc import Sequence


class ApplierError(Exception):
    """Base of all errors applier reports to the user without a traceback.

    ``details``: every bad line behind a message that names only the first (a change file's
    bad records): ``applier ... --errors all`` prints them all."""

    def __init__(self, message: str = "", details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.details = tuple(details)


class ConfigError(ApplierError):
    """A settings or article file that does not validate."""


class InputError(ApplierError):
    """A change record that does not fit its article (file, line, lsn, column)."""


class TargetError(ApplierError):
    """A subscriber that cannot be started or reached."""


class UnsupportedError(ApplierError):
    """Something a dialect cannot express."""


class Stopped(BaseException):
    """SIGINT or SIGTERM: the run unwinds, cleans up and exits 128 + the signal's number. A
    BaseException, so that no ``except Exception`` on the way swallows it."""

    def __init__(self, signum: int, name: str) -> None:
        super().__init__(f"stopped by {name}")
        self.signum = signum
        self.name = name


def stop_of(e: BaseException) -> Stopped | None:
    """The signal behind ``e``: itself, or one it was raised from or while handling (a signal
    that lands inside a C extension's call comes back wrapped in a SystemError)."""
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, Stopped):
            return cur
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return None
