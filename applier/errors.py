"""Errors applier raises on purpose. Each names the place it comes from."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


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


def close_names(word: str, names: Iterable[str], n: int = 1) -> list[str]:
    """Up to ``n`` of ``names`` closest to a misspelt ``word``, closest first, as ``names``
    spell them: difflib's similarity 0.6 or more, case ignored."""
    import difflib

    by_folded: dict[str, str] = {}
    for name in names:
        by_folded.setdefault(name.lower(), name)
    return [by_folded[c] for c in difflib.get_close_matches(word.lower(), list(by_folded), n=n, cutoff=0.6)]


def did_you_mean(word: str, names: Iterable[str], n: int = 1, quote: bool = True) -> str:
    """``did you mean 'x'?`` (``'x', 'y'`` for several, unquoted without ``quote``) for a
    misspelt ``word`` of an error message; "" when none of ``names`` is close."""
    close = close_names(word, names, n)
    return f"did you mean {', '.join(repr(c) if quote else c for c in close)}?" if close else ""
