"""The paths a run reads and writes, checked before anything starts (:func:`check_paths`, which
:func:`applier.api.run` and the commands call)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from applier.errors import ConfigError, InputError
from applier.sources.files import Inputs, check_inputs
from applier.sources.formats import Options, suffixes_of

_API_NAMES = {"report": "report", "work_dir": "work_dir"}


def check_paths(
    changes: str | Path | None,
    snapshot: str | Path | None,
    custom_sql: Sequence[str | Path],
    report: str | Path | None,
    work_dir: str | Path | None,
    names: Mapping[str, str] = _API_NAMES,
    capture: Options | None = None,
    scanned: Inputs | None = None,
) -> Inputs:
    """Every path a run reads or writes, checked before anything starts (nothing is applied
    and no report is written when one is wrong): the inputs (:func:`check_inputs`), the report
    a file that can be written (its folder created if missing), the work folder a folder.
    ``names``: how the caller names the outputs (the CLI: its options). The inputs' scan is
    returned (the run reads and digests them from it); ``scanned``: the caller's scan of the
    same inputs (the CLI's, made before its target started), not made again."""
    suffixes = suffixes_of(capture)  # an unknown format is refused first
    if capture is not None and capture.format != "canonical" and changes is None and capture.source is None:
        raise InputError(f"--format {capture.format}: give --changes (or --source for mssql-cdc)")
    found = scanned or check_inputs(changes, snapshot, custom_sql, suffixes)
    for key, path, folder in (("report", report, False), ("work_dir", work_dir, True)):
        if path is not None:
            writable(Path(path), names[key], folder)
    return found


def writable(path: Path, name: str, folder: bool) -> None:
    where = f"{name} {path}"
    if path.is_dir() and not folder:
        raise ConfigError(f"{where}: a folder; give the report's file name")
    if path.exists() and not path.is_dir() and folder:
        raise ConfigError(f"{where}: exists and is not a folder")
    if path.exists() and not folder and not path.is_file():
        raise ConfigError(f"{where}: not a regular file")
    near = path.absolute()
    while not near.exists() and near != near.parent:  # the nearest that exists: created below it
        near = near.parent
    if not near.is_dir() and near != path.absolute():
        raise ConfigError(f"{where}: {near} is not a folder")
    if not os.access(near, os.W_OK | (os.X_OK if near.is_dir() else 0)):
        raise ConfigError(f"{where}: {near} is not writable")
