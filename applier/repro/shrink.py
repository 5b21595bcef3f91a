"""``applier shrink RUN_DIR``: the smallest case that still fails the way the run failed.

The failing run is applied again and again, cut smaller each time, always under its recorded
schedule (``schedule_strategy = "recorded"``: the scheduler follows the recorded order of
the commands that are left, matched by lsn). A cut is kept when the run still fails the same
way (the same verdict; an error of the same type) and, unless ``serial_check`` is off, the
same cut applied on one stream in commit order converges: the failure is the interleaving's,
not the cut's (a cut that removes the row a command needs would fail serially too).

Phases, each a delta-debugging pass (:func:`applier.repro.ddmin.ddmin`) over what is left:
transactions, then the commands of those transactions, then snapshot rows, then streams (the
fewest N that still fail). Before each ddmin pass, the run's own blame suggests a slice (the
transactions of the commands that touched the first divergent key or raised the first
conflict, then windows of the transactions before them; the commands on the divergent keys;
the snapshot rows those commands touch): when the slice fails, ddmin starts from it, which
spares most of the runs a 1,000-transaction stream would otherwise cost.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from applier.config import Config
from applier.errors import ApplierError
from applier.leftovers import owned_dir
from applier.repro.case import Case, describe, load_case, read_run_dir
from applier.repro.ddmin import Cached, ddmin
from applier.repro.runner import Attempt, Warm, attempt_case, follow, same_failure, serial

Say = Callable[[str], None]


@dataclass
class Phase:
    name: str
    before: int
    after: int
    runs: int = 0
    seconds: float = 0.0


@dataclass
class Shrunk:
    """The minimal case, how it was found, and its run folder."""

    case: Case
    config: Config
    original: dict[str, int]
    phases: list[Phase] = field(default_factory=list)
    runs: int = 0
    seconds: float = 0.0
    outcome: Mapping[str, Any] | None = None
    run_dir: Path | None = None
    reproduced: bool = False  # the final run (written to run_dir) failed the same way

    @property
    def minimal(self) -> dict[str, int]:
        return {**self.case.sizes(), "streams": self.case.streams or self.config.run.streams}

    def to_json(self) -> dict[str, Any]:
        return {
            "original": self.original,
            "minimal": self.minimal,
            "phases": [asdict(p) for p in self.phases],
            "runs": self.runs,
            "seconds": round(self.seconds, 2),
            "outcome": self.outcome,
            "reproduced": self.reproduced,
        }


class _Oracle:
    """Whether a case fails as the original run did (each distinct case run once)."""

    def __init__(
        self,
        config: Config,
        schedule: Path | None,
        original: Mapping[str, Any],
        target: Any,
        work: Path,
        spark: Any,
        serial_check: bool,
        say: Say,
    ) -> None:
        self.config = follow(config, schedule) if schedule is not None else config
        self.serial = serial(config) if serial_check else None
        self.original = original
        self.target, self.work, self.spark, self.say = Warm(target), work, spark, say
        self.runs = 0
        self.last: Attempt | None = None  # the last attempt that failed the same way
        self.cache: dict[str, bool] = {}
        self.serial_verdicts: dict[str, str] = {}

    def run(self, config: Config, case: Case) -> Attempt:
        self.runs += 1
        return attempt_case(config, case, self.target, work=self.work, spark=self.spark)

    @staticmethod
    def _key(case: Case) -> str:
        return json.dumps([[r["lsn"] for r in case.changes], len(case.snapshot), _digest(case), case.streams])

    def __call__(self, case: Case) -> bool:
        key = self._key(case)
        if key in self.cache:
            return self.cache[key]
        if not case.changes:
            self.cache[key] = False
            return False
        a = self.run(self.config, case)
        ok = same_failure(self.original, a.outcome)
        why = a.verdict
        if ok and self.serial is not None:
            # One stream in commit order: the same whatever N the case has.
            alone = replace(case, streams=None)
            plain = self._key(alone)
            if plain not in self.serial_verdicts:
                self.serial_verdicts[plain] = self.run(self.serial, alone).verdict
            if self.serial_verdicts[plain] != "converged":
                ok, why = False, f"{a.verdict}, but serially {self.serial_verdicts[plain]} too"
        sizes = case.sizes()
        self.say(
            f"  {sizes['transactions']} xacts, {sizes['commands']} commands, {sizes['snapshot_rows']} rows"
            + (f", N={case.streams}" if case.streams else "")
            + f": {why} -> {'fails' if ok else 'passes'} ({a.seconds:.1f} s)"
        )
        if ok:
            self.last = a
        self.cache[key] = ok
        return ok


def _digest(case: Case) -> int:
    return hash(tuple(json.dumps(r, sort_keys=True) for r in case.snapshot))


class _Rows:
    """Which row (article, key) each command of a case reads and writes."""

    def __init__(self, case: Case, config: Config) -> None:
        cols = {a.name: a.key for a in config.articles}
        self.by_lsn: dict[int, tuple[str, str | None, str | None]] = {}
        self.order: list[int] = []
        self.touching: dict[tuple[str, str], list[int]] = {}  # in lsn order
        for r in case.changes:
            key = cols.get(r["article"], ())
            kb = _key(key, r.get("before"))
            ka = _key(key, r.get("after"))
            self.by_lsn[int(r["lsn"])] = (str(r["article"]), kb, ka)
            self.order.append(int(r["lsn"]))
            for k in {kb, ka} - {None}:
                self.touching.setdefault((str(r["article"]), str(k)), []).append(int(r["lsn"]))

    def lineage(self, article: str, key: str, before: float, depth: int = 4, limit: int = 64) -> set[int]:
        """The commands before lsn ``before`` that read or wrote the row at ``key``; for one that
        moved a row to ``key``, also that row's lineage at its earlier key."""
        out: set[int] = set()
        for lsn in reversed(self.touching.get((article, key), ())):
            if lsn >= before:
                continue
            _, kb, ka = self.by_lsn[lsn]
            out.add(lsn)
            if ka == key and kb is not None and kb != key and depth > 0:
                out |= self.lineage(article, kb, lsn, depth - 1, limit)
            if len(out) >= limit:
                break
        return out

    def closed(self, xacts: Iterable[int], xact_of: Mapping[int, int], limit: int = 64) -> list[int] | None:
        """``xacts`` with the transactions that wrote the history of every row their commands
        touch, until nothing is missing: a slice no command of which finds a row its history
        was cut from (that would fail on one stream too). None when it outgrows ``limit``."""
        keep = set(xacts)
        todo = [lsn for lsn in self.order if xact_of[lsn] in keep]
        seen: set[int] = set()
        while todo:
            lsn = todo.pop()
            if lsn in seen:
                continue
            seen.add(lsn)
            art, kb, ka = self.by_lsn[lsn]
            for key in {kb, ka} - {None}:
                assert key is not None
                for earlier in self.lineage(art, key, lsn):
                    x = xact_of[earlier]
                    if x not in keep:
                        keep.add(x)
                        if len(keep) > limit:
                            return None
                        todo += [m for m in self.order if xact_of[m] == x]
        return sorted(keep)


