"""One apply of a case through the public API, reduced to what replay and shrink compare.

An :class:`Attempt` is the run's outcome (``outcome.json``'s verdict, conflicts and
divergent keys) or, when the run raised, verdict ``error`` with the error's type and first
line: an unexpected error is a finding too. A signal (Ctrl-C, SIGTERM) is never an outcome:
it stops the caller.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from applier.config import Config
from applier.errors import stop_of
from applier.repro.case import Case

ERROR = "error"


@dataclass(frozen=True)
class Attempt:
    """What one run gave: ``outcome`` as outcome.json holds it (verdict ``error`` when it raised)."""

    outcome: Mapping[str, Any]
    seconds: float
    result: Any = None  # the RunResult, None when the run raised

    @property
    def verdict(self) -> str:
        return str(self.outcome["verdict"])

    @property
    def failed(self) -> bool:
        """Not converged: diverged, unknown, or an unexpected error."""
        return self.verdict != "converged"


def error_outcome(e: BaseException) -> dict[str, Any]:
    first = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), "")
    return {"verdict": ERROR, "error": f"{type(e).__name__}: {first[:300]}", "conflicts": [], "divergent": []}


def with_schedule(config: Config, **run: Any) -> Config:
    """``config`` with these [run] settings (schedule, schedule_seed, ...), checked."""
    from applier.config import check_config

    return check_config(config.replace(run=dataclasses.replace(config.run, **run)))


def follow(config: Config, schedule: str | Path) -> Config:
    """``config`` following a recorded schedule (controlled, strategy recorded)."""
    return with_schedule(
        config,
        schedule="controlled",
        schedule_strategy="recorded",
        schedule_file=str(Path(schedule).resolve()),
    )


def serial(config: Config) -> Config:
    """``config`` applied on one stream in commit order: what an ordering bug never breaks."""
    return with_schedule(
        config,
        streams=1,
        partition="single",
        schedule="free",
        schedule_strategy="pct",
        schedule_file=None,
    )


class Warm:
    """A session of attempts on one target that keeps what an attempt installed for the next
    one with the same articles, procedures and custom SQL (:func:`applier.apply.install.
    install_key`): its tables are emptied and the snapshot loaded again, nothing dropped and
    created again, as the pytest plugin does between tests. Only a plain run (no
    ``[[subscriptions]]``) on a target applier starts or an endpoint, and only where the database holds
    nothing else (:func:`applier.apply.install.reusable`: a custom trigger's audit table or a
    sequence would keep its state, so such a database is installed anew every time)."""

    def __init__(self, target: Any) -> None:
        self.target = target
        self.held: tuple[str, Any] | None = None  # (install key, the endpoint it holds)

    def where(self, config: Config, changes: Any, custom_sql: Sequence[str | Path]) -> tuple[Any, Any]:
        """What the next attempt runs on, and what to tell :meth:`after` of it."""
        from applier.apply.install import install_key
        from applier.sources.hazards import effective_config
        from applier.targets.base import Target
        from applier.targets.endpoint import Endpoint

        if config.subscriptions:
            return self.target, None
        if isinstance(self.target, Endpoint):
            base: Endpoint = self.target
        elif isinstance(self.target, Target) and self.target.started:
            base = self.target.endpoint()  # its own database
        else:
            return self.target, None
        articles = (effective_config(config) if changes is None else config).articles
        key = install_key(articles, [Path(p) for p in custom_sql], config.run.set_apply)
        if key is None:
            return self.target, None
        if self.held is not None and self.held[0] == key:
            return dataclasses.replace(self.held[1], reuse_tables=True), (key, articles)
        return base, (key, articles)

    def after(self, where: Any, told: Any, result: Any) -> None:
        from applier.apply.install import reusable

        self.held = None
        if told is None or result is None or any(s.schema_changes for s in result.subscriptions):
            return
        key, articles = told
        endpoint = dataclasses.replace(where, reuse_tables=False)
        if reusable(endpoint, articles):
            self.held = (key, endpoint)


def attempt(
    config: Config,
    target: Any,
    *,
    changes: str | Path | None = None,
    snapshot: str | Path | None = None,
    custom_sql: Sequence[str | Path] = (),
    out_dir: str | Path | None = None,
    spark: Any = None,
) -> Attempt:
    """One run through :func:`applier.api.run`; its outcome, or the error it raised.
    ``target``: a :class:`Warm` session keeps the tables for the next attempt."""
    import applier.api
    from applier.pipeline.rundir import outcome

    warm = target if isinstance(target, Warm) else None
    told = None
    if warm is not None:
        target, told = warm.where(config, changes, custom_sql)
    t = time.perf_counter()
    try:
        result = applier.api.run(
            config,
            target,
            changes=changes,
            snapshot=snapshot,
            custom_sql=list(custom_sql),
            out_dir=out_dir,
            spark=spark,
            explain_resets=False,  # a try is read for its outcome: no job for why it reset
        )
    except Exception as e:  # noqa: BLE001 - an unexpected error is an outcome here
        if stop_of(e) is not None:
            raise
        if warm is not None:
            warm.after(target, told, None)
        return Attempt(error_outcome(e), time.perf_counter() - t)
    if warm is not None:
        warm.after(target, told, result)
    return Attempt(outcome(result), time.perf_counter() - t, result)


def attempt_case(
    config: Config,
    case: Case,
    target: Any,
    *,
    work: str | Path | None = None,
    out_dir: str | Path | None = None,
    spark: Any = None,
) -> Attempt:
    """Apply ``case`` (written as change files in a folder of ``work``, removed after unless
    ``out_dir`` is given: then they are kept in ``out_dir/case``)."""
    if case.streams is not None and case.streams != config.run.streams:
        config = with_schedule(config, streams=case.streams)
    keep = out_dir is not None
    folder = (
        Path(out_dir) / "case" if out_dir is not None else Path(tempfile.mkdtemp(prefix="case-", dir=work))
    )
    try:
        changes, snapshot = case.write(folder)
        return attempt(
            config,
            target,
            changes=changes,
            snapshot=snapshot,
            custom_sql=case.custom_sql,
            out_dir=out_dir,
            spark=spark,
        )
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def same_failure(original: Mapping[str, Any], got: Mapping[str, Any]) -> bool:
    """Whether ``got`` shows the failure ``original`` showed: the same verdict; an error of
    the same type."""
    if original["verdict"] != got["verdict"]:
        return False
    if original["verdict"] == ERROR:
        return str(original.get("error", "")).split(":")[0] == str(got.get("error", "")).split(":")[0]
    return True


def differences(recorded: Mapping[str, Any], got: Mapping[str, Any]) -> list[str]:
    """What a replay got otherwise than the run it replays: verdict, conflicts, divergent keys."""
    out = []
    if recorded.get("verdict") != got.get("verdict"):
        out.append(f"verdict {recorded.get('verdict')} then, {got.get('verdict')} now")
    for name in ("conflicts", "divergent"):
        then = {_frozen(x) for x in recorded.get(name) or ()}
        now = {_frozen(x) for x in got.get(name) or ()}
        if then != now:
            gone, new = sorted(then - now, key=repr), sorted(now - then, key=repr)
            parts = []
            if gone:
                parts.append(f"{len(gone)} gone (first {json.dumps(gone[0], default=str)})")
            if new:
                parts.append(f"{len(new)} new (first {json.dumps(new[0], default=str)})")
            out.append(f"{name}: {len(then)} then, {len(now)} now: " + ", ".join(parts))
    if recorded.get("error") != got.get("error") and (recorded.get("error") or got.get("error")):
        out.append(f"error {recorded.get('error')!r} then, {got.get('error')!r} now")
    return out


def _frozen(x: Any) -> Any:
    if isinstance(x, list | tuple):
        return tuple(_frozen(v) for v in x)
    return x
