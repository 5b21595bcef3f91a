"""Embedded PostgreSQL: a throwaway cluster started by applier from the local binaries.

The cluster lives in a temporary directory, listens on a free loopback port and a socket
directory it owns (``listen``: also on another address, for Spark executors on other hosts:
then only with SCRAM-SHA-256 and a password generated for the run), and is torn down at exit (normal exit, error, Ctrl-C or SIGTERM). After a
kill -9 the next start (or ``applier clean``) stops it and removes its folder
(:mod:`applier.leftovers`: the folder names its owner process).
PostgreSQL refuses to run as root, so when applier runs as root the server runs as an
unprivileged account (``postgres`` where Debian's package created it, else ``nobody``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import pwd
import secrets
import shutil
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from applier import leftovers
from applier.errors import TargetError
from applier.targets.base import Target
from applier.targets.cluster import ServerProcess, free_port, unprivileged_user, write_settings
from applier.targets.connstr import add_secret, redact

_DEBIAN_GLOB = "/usr/lib/postgresql/*/bin"


def find_pg_bindir() -> Path:
    """Directory holding initdb and postgres: pg_config's BINDIR, else Debian's newest."""
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, check=True, timeout=10
            ).stdout.strip()
            candidates.append(Path(out))
        except (subprocess.SubprocessError, OSError):
            pass
    debian = sorted(
        Path("/").glob(_DEBIAN_GLOB.lstrip("/")),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        reverse=True,
    )
    candidates.extend(debian)
    for c in candidates:
        if (c / "initdb").exists() and (c / "postgres").exists():
            return c
    raise TargetError(
        "no PostgreSQL server binaries found (looked at pg_config --bindir and "
        f"{_DEBIAN_GLOB}); install Debian's postgresql package or run `make setup`"
    )


# -- listening beyond loopback (--listen) -------------------------------------------------------
LOOPBACK = "127.0.0.1"
_WILDCARDS = {"0.0.0.0": "0.0.0.0", "*": "*", "::": "127.0.0.1,::"}  # --listen -> listen_addresses
HBA_REMOTE = ("host all all 0.0.0.0/0 scram-sha-256", "host all all ::/0 scram-sha-256")


def is_loopback(address: str) -> bool:
    """Whether ``address`` (an IP or a host name) reaches this host only: then the cluster
    keeps its loopback set-up. A name is loopback when every address it resolves to is."""
    if address in _WILDCARDS:
        return False
    if address.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(address, None)
    except OSError as e:
        raise TargetError(f"--listen {address!r}: not an address of this host ({e.strerror or e})") from None
    return all(ipaddress.ip_address(str(i[4][0]).split("%")[0]).is_loopback for i in infos)


def listen_addresses(address: str) -> str:
    """postgresql.conf's listen_addresses for ``--listen address``: loopback always (applier's
    own tools reach the cluster there), and the address."""
    if address in _WILDCARDS:
        return _WILDCARDS[address]
    if is_loopback(address):
        return LOOPBACK
    return f"{LOOPBACK},{address}"


def hba_lines(address: str) -> list[str]:
    """pg_hba.conf lines added for ``--listen address``: any host, SCRAM-SHA-256 only (initdb
    wrote the local and loopback lines, also SCRAM-SHA-256)."""
    return [] if is_loopback(address) else list(HBA_REMOTE)


def _usable(ip: str) -> bool:
    a = ipaddress.ip_address(ip.split("%")[0])
    return not (a.is_loopback or a.is_link_local or a.is_unspecified)


def host_address() -> str:
    """An address of this host that other hosts can reach: what its name resolves to, else
    the first of ``hostname -I`` (the name often resolves to 127.0.1.1 on Debian)."""
    with contextlib.suppress(OSError):
        for info in socket.getaddrinfo(socket.gethostname(), None, type=socket.SOCK_STREAM):
            if _usable(str(info[4][0])):
                return str(info[4][0])
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=10).stdout
        for ip in out.split():
            with contextlib.suppress(ValueError):
                if _usable(ip):
                    return ip
    raise TargetError(
        "--listen: cannot tell an address of this host that executors can reach (its name "
        "resolves to loopback and `hostname -I` names none): give the address itself"
    )


def advertised_address(address: str) -> str:
    """The Server= executors use for ``--listen address``: the address itself, or for a
    wildcard (0.0.0.0, ::, *) an address of this host."""
    if address in _WILDCARDS:
        return host_address()
    return LOOPBACK if is_loopback(address) else address


def server_settings(
    address: str, port: int, sockdir: Path, max_connections: int, synchronous_commit: bool
) -> dict[str, str]:
    """The cluster's settings (postgresql.auto.conf) before ``extra_settings``."""
    settings = {
        "listen_addresses": listen_addresses(address),
        "port": str(port),
        "unix_socket_directories": str(sockdir),
        "max_connections": str(max_connections),
        "synchronous_commit": "on" if synchronous_commit else "off",
        "fsync": "on",
        "shared_buffers": "256MB",
        "max_wal_size": "2GB",
        "logging_collector": "off",
        "log_min_messages": "warning",
        "log_min_error_statement": "panic",
        "deadlock_timeout": "200ms",
    }
    if not is_loopback(address):
        settings["password_encryption"] = "scram-sha-256"  # a password set later is hashed so too
    return settings