def _key(cols: Sequence[str], image: Mapping[str, Any] | None) -> str | None:
    return json.dumps([image.get(c) for c in cols]) if image else None


def _seeds(
    case: Case, config: Config, outcome: Mapping[str, Any], report: Mapping[str, Any] | None, limit: int = 4
) -> list[set[int]]:
    """Sets of lsns to cut a slice around, best first: for each conflict, the history of the
    row its command needed (without the command: a command that failed is often how a lost
    change came to light, not what lost it), then with it; for each divergent row that was
    applied (rows left unapplied after a failed round are consequences), its inverted pair and
    the history of its key."""
    rows = _Rows(case, config)
    seeds: list[set[int]] = []

    def add(s: set[int]) -> None:
        if s and s not in seeds:
            seeds.append(s)

    conflicts = sorted({int(c[0]) for c in outcome.get("conflicts") or () if c and c[0] is not None})
    for lsn in conflicts[:limit]:
        if lsn not in rows.by_lsn:
            continue
        art, kb, ka = rows.by_lsn[lsn]
        history = rows.lineage(art, kb or ka or "", lsn)
        add(history)
        add(history | {lsn})
    shown = list((report or {}).get("divergent") or ())
    for d in shown:
        cmds = d.get("commands") or ()
        if cmds and all(c.get("outcome") == "not_applied" for c in cmds):
            continue
        inv = d.get("inverted") or {}
        if inv.get("first") is not None and inv.get("second") is not None:
            add({int(inv["first"]), int(inv["second"])})
        add(rows.lineage(str(d["article"]), json.dumps(list(d["key"])), float("inf")))
        if len(seeds) >= 2 * limit:
            break
    if not shown:
        for art, key in (outcome.get("divergent") or ())[:limit]:
            add(rows.lineage(str(art), json.dumps(list(key)), float("inf")))
    return seeds


