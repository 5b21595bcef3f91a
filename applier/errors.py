"""Errors applier raises on purpose. Each names the place it comes from."""

from __future__ import annotations


class ApplierError(Exception):
    """Base of all errors applier reports to the user without a traceback."""


class ConfigError(ApplierError):
    """A settings or article file that does not validate."""


class InputError(ApplierError):
    """A change record that does not fit its article (file, line, lsn, column)."""


class TargetError(ApplierError):
    """A subscriber that cannot be started or reached."""


class UnsupportedError(ApplierError):
    """Something a dialect cannot express."""
