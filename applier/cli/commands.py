"""The CLI's commands that write files and exit: ``convert`` (captured traffic to canonical
change files), ``generate`` (a generated stream), ``procs`` (the apply procedures' scripts),
``schema`` (the configuration's JSON Schema) and ``clean`` (what killed runs left behind)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from applier.cli.options import capture_of, config_of
from applier.config import demo_config, load_config


def cmd_generate(a: argparse.Namespace) -> int:
    import applier.api
    import applier.api.paths

    config = config_of(a)
    applier.api.paths.check_paths(
        None, None, (), None, a.out, names={"report": "--report", "work_dir": "--out"}
    )
    ch, sn, n = applier.api.generate(config, a.out, a.format)
    print(f"wrote {n} commands to {ch} and the initial snapshot to {sn}")
    return 0


def cmd_convert(a: argparse.Namespace) -> int:
    import applier.api
    import applier.api.paths

    config = config_of(a)
    applier.api.paths.check_paths(
        None, None, (), None, a.out, names={"report": "--report", "work_dir": "--out"}
    )
    done = applier.api.convert(config, a.changes, a.out, capture=capture_of(a), snapshot=a.snapshot)
    dup = f", {done.duplicates} duplicate deliveries dropped" if done.duplicates else ""
    rate = done.commands / done.seconds if done.seconds > 0 else 0.0
    print(
        f"converted {done.commands} commands in {done.transactions} transactions{dup} "
        f"in {done.seconds:.1f} s ({rate:,.0f} commands/s) to {done.changes}"
    )
    return 0


def cmd_procs(a: argparse.Namespace) -> int:
    """One install script per article and dialect, as sp_scriptpublicationcustomprocs writes them."""
    import applier.api

    config = load_config(a.config) if a.config else demo_config()
    scripts = applier.api.procedure_scripts(config, a.dialect, template=a.template, proc_schema=a.proc_schema)
    if a.out:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        for name, text in scripts:
            (out / f"{name}.{a.dialect}.sql").write_text(text, encoding="utf-8")
        print(f"wrote {len(scripts)} script(s) to {out}")
    else:
        sys.stdout.write("\n".join(text for _, text in scripts))
    return 0


def cmd_schema(a: argparse.Namespace) -> int:
    """The configuration file's JSON Schema, for editors."""
    import json

    from applier.config import json_schema

    text = json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
    if a.out:
        Path(a.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def cmd_clean(a: argparse.Namespace) -> int:
    """Remove what runs killed with kill -9 left behind: their embedded clusters (stopped
    first), work and Spark folders. A live run's folders are never touched."""
    from applier import leftovers

    removed = leftovers.clean(a.dir)
    for folder in removed:
        print(f"removed {folder}")
    print(f"{len(removed)} folder(s) of dead runs removed")
    return 0
