"""``applier export RUN_DIR --out DIR``: a self-contained reproducer of a run.

DIR holds everything needed to see the failure again without the run folder, the test suite
or anything else of the repository's:

README.md         what failed and how to run it
config.json       the settings (``applier run --config``), following schedule.jsonl
changes.jsonl     the change stream; snapshot.jsonl the initial rows (when there are any)
schedule.jsonl    the recorded schedule (a controlled run follows it, matched by lsn)
outcome.json      what the run got (verdict, conflicts, divergent keys)
custom/           the custom SQL the run installed (procedures, triggers), in order
ddl.sql           CREATE TABLE statements and the subscriber's constraints
procedures.sql    the generated apply procedures (custom ones are in custom/)
setup.sql         all of it in order for a DBA: tables, procedures, custom SQL, snapshot rows
interleaved.sql   the N sessions' statements in schedule order, values as literals
test_repro.py     a pytest test that applies the stream under the recorded schedule to a
                  throwaway embedded PostgreSQL and asserts convergence: it fails while the
                  bug is there, passes once it is fixed
repro.json        the manifest the test reads (file names, where the case came from)
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from applier.errors import ConfigError, InputError
from applier.leftovers import owned_dir
from applier.repro.case import config_file_dict, load_case, read_run_dir, write_jsonl
from applier.repro.runner import with_schedule
from applier.repro.sqlscript import interleaved, setup_script

DIALECT_NAMES = ("postgres", "tsql")


@dataclass(frozen=True)
class Exported:
    out: Path
    files: tuple[str, ...]
    transactions: int
    commands: int
    steps: int


def export(run_dir: str | Path, out: str | Path, *, dialect: str = "postgres", spark: Any = None) -> Exported:
    """Write the reproducer of the run in ``run_dir`` to ``out`` (see the module's doc)."""
    from applier.api import procedure_scripts
    from applier.dialects import DIALECTS
    from applier.pipeline.schedule import read_schedule

    if dialect not in DIALECT_NAMES:
        raise ConfigError(f"--dialect: {' or '.join(DIALECT_NAMES)}, not {dialect!r}")
    folder = read_run_dir(run_dir)
    if folder.schedule is None and folder.config.run.schedule != "controlled":
        raise InputError(
            f"{folder.path}: no schedule.jsonl (the run did not finish) and no controlled schedule to "
            "run again; nothing to export"
        )
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not (out / "repro.json").exists():
        raise InputError(f"{out}: exists and is not an earlier export; choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    work = owned_dir("applier-work-export-")  # applier clean removes it after a kill -9
    try:
        config, case = load_case(folder, work, spark)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    steps = read_schedule(folder.schedule) if folder.schedule is not None else []
    d = DIALECTS[dialect]()
    written: list[str] = []

    def put(name: str, text: str) -> None:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text, encoding="utf-8")
        written.append(name)

    write_jsonl(out / "changes.jsonl", case.changes)
    written.append("changes.jsonl")
    if case.snapshot:
        write_jsonl(out / "snapshot.jsonl", case.snapshot)
        written.append("snapshot.jsonl")
    else:
        (out / "snapshot.jsonl").unlink(missing_ok=True)
    if folder.schedule is not None:
        shutil.copyfile(folder.schedule, out / "schedule.jsonl")
        written.append("schedule.jsonl")
    else:  # a run that raised before it recorded its steps: its own seed schedules it again
        (out / "schedule.jsonl").unlink(missing_ok=True)
    put("outcome.json", json.dumps(folder.outcome or {}, indent=2, default=str) + "\n")
    if (out / "custom").exists():
        shutil.rmtree(out / "custom")
    custom: list[str] = []
    for i, p in enumerate(case.custom_sql):
        name = f"custom/{i:02d}-{re.sub(r'^(?:[0-9]{2}-)+', '', p.name)}"  # run folders number their copies
        (out / "custom").mkdir(exist_ok=True)
        shutil.copyfile(p, out / name)
        custom.append(name)
        written.append(name)
    followed = config
    if folder.schedule is not None:
        followed = with_schedule(
            config, schedule="controlled", schedule_strategy="recorded", schedule_file="schedule.jsonl"
        )
    put("config.json", json.dumps(config_file_dict(followed, workload=False), indent=2, default=str) + "\n")
    arts = config.articles
    ddl = [(d.create_schema_sql(s), True) for s in sorted({a.schema for a in arts})]
    ddl += [(d.create_table_sql(a), True) for a in arts]
    ddl += [(s, True) for s in d.constraint_sql(arts)]
    put(
        "ddl.sql",
        d.script([(f"-- {d.name}: the subscriber's tables (applier creates them so)", False), *ddl]),
    )
    procs = "\n".join(text for _, text in procedure_scripts(config, dialect))
    put("procedures.sql", procs)
    custom_text = [
        f"-- {name} (custom SQL the run installed)\n{(out / name).read_text(encoding='utf-8')}"
        for name in custom
    ]
    put("setup.sql", setup_script(d, arts, case.snapshot, [procs, *custom_text]))
    title = f"exported by applier export from {folder.path}; outcome {folder.verdict}"
    put("interleaved.sql", interleaved(d, arts, case.changes, steps, title))
    manifest = {
        "from": str(folder.path),
        "changes": "changes.jsonl",
        "snapshot": "snapshot.jsonl" if case.snapshot else None,
        "custom_sql": custom,
        "schedule": "schedule.jsonl" if folder.schedule is not None else None,
        "outcome": folder.outcome,
        "transactions": len(case.transactions),
        "commands": len(case.changes),
        "snapshot_rows": len(case.snapshot),
        "streams": config.run.streams,
    }
    put("repro.json", json.dumps(manifest, indent=2, default=str) + "\n")
    put("test_repro.py", _test_file(folder.path, folder.outcome or {}, manifest))
    put("README.md", _readme(folder.path, folder.outcome or {}, manifest, config.run))
    return Exported(out, tuple(written), len(case.transactions), len(case.changes), len(steps))


def _test_file(run_dir: Path, outcome: Any, manifest: dict[str, Any]) -> str:
    divergent = outcome.get("divergent") or []
    conflicts = outcome.get("conflicts") or []
    return f'''"""Reproducer exported by ``applier export`` from {run_dir}.

The run's outcome: {outcome.get("verdict")}, {len(divergent)} divergent row(s) {json.dumps(divergent[:5])},
{len(conflicts)} conflict(s) {json.dumps(conflicts[:5])}{" " + str(outcome.get("error")) if outcome.get("error") else ""}.

The test applies changes.jsonl ({manifest["transactions"]} transaction(s), {manifest["commands"]} command(s)) on
{manifest["streams"]} streams with the settings of config.json, following the recorded schedule.jsonl
(a controlled schedule: the streams take turns in the recorded order, every time), against a
throwaway embedded PostgreSQL, and asserts that the subscriber converged to the publisher's
state. It fails while the bug is there and passes once it is fixed (the custom SQL in custom/,
or the settings in config.json).

    pytest test_repro.py        # needs applier (pip install applier) and PostgreSQL binaries
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _config():  # type: ignore[no-untyped-def]
    from applier.config import parse_config

    data = json.loads((HERE / "config.json").read_text(encoding="utf-8"))
    if data["run"].get("schedule_file"):
        data["run"]["schedule_file"] = str(HERE / data["run"]["schedule_file"])
    return parse_config(data, str(HERE / "config.json"))


def test_subscriber_converges(tmp_path):  # type: ignore[no-untyped-def]
    import applier

    manifest = json.loads((HERE / "repro.json").read_text(encoding="utf-8"))
    snapshot = manifest["snapshot"]
    with applier.Target.embedded() as target:
        result = applier.run(
            _config(),
            target,
            changes=HERE / manifest["changes"],
            snapshot=HERE / snapshot if snapshot else None,
            custom_sql=[HERE / p for p in manifest["custom_sql"]],
            out_dir=tmp_path / "run",
        )
    divergent = [(d.article, list(d.key), d.kind) for _, d in result.divergent]
    conflicts = {{k: v for k, v in result.conflicts.items() if v}}
    failed = [s.failed for s in result.subscriptions if s.failed]
    assert result.verdict == applier.Verdict.CONVERGED, (
        f"the subscriber did not converge: {{result.verdict}}; divergent rows {{divergent}}; "
        f"conflicts {{conflicts}}; {{failed or ''}} (run folder {{tmp_path / 'run'}})"
    )
'''


def _readme(run_dir: Path, outcome: Any, manifest: dict[str, Any], rs: Any) -> str:
    return f"""# Reproducer

Exported by `applier export` from `{run_dir}`: {manifest["transactions"]} transaction(s),
{manifest["commands"]} command(s), {manifest["snapshot_rows"]} snapshot row(s), {manifest["streams"]} streams,
model `{rs.model}`, partition `{rs.partition}`, error policy `{rs.error_policy}`.

Outcome of the run: **{outcome.get("verdict")}**; divergent keys `{json.dumps(outcome.get("divergent") or [])}`;
conflicts `{json.dumps(outcome.get("conflicts") or [])}`{("; " + str(outcome.get("error"))) if outcome.get("error") else ""}.

- `pytest test_repro.py`: applies the stream under the recorded schedule to a throwaway embedded
  PostgreSQL and asserts convergence. It fails while the bug is there and passes once it is fixed.
- `applier run --config config.json --changes changes.jsonl{" --snapshot snapshot.jsonl" if manifest["snapshot"] else ""}{"".join(" --custom-sql " + c for c in manifest["custom_sql"])}`
  (from this folder: `config.json` names `schedule.jsonl` relative to it) does the same from the
  command line.
- By hand: run `setup.sql`, then open {manifest["streams"]} sessions and run `interleaved.sql`'s
  statements in order, each in the session its comment names.

Files: `ddl.sql` (tables), `procedures.sql` (the generated apply procedures), `custom/` (the
custom SQL the run installed), `schedule.jsonl` (the steps each stream took, in order),
`outcome.json` (what the run got).
"""
