"""Embedded Babelfish: a throwaway T-SQL engine (TDS on a free port) started from a local build.

Babelfish for PostgreSQL (AWS; the engine behind Aurora PostgreSQL's Babelfish) is a
PostgreSQL fork with extensions that speak T-SQL and SQL Server's TDS protocol. applier
reaches it as it reaches SQL Server, through FreeTDS ODBC, with the T-SQL dialect; where the
engine differs from SQL Server, :class:`applier.dialects.tsql.BabelfishDialect`'s capability
flags say so (the README's "SQL Server" section lists each difference with its test).

The build is found from ``$APPLIER_BABELFISH`` (an unpacked tree holding ``bin/postgres``, a
folder holding one, or a ``.tar.zst`` / ``.tar.gz`` of one), else from a ``shared/babelfish/``
folder beside the working directory or the source tree (where these machines keep it). A
tarball is unpacked once into a cache folder keyed by its SHA-256. ``ci/babelfish.sh`` builds
the same versions with the same patch where the sources can be downloaded.

The cluster is started like the embedded PostgreSQL (:class:`~applier.targets.cluster.
ServerProcess`): initialized in an owned folder, run as an unprivileged account when applier
runs as root, listening on loopback only (the PostgreSQL side on one free port, TDS on
another), removed at exit, Ctrl-C, SIGTERM, or by the next run after a kill -9. Babelfish
runs in ``multi-db`` migration mode, so each subscriber gets a T-SQL database of its own
(``CREATE DATABASE``). TDS logins authenticate with md5 (Babelfish refuses SCRAM); the login
``applier`` has a password generated at start, redacted wherever a connection string is shown.
Measured here: about 2 s from nothing to a database that answers over TDS.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import re
import secrets
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from applier import leftovers
from applier.errors import TargetError
from applier.targets.base import Target
from applier.targets.cluster import ServerProcess, free_port, unprivileged_user, write_settings
from applier.targets.connstr import add_secret, ensure_odbc_env, redact

ENV = "APPLIER_BABELFISH"
SHARED = Path("shared") / "babelfish"  # beside the working directory or the source tree
TARBALL_SUFFIXES = (".tar.zst", ".tar.gz", ".tgz")
LOGIN = "applier"
DATABASE = "applier"
PG_DATABASE = "babelfish_db"  # the PostgreSQL database that holds every T-SQL database
_DB_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


class BabelfishMissing(TargetError):
    """No Babelfish build was found: tests skip on it, a run fails with it."""


def _tree(folder: Path) -> Path | None:
    """The build tree at or directly under ``folder`` (it holds bin/postgres)."""
    if (folder / "bin" / "postgres").is_file():
        return folder
    for sub in sorted(folder.glob("*/bin/postgres")):
        return sub.parent.parent
    return None


def _tarball(folder: Path) -> Path | None:
    found = sorted(p for p in folder.iterdir() if p.name.endswith(TARBALL_SUFFIXES))
    return found[-1] if found else None


def cache_root() -> Path:
    """Where tarballs are unpacked. As root the server's account must read the binaries, and
    root's home is closed to it: /var/cache/applier then; else ~/.cache/applier."""
    if os.environ.get("APPLIER_CACHE"):
        return Path(os.environ["APPLIER_CACHE"])
    if os.geteuid() == 0:
        return Path("/var/cache/applier")
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "applier"