def _rows_used(case: Case, config: Config) -> list[int]:
    """Indexes of the snapshot rows whose key a remaining command's image has."""
    key_cols = {a.name: a.key for a in config.articles}
    used = set()
    for r in case.changes:
        cols = key_cols.get(r["article"], ())
        for img in (r.get("before"), r.get("after")):
            if img:
                used.add((r["article"], json.dumps([img.get(c) for c in cols])))
    return [
        i
        for i, s in enumerate(case.snapshot)
        if (s["article"], json.dumps([s["image"].get(c) for c in key_cols.get(s["article"], ())])) in used
    ]


def shrink(
    run_dir: str | Path,
    target: Any,
    *,
    out: str | Path | None = None,
    spark: Any = None,
    serial_check: bool = True,
    say: Say | None = None,
) -> Shrunk:
    """Shrink the failing run in ``run_dir``; the minimal case is written as a run folder in
    ``out`` (default ``RUN_DIR-shrunk``) with ``shrink.json`` beside it."""
    say = say or (lambda _: None)
    folder = read_run_dir(run_dir)
    original = folder.outcome
    if original is None or original.get("verdict") == "converged":
        raise ApplierError(
            f"{folder.path}: the run {'converged' if original else 'wrote no outcome.json'}; nothing to shrink"
        )
    out = Path(out) if out is not None else folder.path.with_name(folder.path.name + "-shrunk")
    if out.exists():
        shutil.rmtree(out)
    t0 = time.perf_counter()
    work = owned_dir("applier-work-shrink-")  # applier clean removes it after a kill -9
    try:
        config, case = load_case(folder, work, spark)
        recorded = None
        if folder.schedule is not None:
            (out / "case").mkdir(parents=True, exist_ok=True)
            recorded = shutil.copyfile(folder.schedule, out / "case" / "recorded-schedule.jsonl")
        fails = _Oracle(config, recorded, original, target, work, spark, serial_check, say)
        shrunk = Shrunk(case, config, {**case.sizes(), "streams": config.run.streams})
        state = {"case": case}

        def phase(name: str, before: int, body: Callable[[], int]) -> None:
            say(f"{name}: {before}")
            p = Phase(name, before, before)
            runs, t = fails.runs, time.perf_counter()
            p.after = body()
            p.runs, p.seconds = fails.runs - runs, round(time.perf_counter() - t, 2)
            shrunk.phases.append(p)
            say(f"{name}: {p.before} -> {p.after} ({p.runs} runs, {p.seconds:.0f} s)")

        def transactions() -> int:
            c: Case = state["case"]
            xacts = c.transactions
            start = _slice_transactions(c, config, _seeds(c, config, original, folder.report), fails)
            if start is None:
                if not fails(c):
                    raise ApplierError(
                        f"{folder.path}: the failure ({original['verdict']}) does not come back under the "
                        "recorded schedule; nothing to shrink (applier replay says what differs)"
                    )
                start = xacts
            # Each subset ddmin asks about is tried closed under row history (within the start):
            # a cut that leaves a command without the row it needs only fails serially.
            pool = c.keep_transactions(start)
            rows = _Rows(pool, config)
            xact_of = {int(r["lsn"]): int(r["xact_seqno"]) for r in pool.changes}

            def closed(xs: Sequence[int]) -> list[int]:
                got = rows.closed(xs, xact_of, limit=len(start))
                return list(start) if got is None else got

            keep = closed(ddmin(start, Cached(lambda xs: fails(pool.keep_transactions(closed(xs))))))
            state["case"] = c.keep_transactions(keep)
            return len(keep)

        def commands() -> int:
            c: Case = state["case"]
            lsns = [int(r["lsn"]) for r in c.changes]
            keys = (fails.last.outcome.get("divergent") if fails.last else None) or ()
            start: Sequence[int] = lsns
            rows = _Rows(c, config)
            history = {x for a, k in keys for x in rows.lineage(str(a), json.dumps(list(k)), float("inf"))}
            focus = [x for x in lsns if x in history]
            if focus and len(focus) < len(lsns) and fails(c.keep_commands(focus)):
                start = focus

            def closed(xs: Sequence[int]) -> list[int]:
                needed = set(xs)
                for x in xs:
                    art, kb, ka = rows.by_lsn[x]
                    for key in {kb, ka} - {None}:
                        needed |= rows.lineage(art, str(key), x)
                return [x for x in lsns if x in needed]

            keep = closed(ddmin(start, Cached(lambda xs: fails(c.keep_commands(closed(xs))))))
            state["case"] = c.keep_commands(keep)
            return len(keep)

        def rows() -> int:
            c: Case = state["case"]
            if not c.snapshot:
                return 0
            if fails(c.keep_rows(())):
                state["case"] = c.keep_rows(())
                return 0
            start: Sequence[int] = range(len(c.snapshot))
            used = _rows_used(c, config)
            if len(used) < len(c.snapshot) and fails(c.keep_rows(used)):
                start = used
            keep = ddmin(list(start), Cached(lambda xs: fails(c.keep_rows(xs))))
            state["case"] = c.keep_rows(keep)
            return len(keep)

        def streams() -> int:
            c: Case = state["case"]
            n = config.run.streams
            for fewer in range(2, n):
                if fails(replace(c, streams=fewer)):
                    state["case"] = replace(c, streams=fewer)
                    return fewer
            return n

        phase("transactions", len(case.transactions), transactions)
        phase("commands", len(state["case"].changes), commands)
        phase("snapshot rows", len(state["case"].snapshot), rows)
        phase("streams", config.run.streams, streams)
        shrunk.case = state["case"]
        final = attempt_case(fails.config, shrunk.case, fails.target, out_dir=out, spark=spark)
        fails.runs += 1
        shrunk.reproduced = same_failure(original, final.outcome)
        shrunk.outcome = final.outcome
        shrunk.run_dir = out
        shrunk.runs = fails.runs
        shrunk.seconds = time.perf_counter() - t0
        (out / "shrink.json").write_text(
            json.dumps({"from": str(folder.path), **shrunk.to_json()}, indent=2, default=str) + "\n",
            encoding="utf-8",
        )
        (out / "case.txt").write_text("\n".join(describe(config, shrunk.case, 200)) + "\n", encoding="utf-8")
        return shrunk
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _slice_transactions(
    case: Case,
    config: Config,
    seeds: Sequence[set[int]],
    fails: Callable[[Case], bool],
    attempts: int = 10,
) -> list[int] | None:
    """The first slice of transactions around a seed that fails: the seed's transactions, then
    with every transaction between them and 1, 4, 16 before, each closed under row history
    (:meth:`_Rows.closed`; at most 64 transactions); at most ``attempts`` runs."""
    xacts = case.transactions
    xact_of = {int(r["lsn"]): int(r["xact_seqno"]) for r in case.changes}
    rows = _Rows(case, config)
    pos = {x: i for i, x in enumerate(xacts)}
    tried: list[list[int]] = []
    for lsns in seeds:
        blamed = sorted({xact_of[x] for x in lsns if x in xact_of}, key=pos.__getitem__)
        if not blamed:
            continue
        lo, hi = pos[blamed[0]], pos[blamed[-1]]
        for k in (None, 1, 4, 16):
            around = blamed if k is None else xacts[max(lo - k, 0) : hi + 1]
            cut = rows.closed(around, xact_of) if len(around) <= 64 else None
            if cut is None or cut in tried or len(cut) * 2 > len(xacts):
                continue
            if len(tried) >= attempts:
                return None
            tried.append(cut)
            if fails(case.keep_transactions(cut)):
                return cut
    return None
