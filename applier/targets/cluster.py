"""A throwaway database server process that applier starts from local binaries.

The embedded PostgreSQL (:mod:`applier.targets.embedded`) and the embedded Babelfish
(:mod:`applier.targets.babelfish`) are both PostgreSQL clusters: initialized in a folder owned
by this process (:func:`applier.leftovers.owned_dir`, so a later run removes what a kill -9
left), run as an unprivileged account when applier runs as root (PostgreSQL refuses root),
started in a session of their own (Ctrl-C in the terminal reaches applier, which stops them),
and stopped with a fast shutdown at exit, error, SIGTERM or SIGHUP. This class owns those
steps once; each target owns its settings and set-up.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from applier.errors import TargetError


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now (the server binds it a moment later)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def unprivileged_user() -> pwd.struct_passwd | None:
    """The account the server runs as, or None when we are not root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise TargetError("running as root and neither a 'postgres' nor a 'nobody' account exists")


def write_settings(datadir: Path, settings: dict[str, str]) -> None:
    """Append the settings to postgresql.auto.conf (quoted as the file quotes them)."""
    with open(datadir / "postgresql.auto.conf", "a", encoding="utf-8") as f:
        for k, v in settings.items():
            f.write(f"{k} = '{v}'\n")


class ServerProcess:
    """Process handling shared by the embedded clusters. The subclass (a dataclass) holds
    ``_root`` (the owned folder), ``_proc`` (the server) and ``_runas`` (the account), and
    sets ``keep`` (leave the server running at stop)."""

    _root: Path | None
    _proc: subprocess.Popen[bytes] | None
    _runas: pwd.struct_passwd | None
    keep: bool
    label: str = "server"  # how errors name the server

    @property
    def started(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _own(self, *paths: Path) -> None:
        """Hand ``paths`` to the account the server runs as."""
        if self._runas is not None:
            for p in paths:
                os.chown(p, self._runas.pw_uid, self._runas.pw_gid)

    def _demote(self) -> Callable[[], None] | None:
        runas = self._runas
        if runas is None:
            return None

        def demote() -> None:
            os.setgid(runas.pw_gid)
            os.setuid(runas.pw_uid)

        return demote

    def _run(self, cmd: list[str], env: dict[str, str] | None = None, stdin: str | None = None) -> str:
        """Run a tool of the build as the server's account; its stdout, or TargetError."""
        full_env = dict(os.environ)
        full_env.update(env or {})
        full_env["LC_ALL"] = "C"
        res = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            input=stdin,
            preexec_fn=self._demote(),
            env=full_env,
            cwd=str(self._root),
            timeout=120,
        )
        if res.returncode != 0:
            raise TargetError(f"{Path(cmd[0]).name} failed ({res.returncode}): {res.stderr.strip()[-2000:]}")
        return res.stdout

    def _spawn(self, cmd: list[str], env: dict[str, str] | None = None) -> None:
        """Start the server, its output into ``server.log``; stopped at exit and on signals."""
        import atexit

        assert self._root is not None
        full_env = dict(os.environ)
        full_env.update(env or {})
        logfile = open(self._root / "server.log", "ab")  # noqa: SIM115 - lives as long as the server
        self._proc = subprocess.Popen(
            cmd,
            stdout=logfile,
            stderr=subprocess.STDOUT,
            preexec_fn=self._demote(),
            env=full_env,
            start_new_session=True,  # Ctrl-C in the terminal reaches us, not the server
        )
        atexit.register(self.stop)
        self._install_signal_handlers()

    def _wait_ready(self, ready: Callable[[], bool], timeout_s: float = 60) -> None:
        """Poll ``ready`` until it holds; TargetError with the log's tail if the server exits."""
        assert self._root is not None and self._proc is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise TargetError(f"{self.label} exited at start-up:\n{self.log_tail()}")
            if ready():
                return
            time.sleep(0.05)
        raise TargetError(f"{self.label} did not become ready within {timeout_s:.0f} s:\n{self.log_tail()}")

    def log_tail(self, chars: int = 2000) -> str:
        if self._root is None:
            return ""
        try:
            return (self._root / "server.log").read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.keep:
            return
        import shutil

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