def unpack(tarball: Path) -> Path:
    """The tree of ``tarball``, unpacked once into the cache (keyed by its SHA-256); a half
    unpacked copy (a kill during tar) is never used: it is unpacked aside, then renamed."""
    digest = hashlib.sha256()
    with open(tarball, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    dest = cache_root() / "babelfish" / digest.hexdigest()[:16]
    tree = _tree(dest) if dest.is_dir() else None
    if tree is not None:
        return tree
    dest.parent.mkdir(parents=True, exist_ok=True)
    for p in (cache_root(), dest.parent):
        os.chmod(p, 0o755)  # the server's account reads the binaries
    part = Path(tempfile.mkdtemp(prefix=dest.name + ".part-", dir=dest.parent))
    os.chmod(part, 0o755)
    res = subprocess.run(["tar", "-C", str(part), "-xaf", str(tarball)], capture_output=True, text=True)
    if res.returncode != 0:
        import shutil

        shutil.rmtree(part, ignore_errors=True)
        hint = " (a .tar.zst needs zstd: apt-get install zstd)" if tarball.name.endswith(".zst") else ""
        raise TargetError(f"cannot unpack the Babelfish build {tarball}: {res.stderr.strip()[-500:]}{hint}")
    try:
        part.rename(dest)
    except OSError:  # another process unpacked it first
        import shutil

        shutil.rmtree(part, ignore_errors=True)
    tree = _tree(dest)
    if tree is None:
        raise TargetError(f"the Babelfish build {tarball} holds no bin/postgres")
    return tree


def _search_folders() -> list[Path]:
    """``shared/babelfish`` beside the working directory and beside the source tree."""
    here = Path(__file__).resolve()
    bases = [Path.cwd(), *Path.cwd().parents, *here.parents]
    out: list[Path] = []
    for b in bases:
        cand = b / SHARED
        if cand.is_dir() and cand not in out:
            out.append(cand)
    return out


def find_build() -> Path:
    """The Babelfish build tree (unpacked if it is a tarball); :class:`BabelfishMissing` names
    ``$APPLIER_BABELFISH`` when there is none."""
    given = os.environ.get(ENV, "").strip()
    if given:
        p = Path(given).expanduser()
        if p.is_file() and p.name.endswith(TARBALL_SUFFIXES):
            return unpack(p)
        if p.is_dir():
            tree = _tree(p)
            if tree is not None:
                return tree
            tb = _tarball(p)
            if tb is not None:
                return unpack(tb)
        raise BabelfishMissing(
            f"${ENV}={given}: neither a Babelfish build tree (holding bin/postgres) nor a "
            f"{' / '.join(TARBALL_SUFFIXES)} of one"
        )
    for folder in _search_folders():
        tree = _tree(folder)
        if tree is not None:
            return tree
        tb = _tarball(folder)
        if tb is not None:
            return unpack(tb)
    raise BabelfishMissing(
        f"no Babelfish build found: set ${ENV} to a build tree or its tarball (ci/babelfish.sh "
        f"builds one; the README's SQL Server section gives the Docker route), or put it in {SHARED}/"
    )


def available() -> tuple[bool, str]:
    """(True, build) when a Babelfish build is found, else (False, why): tests skip with why."""
    try:
        return True, str(find_build())
    except BabelfishMissing as e:
        return False, str(e)


def _init_sql(password: str) -> str:
    """What psql runs once: the login, the PostgreSQL database holding the T-SQL ones, and
    Babelfish's own set-up (README of the build: its start recipe)."""
    quoted = "'" + password.replace("'", "''") + "'"
    return f"""\\set ON_ERROR_STOP 1
CREATE USER {LOGIN} WITH SUPERUSER CREATEDB CREATEROLE PASSWORD {quoted} INHERIT;
CREATE DATABASE {PG_DATABASE} OWNER {LOGIN};
\\c {PG_DATABASE}
SET client_min_messages = error;
CREATE EXTENSION IF NOT EXISTS babelfishpg_tds CASCADE;
GRANT ALL ON SCHEMA sys TO {LOGIN};
CALL sys.initialize_babelfish('{LOGIN}');
"""


@dataclass
class EmbeddedBabelfish(ServerProcess, Target):
    """One throwaway Babelfish cluster. Use as a context manager or call start()/stop()."""

    database: str = DATABASE
    synchronous_commit: bool = True
    max_connections: int = 100
    keep: bool = False
    port: int = 0  # TDS (what clients use)
    pg_port: int = 0  # the PostgreSQL side (psql, for set-up and diagnosis)
    build: Path | None = None
    _password: str = ""
    _root: Path | None = None
    _proc: subprocess.Popen[bytes] | None = None
    _runas: pwd.struct_passwd | None = None
    label = "embedded Babelfish"

    def start(self) -> EmbeddedBabelfish:
        if self.started:
            return self
        build = self.build or find_build()
        self.build = build
        bindir = build / "bin"
        self._runas = unprivileged_user()
        leftovers.clean()
        self._root = leftovers.owned_dir("applier-bbf-")
        os.chmod(self._root, 0o755)
        datadir, sockdir = self._root / "data", self._root / "sock"
        sockdir.mkdir(mode=0o700)  # local connections are trusted: the server's account only
        self._own(self._root, sockdir)
        self._password = secrets.token_urlsafe(18)
        add_secret(self._password)
        self._run(
            [
                str(bindir / "initdb"),
                "-D",
                str(datadir),
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--auth-local=trust",
                "--auth-host=md5",  # TDS logins: Babelfish refuses SCRAM
                "--no-sync",
            ]
        )
        self.pg_port = self.pg_port or free_port()
        self.port = self.port or free_port()
        write_settings(
            datadir,
            {
                "listen_addresses": "127.0.0.1",
                "port": str(self.pg_port),
                "unix_socket_directories": str(sockdir),
                "shared_preload_libraries": "babelfishpg_tds",
                "babelfishpg_tds.listen_addresses": "127.0.0.1",
                "babelfishpg_tds.port": str(self.port),
                "babelfishpg_tsql.database_name": PG_DATABASE,
                # one T-SQL database per subscriber (single-db allows one besides master)
                "babelfishpg_tsql.migration_mode": "multi-db",
                "password_encryption": "md5",
                "max_connections": str(self.max_connections),
                "synchronous_commit": "on" if self.synchronous_commit else "off",
                "fsync": "on",
                "shared_buffers": "256MB",
                "max_wal_size": "2GB",
                "logging_collector": "off",
                "log_min_messages": "warning",
                "log_min_error_statement": "panic",
                "deadlock_timeout": "200ms",
            },
        )
        self._spawn([str(bindir / "postgres"), "-D", str(datadir)])
        isready = [str(bindir / "pg_isready"), "-h", str(sockdir), "-p", str(self.pg_port)]
        self._wait_ready(lambda: subprocess.run(isready, capture_output=True).returncode == 0)
        psql = [
            str(bindir / "psql"),
            "-X",
            "-q",
            "-h",
            str(sockdir),
            "-p",
            str(self.pg_port),
            "-U",
            "postgres",
        ]
        self._run([*psql, "-d", "postgres", "-f", "-"], stdin=_init_sql(self._password))
        self._wait_ready(self._tds_answers)
        self._tsql(f"IF DB_ID(N'{self.database}') IS NULL CREATE DATABASE [{self.database}]")
        return self

    # -- connection --------------------------------------------------------------
    @property
    def description(self) -> str:
        return f"embedded Babelfish on 127.0.0.1:{self.port}"

    @property
    def password(self) -> str:
        return self._password

    def connection_string(self, database: str | None = None) -> str:
        return (
            f"Driver={{FreeTDS}};Server=127.0.0.1;Port={self.port};Database={database or self.database};"
            f"UID={LOGIN};PWD={self._password};TDS_Version=7.4;ClientCharset=UTF-8;"
        )

    def how_to_reach(self) -> str:
        """What --keep prints: the connection string (loopback only; the password is the run's)."""
        return self.connection_string()

    def create_database(self, name: str) -> str:
        """A T-SQL database of its own (multi-db mode); returns its connection string."""
        if not _DB_NAME.fullmatch(name):
            raise TargetError(f"database name {name!r}: letters, digits and _ only, at most 63")
        self._tsql(f"IF DB_ID(N'{name}') IS NULL CREATE DATABASE [{name}]")
        return self.connection_string(name)

    # -- internals ---------------------------------------------------------------
    def _connect_master(self, timeout: int = 5) -> object:
        import pyodbc

        ensure_odbc_env()
        return pyodbc.connect(self.connection_string("master"), autocommit=True, timeout=timeout)

    def _tds_answers(self) -> bool:
        import pyodbc

        try:
            conn = self._connect_master(timeout=2)
        except pyodbc.Error:
            return False
        conn.close()  # type: ignore[attr-defined]
        return True

    def _tsql(self, sql: str) -> None:
        """One statement over TDS in master (names checked by the caller: no value in it)."""
        import pyodbc

        try:
            conn = self._connect_master()
            try:
                conn.cursor().execute(sql)  # type: ignore[attr-defined]
            finally:
                conn.close()  # type: ignore[attr-defined]
        except pyodbc.Error as e:
            raise TargetError(f"{self.description}: {redact(str(e))}") from None
