"""The console's live progress of a run: one line per phase (generate or read, install, plan,
apply, verify), each with what it has counted, its total, its rate and its ETA.

The apply phase counts rounds committed (the progress table the agent keeps, polled);
the phases that are Spark jobs count the tasks of their running stages (Spark's status
tracker). Nothing is drawn as a bar until its total is known: a phase without one shows a
spinner and its elapsed time. When stdout is not a terminal (CI logs) only the phase lines
are printed, each once.

:class:`Doing` keeps what the run is doing (its last phase, the apply's round) for the line a
signal's stop prints: what was interrupted, and what that leaves in the subscriber.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text


class _Bar(BarColumn):
    """A bar only when the total is known (never an indeterminate one)."""

    def render(self, task: Task) -> Any:
        return super().render(task) if task.total else Text("")


class _Count(ProgressColumn):
    def render(self, task: Task) -> Text:
        unit = task.fields.get("unit", "")
        if task.total is None:
            return Text(f"{task.completed:,.0f} {unit}" if task.completed else "", style="progress.download")
        return Text(f"{task.completed:,.0f}/{task.total:,.0f} {unit}", style="progress.download")


class _Rate(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if not speed:
            return Text("")
        return Text(f"{speed:,.1f} {task.fields.get('unit', '')}/s", style="progress.data.speed")


class _Eta(ProgressColumn):
    def render(self, task: Task) -> Text:
        left = task.time_remaining
        if task.total is None or left is None or task.finished:
            return Text("")
        m, s = divmod(int(left), 60)
        return Text(f"ETA {m}:{s:02d}", style="progress.remaining")


def spark_tasks() -> tuple[int, int] | None:
    """(tasks done, tasks) of the running Spark stages of this process's context; None when
    nothing runs (or Spark is not started)."""
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    if sc is None:
        return None
    tracker = sc.statusTracker()
    done = total = 0
    for sid in tracker.getActiveStageIds():
        info = tracker.getStageInfo(sid)
        if info is not None:
            done += info.numCompletedTasks
            total += info.numTasks
    return (done, total) if total else None


# The phases a run's console lines begin (after "<subscription>: "), what a stop in each
# interrupts and what it leaves; a line that begins none of them (a note) keeps the phase.
_PHASES = (
    ("generating", "generating the workload", "this run applied nothing"),
    ("reading changes", "reading the changes", "this run applied nothing"),
    ("distributing", "distributing the changes", "this run applied nothing"),
    ("installing tables", "installing tables and procedures", "no change was applied"),
    (
        "loading the snapshot",
        "loading the snapshot",
        "the key ranges committed stay; --resume loads the rest",
    ),
    ("planning rounds", "planning the rounds", "no round was open"),
    ("applying", "applying", ""),  # the round: Doing.interrupted
    ("verifying", "verifying", "every round was applied and committed; the check did not finish"),
)

_ROUNDS = re.compile(r" in ([0-9]+) rounds")


@dataclass
class Doing:
    """What a run is doing: the phase its console said last (its index in ``_PHASES``) and the
    apply's rounds (committed, of how many)."""

    phase: int | None = None
    rounds: tuple[int, int] | None = None

    def said(self, text: str) -> None:
        # "<subscription>: <phase>"; a note of the whole run ("set-based apply is not available
        # for X: applying row by row") is no phase
        head = text.split(": ", 1)[1] if ": " in text and not text.startswith("set-based") else text
        for i, (begins, _, _) in enumerate(_PHASES):
            if head.startswith(begins):
                self.phase, self.rounds = i, None
                if (m := _ROUNDS.search(head)) is not None:  # "applying N commands in R rounds ..."
                    self.rounds = (0, int(m.group(1)))
                return

    def committed(self, done: int, total: int) -> None:
        self.rounds = (done, total)

    def interrupted(self) -> str:
        """``while <what was interrupted>: <what it leaves>``, for ``stopped by SIGTERM ...``.
        The apply's round is the one after those the progress table showed committed when it
        was last read (every 0.5 s)."""
        if self.phase is None:
            return "while starting: this run applied nothing"
        _, what, leaves = _PHASES[self.phase]
        if what != "applying":
            return f"while {what}: {leaves}"
        done, total = self.rounds or (0, 0)
        k = min(done + 1, total) if total else done + 1
        return (
            f"while applying round {k}{f' of {total}' if total else ''}: its open transactions were "
            "rolled back, what committed stays (--resume continues from there)"
        )


class LiveProgress:
    """``with LiveProgress(console) as live: api.run(..., on_phase=live.phase, progress=live.progress)``."""

    def __init__(
        self,
        console: Console,
        *,
        quiet: bool = False,
        tasks: Callable[[], tuple[int, int] | None] = spark_tasks,
        poll_s: float = 0.5,
        doing: Doing | None = None,
    ) -> None:
        self.console = console
        self.doing = doing or Doing()
        self.quiet = quiet
        self.tasks = tasks
        self.poll_s = poll_s
        self.bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            _Bar(bar_width=30),
            _Count(),
            _Rate(),
            _Eta(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=quiet,
        )
        self.current: TaskID | None = None
        self.counting = "tasks"  # what the current phase counts: Spark tasks, or apply rounds
        self.started = 0.0
        self.name = ""
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._poller = threading.Thread(target=self._poll, name="applier-progress", daemon=True)

    def __enter__(self) -> LiveProgress:
        self.bar.__enter__()
        if not self.quiet:
            self._poller.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._poller.is_alive():
            self._poller.join(timeout=2)
        self._end(ok=kind is None)
        self.bar.__exit__(kind, exc, tb)

    def _end(self, ok: bool = True) -> None:
        with self._lock:
            if self.current is None:
                return
            self.bar.remove_task(self.current)
            self.current = None

    def phase(self, text: str) -> None:
        """A new phase began (its line printed once, as it starts): the last one is done."""
        self._end()
        self.doing.said(text)
        with self._lock:
            if not self.quiet:
                self.console.print(f"[dim]- {text}[/]", highlight=False)
            self.name = text
            self.started = time.perf_counter()
            self.counting = "tasks"
            self.current = self.bar.add_task(text, total=None, unit="tasks")

    def progress(self, stage: str, done: int, total: int) -> None:
        """The apply's rounds committed (``api.run``'s ``progress``)."""
        self.doing.committed(done, total)
        with self._lock:
            if self.current is None:
                return
            if self.counting != "rounds":
                self.counting = "rounds"
                self.bar.reset(self.current, total=total, completed=0, unit="rounds")
            self.bar.update(self.current, completed=done, total=total)

    def _poll(self) -> None:
        while not self._stop.wait(self.poll_s):
            if self.counting != "tasks" or self.current is None:
                continue
            try:
                now = self.tasks()
            except Exception:  # noqa: BLE001 - a display never stops a run
                continue
            with self._lock:
                if now is not None and self.current is not None and self.counting == "tasks":
                    self.bar.update(self.current, completed=now[0], total=now[1])
