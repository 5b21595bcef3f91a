"""ODBC connection strings: parsing, redaction, dialect detection, the driver registry.

Connection strings carry secrets: :func:`redact` is applied to every one that reaches a log,
a report or an error message.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from applier.dialects import DIALECTS
from applier.dialects.base import Dialect
from applier.errors import TargetError

_SECRET_KEYS = {"pwd", "password", "accesstoken", "access_token", "sslpassword"}
_PAIR_RE = re.compile(r"\s*([^=;]+?)\s*=\s*(\{(?:[^}]|\}\})*\}|[^;]*)\s*(?:;|$)")


def parse_connection_string(cs: str) -> list[tuple[str, str]]:
    """'k=v;k2={v;2}' -> [(k, v), (k2, '{v;2}')]; TargetError when it cannot be read."""
    pairs: list[tuple[str, str]] = []
    pos = 0
    text = cs.strip()
    while pos < len(text):
        m = _PAIR_RE.match(text, pos)
        if not m or m.end() == pos:
            shown = redact(text[pos : pos + 40])
            raise TargetError(
                f"bad ODBC connection string near {shown!r}: expected key=value pairs separated by ';'"
            )
        pairs.append((m.group(1), m.group(2)))
        pos = m.end()
    if not pairs:
        raise TargetError("empty ODBC connection string")
    return pairs


def redact(cs: str) -> str:
    """The connection string with every secret value replaced by ***, and any secret applier
    generated (:func:`add_secret`) wherever it stands in the text."""

    def sub(m: re.Match[str]) -> str:
        if m.group(1).strip().lower() in _SECRET_KEYS:
            return f"{m.group(1)}=***;"
        return m.group(0)

    # A URL's password (scheme://user:password@host), given where a connection string goes
    out = _PAIR_RE.sub(sub, _URL_PASSWORD.sub(r"\1***@", cs))
    for secret in _GENERATED:
        out = out.replace(secret, "***")
    return out


_GENERATED: set[str] = set()  # passwords applier made (embedded --listen): never shown anywhere


def add_secret(value: str) -> None:
    """Redact ``value`` from every text :func:`redact` sees from now on (a generated password:
    long and random, so it is not a word that could stand in a message by chance)."""
    if len(value) >= 8:
        _GENERATED.add(value)


_URL_PASSWORD = re.compile(r"(://[^:/@\s;]*:)[^@\s;]*@")


def option(cs: str, key: str) -> str | None:
    for k, v in parse_connection_string(cs):
        if k.lower() == key.lower():
            return v[1:-1].replace("}}", "}") if v.startswith("{") else v
    return None


def dialect_for(cs: str) -> Dialect:
    """The dialect of the database a connection string reaches, from its driver name."""
    driver = (option(cs, "Driver") or "").lower()
    for cls in DIALECTS.values():
        if any(hint in driver for hint in cls.ODBC_DRIVER_HINTS):
            return cls()
    dsn = option(cs, "DSN")
    hint = f"DSN {dsn!r}" if dsn else f"driver {driver!r}"
    raise TargetError(
        f"cannot tell the database behind {hint}: name a PostgreSQL or SQL Server ODBC driver "
        "in Driver={...} (e.g. 'PostgreSQL Unicode', 'ODBC Driver 18 for SQL Server', 'FreeTDS')"
    )


def project_odbcsysini() -> str | None:
    """The project's own odbcinst.ini folder, used unless ODBCSYSINI is already set: the one
    set-up wrote into the virtual environment, else ci/ of the source tree."""
    import sys

    venv = Path(sys.prefix) / "etc" / "odbc"
    if (venv / "odbcinst.ini").exists():
        return str(venv)
    here = Path(__file__).resolve()
    for parent in here.parents:
        cand = parent / "ci" / "odbcinst.ini"
        if cand.exists():
            return str(cand.parent)
    return None


def ensure_odbc_env() -> None:
    """Point unixODBC at the project's odbcinst.ini (Debian's sets CommLog=1). A folder the
    user set is made absolute: Spark's executors run in their own work folders, where a
    relative one named nothing (every connection: Can't open lib 'PostgreSQL Unicode')."""
    given = os.environ.get("ODBCSYSINI")
    if given:
        os.environ["ODBCSYSINI"] = os.path.abspath(given)
    elif given is None:
        d = project_odbcsysini()
        if d:
            os.environ["ODBCSYSINI"] = d
