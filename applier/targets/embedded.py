"""Embedded PostgreSQL: a throwaway cluster started by applier from the local binaries.

The cluster lives in a temporary directory, listens on a free loopback port and a socket
directory it owns, and is torn down at exit (normal exit, error, Ctrl-C or SIGTERM). After a
kill -9 the next start (or ``applier clean``) stops it and removes its folder
(:mod:`applier.leftovers`: the folder names its owner process).
PostgreSQL refuses to run as root, so when applier runs as root the server runs as an
unprivileged account (``postgres`` where Debian's package created it, else ``nobody``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from applier import leftovers
from applier.errors import TargetError
from applier.targets.base import Target

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


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _unprivileged_user() -> pwd.struct_passwd | None:
    """The account the server runs as, or None when we are not root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise TargetError("running as root and neither a 'postgres' nor a 'nobody' account exists")


@dataclass
class EmbeddedPostgres(Target):
    """One throwaway cluster. Use as a context manager or call start()/stop()."""

    database: str = "applier"
    user: str = "applier"
    synchronous_commit: bool = True
    max_connections: int = 100
    extra_settings: dict[str, str] = field(default_factory=dict)
    keep: bool = False
    port: int = 0
    datadir: Path | None = None
    _root: Path | None = None
    _proc: subprocess.Popen[bytes] | None = None
    _runas: pwd.struct_passwd | None = None

    # -- lifecycle ---------------------------------------------------------------
    def start(self) -> EmbeddedPostgres:
        if self.started:
            return self
        bindir = find_pg_bindir()
        self._runas = _unprivileged_user()
        leftovers.clean()  # clusters and folders of runs that were killed (kill -9) go first
        self._root = leftovers.owned_dir("applier-pg-")
        os.chmod(self._root, 0o755)
        self.datadir = self._root / "data"
        sockdir = self._root / "sock"
        sockdir.mkdir()
        if self._runas is not None:
            for p in (self._root, sockdir):
                os.chown(p, self._runas.pw_uid, self._runas.pw_gid)
        pwfile = self._root / "pw"
        pwfile.write_text("applier\n")
        if self._runas is not None:
            os.chown(pwfile, self._runas.pw_uid, self._runas.pw_gid)
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
                "scram-sha-256",
                "-E",
                "UTF8",
                "--locale",
                "C",
                "--no-sync",
            ]
        )
        self.port = self.port or free_port()
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(sockdir),
            "max_connections": str(self.max_connections),
            "synchronous_commit": "on" if self.synchronous_commit else "off",
            "fsync": "on",
            "shared_buffers": "256MB",
            "max_wal_size": "2GB",
            "logging_collector": "off",
            "log_min_messages": "warning",
            "log_min_error_statement": "panic",
            "deadlock_timeout": "200ms",
        }
        settings.update(self.extra_settings)
        with open(self.datadir / "postgresql.auto.conf", "a", encoding="utf-8") as f:
            for k, v in settings.items():
                f.write(f"{k} = '{v}'\n")
        logfile = open(self._root / "server.log", "ab")  # noqa: SIM115 - lives as long as the server
        self._proc = subprocess.Popen(
            [str(bindir / "postgres"), "-D", str(self.datadir)],
            stdout=logfile,
            stderr=subprocess.STDOUT,
            preexec_fn=self._demote(),
            start_new_session=True,  # Ctrl-C in the terminal reaches us, not the server
        )
        atexit.register(self.stop)
        self._install_signal_handlers()
        self._wait_ready(bindir)
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
            env={"PGPASSWORD": "applier"},
        )
        return self

    def stop(self) -> None:
        if self.keep:
            return
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # fast shutdown
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    @property
    def started(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # -- connection --------------------------------------------------------------
    @property
    def description(self) -> str:
        return f"embedded PostgreSQL on 127.0.0.1:{self.port}"

    @property
    def password(self) -> str:
        return "applier"

    def connection_string(self, database: str | None = None) -> str:
        return (
            "Driver={PostgreSQL Unicode};Server=127.0.0.1;"
            f"Port={self.port};Database={database or self.database};"
            f"Uid={self.user};Pwd={self.password};"
        )

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

    # -- internals ---------------------------------------------------------------
    def _demote(self) -> Callable[[], None] | None:
        runas = self._runas
        if runas is None:
            return None

        def demote() -> None:
            os.setgid(runas.pw_gid)
            os.setuid(runas.pw_uid)

        return demote

    def _run(self, cmd: list[str], env: dict[str, str] | None = None) -> None:
        full_env = dict(os.environ)
        full_env.update(env or {})
        full_env["LC_ALL"] = "C"
        res = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            preexec_fn=self._demote(),
            env=full_env,
            cwd=str(self._root),
            timeout=120,
        )
        if res.returncode != 0:
            raise TargetError(f"{Path(cmd[0]).name} failed ({res.returncode}): {res.stderr.strip()[-2000:]}")

    def _wait_ready(self, bindir: Path) -> None:
        assert self._root is not None and self._proc is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                log = (self._root / "server.log").read_text(errors="replace")[-2000:]
                raise TargetError(f"embedded PostgreSQL exited at start-up:\n{log}")
            res = subprocess.run(
                [str(bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)], capture_output=True
            )
            if res.returncode == 0:
                return
            time.sleep(0.1)
        raise TargetError("embedded PostgreSQL did not become ready within 60 s")

    def _install_signal_handlers(self) -> None:
        # Only the main thread may install handlers; elsewhere atexit is what we have.
        import threading

        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, signal.SIGHUP):
            previous = signal.getsignal(sig)

            def handler(signum: int, frame: object, previous: object = previous) -> None:
                self.stop()
                if callable(previous):
                    previous(signum, frame)
                raise SystemExit(128 + signum)

            with contextlib.suppress(ValueError):
                signal.signal(sig, handler)


@contextlib.contextmanager
def embedded_postgres(**kwargs: object) -> Iterator[EmbeddedPostgres]:
    pg = EmbeddedPostgres(**kwargs)  # type: ignore[arg-type]
    try:
        yield pg.start()
    finally:
        pg.stop()