def write_config(datadir: Path, settings: dict[str, str], hba: list[str]) -> None:
    """Append the settings to postgresql.auto.conf and the lines to pg_hba.conf."""
    write_settings(datadir, settings)
    if hba:
        with open(datadir / "pg_hba.conf", "a", encoding="utf-8") as f:
            f.write("\n# applier --listen: other hosts, password (SCRAM-SHA-256) only\n")
            f.writelines(line + "\n" for line in hba)


@dataclass
class EmbeddedPostgres(ServerProcess, Target):
    """One throwaway cluster. Use as a context manager or call start()/stop()."""

    database: str = "applier"
    user: str = "applier"
    synchronous_commit: bool = True
    max_connections: int = 100
    extra_settings: dict[str, str] = field(default_factory=dict)
    keep: bool = False
    port: int = 0
    listen: str = LOOPBACK  # another address: SCRAM-SHA-256 with a generated password
    datadir: Path | None = None
    _password: str = "applier"  # loopback only; a listening cluster's is generated at start
    _server: str | None = None
    _root: Path | None = None
    _proc: subprocess.Popen[bytes] | None = None
    _runas: pwd.struct_passwd | None = None
    label = "embedded PostgreSQL"

    # -- lifecycle ---------------------------------------------------------------
    def start(self) -> EmbeddedPostgres:
        if self.started:
            return self
        bindir = find_pg_bindir()
        remote = not is_loopback(self.listen)
        server = advertised_address(self.listen)  # a wildcard on a host without an address fails here
        self._runas = unprivileged_user()
        leftovers.clean()  # clusters and folders of runs that were killed (kill -9) go first
        self._root = leftovers.owned_dir("applier-pg-")
        os.chmod(self._root, 0o755)
        self.datadir = self._root / "data"
        sockdir = self._root / "sock"
        sockdir.mkdir()
        self._own(self._root, sockdir)
        if remote:
            self._password = secrets.token_urlsafe(24)
            add_secret(self._password)
        pwfile = self._root / "pw"
        pwfile.touch(mode=0o600)
        pwfile.write_text(self._password + "\n")
        self._own(pwfile)
        self._run(
            [
                str(bindir / "initdb"),
                "-D",
                str(self.datadir),
                "-U",
                self.user,
                "--pwfile",
                str(pwfile),
                "-A",
                "scram-sha-256",  # local and host (--auth-host) alike
                "-E",
                "UTF8",
                "--locale",
                "C",
                "--no-sync",
            ]
        )
        self.port = self.port or free_port("0.0.0.0" if remote and ":" not in server else LOOPBACK)
        self._server = server
        settings = server_settings(
            self.listen, self.port, sockdir, self.max_connections, self.synchronous_commit
        )
        settings.update(self.extra_settings)
        write_config(self.datadir, settings, hba_lines(self.listen))
        self._spawn([str(bindir / "postgres"), "-D", str(self.datadir)])
        isready = [str(bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)]
        self._wait_ready(lambda: subprocess.run(isready, capture_output=True).returncode == 0)
        self._run(
            [
                str(bindir / "createdb"),
                "-h",
                str(sockdir),
                "-p",
                str(self.port),
                "-U",
                self.user,
                self.database,
            ],
            env={"PGPASSWORD": self.password},
        )
        return self

    # -- connection --------------------------------------------------------------
    @property
    def description(self) -> str:
        if is_loopback(self.listen):
            return f"embedded PostgreSQL on 127.0.0.1:{self.port}"
        return (
            f"embedded PostgreSQL on {self.server}:{self.port} (listening on {self.listen}: "
            "SCRAM-SHA-256, generated password)"
        )

    @property
    def password(self) -> str:
        """The role's password: ``applier`` on loopback; generated when listening beyond it
        (redacted wherever a connection string is shown)."""
        return self._password

    @property
    def server(self) -> str:
        """The address executors connect to (Server=)."""
        return self._server or advertised_address(self.listen)

    @property
    def password_file(self) -> Path | None:
        """The file holding the password (mode 0600), while the cluster's folder exists."""
        return self._root / "pw" if self._root is not None else None

    def connection_string(self, database: str | None = None) -> str:
        return (
            f"Driver={{PostgreSQL Unicode}};Server={self.server};"
            f"Port={self.port};Database={database or self.database};"
            f"Uid={self.user};Pwd={self.password};"
        )

    def how_to_reach(self) -> str:
        """What --keep prints: the connection string; when listening beyond loopback, redacted,
        with the file that holds the password."""
        cs = self.connection_string()
        if is_loopback(self.listen):
            return cs
        return f"{redact(cs)} (the password is in {self.password_file}, readable by its owner only)"

    def create_database(self, name: str) -> str:
        """Create another database in this cluster; returns its connection string."""
        bindir = find_pg_bindir()
        assert self._root is not None
        self._run(
            [
                str(bindir / "createdb"),
                "-h",
                str(self._root / "sock"),
                "-p",
                str(self.port),
                "-U",
                self.user,
                name,
            ],
            env={"PGPASSWORD": self.password},
        )
        return self.connection_string(name)


@contextlib.contextmanager
def embedded_postgres(**kwargs: object) -> Iterator[EmbeddedPostgres]:
    pg = EmbeddedPostgres(**kwargs)  # type: ignore[arg-type]
    try:
        yield pg.start()
    finally:
        pg.stop()
