"""A run's folder read back, and the case it ran: the stream as records shrink can cut.

A run folder (``applier run --out RUN_DIR``, :mod:`applier.pipeline.rundir`) holds
``config.json``, ``inputs.json`` (the change and snapshot paths, the custom SQL copies),
``report.json``, ``schedule.jsonl`` and ``outcome.json``. :func:`read_run_dir` reads it;
:func:`load_case` reads the stream it applied into a :class:`Case` (a generated stream is
written out first, as ``applier generate`` would): canonical change records, one dict per
command in the JSON Lines form of ``applier generate`` (images as objects), and snapshot
records ``{"article", "image"}``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from applier.config import HAZARD_WORKLOADS, Config, Workload, parse_config
from applier.errors import InputError

Record = dict[str, Any]
_PAYLOAD = {"DDL": "ddl", "SQL": "sqldml", "PROC": "procedure"}


@dataclass(frozen=True)
class RunFolder:
    """What a run folder says: the configuration, inputs, outcome and recorded schedule."""

    path: Path
    config: Config
    changes: Path | None  # None: the configuration's generated stream
    snapshot: Path | None
    custom_sql: tuple[Path, ...]
    outcome: Mapping[str, Any] | None  # None: the run wrote none (it did not finish)
    report: Mapping[str, Any] | None
    schedule: Path | None  # schedule.jsonl, if the run recorded one

    @property
    def verdict(self) -> str:
        return str((self.outcome or {}).get("verdict", "unknown"))


def config_from_dict(data: Mapping[str, Any], source: str) -> Config:
    """A configuration as ``config.json`` holds it (``Config.to_dict()``) parsed back: its
    ``source`` restored, a hazard workload's placeholder articles left out (it brings its own)."""
    d = {k: v for k, v in data.items() if k != "source"}
    if (d.get("workload") or {}).get("kind") in HAZARD_WORKLOADS:
        d.pop("articles", None)
    for s in d.get("subscriptions") or ():
        if s.get("target") == "***":
            raise InputError(
                f"{source}: subscription {s.get('name')!r} had its own target, which the run folder "
                "does not keep (its password); run it again with the target given"
            )
    return parse_config(d, source).replace(source=str(data.get("source") or source))


def config_file_dict(config: Config, workload: bool = True) -> dict[str, Any]:
    """``config`` as a configuration file holds it (``applier run --config``): no ``source``;
    no ``[workload]`` unless ``workload`` (a stream read from change files needs none)."""
    d = config.to_dict()
    del d["source"]
    if not workload:
        del d["workload"]
    return d


def _json(path: Path, required: bool = True) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if not required:
            return None
        raise InputError(
            f"{path.parent}: not a run folder (no {path.name}; write one with applier run --out)"
        ) from None
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: cannot read: {e}") from None


def read_run_dir(path: str | Path) -> RunFolder:
    """The run folder at ``path``; InputError naming the file that is missing or wrong."""
    d = Path(path)
    if not d.is_dir():
        raise InputError(f"{d}: no such run folder")
    config = config_from_dict(_json(d / "config.json"), str(d / "config.json"))
    inputs = _json(d / "inputs.json")
    if inputs.get("capture"):
        fmt = inputs["capture"].get("format")
        raise InputError(
            f"{d / 'inputs.json'}: the run read {fmt} traffic; replay, shrink and export work on "
            f"canonical files: convert it (applier convert --format {fmt} --changes ... --out DIR) "
            "and run on DIR/changes with --out"
        )
    changes = Path(inputs["changes"]) if inputs.get("changes") else None
    snapshot = Path(inputs["snapshot"]) if inputs.get("snapshot") else None
    for p, what in ((changes, "change file"), (snapshot, "snapshot")):
        if p is not None and not p.exists():
            raise InputError(f"{d / 'inputs.json'}: the {what} {p} is gone")
    custom = tuple((d / c) if not Path(c).is_absolute() else Path(c) for c in inputs.get("custom_sql") or ())
    schedule = d / "schedule.jsonl"
    return RunFolder(
        d,
        config,
        changes,
        snapshot,
        custom,
        _json(d / "outcome.json", required=False),
        _json(d / "report.json", required=False),
        schedule if schedule.is_file() else None,
    )


# -- the stream as records -----------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """A stream to apply: change records in lsn order and the snapshot records."""

    changes: tuple[Record, ...]
    snapshot: tuple[Record, ...] = ()
    streams: int | None = None  # None: the configuration's N
    custom_sql: tuple[Path, ...] = field(default=())

    @property
    def transactions(self) -> list[int]:
        """The transactions (xact_seqno) in commit order."""
        seen: dict[int, None] = {}
        for r in self.changes:
            seen.setdefault(int(r["xact_seqno"]), None)
        return list(seen)

    def keep_transactions(self, xacts: Iterable[int]) -> Case:
        keep = set(xacts)
        return replace(self, changes=tuple(r for r in self.changes if int(r["xact_seqno"]) in keep))

    def keep_commands(self, lsns: Iterable[int]) -> Case:
        keep = set(lsns)
        return replace(self, changes=tuple(r for r in self.changes if int(r["lsn"]) in keep))

    def keep_rows(self, indexes: Iterable[int]) -> Case:
        keep = set(indexes)
        return replace(self, snapshot=tuple(r for i, r in enumerate(self.snapshot) if i in keep))

    def sizes(self) -> dict[str, int]:
        return {
            "transactions": len(self.transactions),
            "commands": len(self.changes),
            "snapshot_rows": len(self.snapshot),
        }

    def write(self, folder: str | Path) -> tuple[Path, Path | None]:
        """``changes.jsonl`` and (when it has rows) ``snapshot.jsonl`` in ``folder``."""
        d = Path(folder)
        d.mkdir(parents=True, exist_ok=True)
        ch = write_jsonl(d / "changes.jsonl", self.changes)
        sn = write_jsonl(d / "snapshot.jsonl", self.snapshot) if self.snapshot else None
        if sn is None:
            (d / "snapshot.jsonl").unlink(missing_ok=True)
        return ch, sn


def write_jsonl(path: Path, records: Iterable[Mapping[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")
    return path


def _files(path: Path) -> tuple[list[Path], bool]:
    """The files of a change or snapshot path (a file or a folder of them), Parquet or not."""
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith((".", "_")))
        parquet = [p for p in found if p.suffix.lower() == ".parquet"]
        if parquet:
            return parquet, True
        return [p for p in found if p.suffix.lower() in (".jsonl", ".json", ".ndjson")], False
    return [path], path.suffix.lower() == ".parquet"


def read_records(path: str | Path) -> list[Record]:
    """Every record of a change or snapshot path, JSON Lines or Parquet (images as objects)."""
    files, parquet = _files(Path(path))
    out: list[Record] = []
    for f in files:
        if parquet:
            import pyarrow.parquet as pq

            out.extend(_from_parquet(r) for r in pq.read_table(f).to_pylist())
            continue
        with f.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        out.append(json.loads(line))
                    except ValueError as e:
                        raise InputError(f"{f}:{n}: not JSON ({e})") from None
    return out


def _from_parquet(r: Mapping[str, Any]) -> Record:
    if "image" in r and "lsn" not in r:  # a snapshot row: article, key, image text
        return {"article": r["article"], "image": json.loads(r["image"])}
    d = {k: r[k] for k in ("lsn", "xact_seqno", "command_id", "article", "op", "schema_version") if k in r}
    if r["op"] in _PAYLOAD:
        d[_PAYLOAD[r["op"]]] = json.loads(r["after"])
        return d
    d["before"] = json.loads(r["before"]) if r.get("before") else None
    d["after"] = json.loads(r["after"]) if r.get("after") else None
    d["changed"] = list(r.get("changed") or [])
    return d


def case_config(config: Config) -> Config:
    """The configuration a case's change files are applied with: a hazard workload's own
    articles, and no workload (the stream comes from files)."""
    from applier.sources.hazards import effective_config

    return effective_config(config).replace(workload=Workload())


def load_case(folder: RunFolder, work: str | Path, spark: Any = None) -> tuple[Config, Case]:
    """The configuration and the stream a run folder applied; a generated stream is written
    as change files under ``work`` first (``applier generate``)."""
    changes, snapshot = folder.changes, folder.snapshot
    if changes is None:
        import applier.api

        out = Path(work) / "generated"
        if out.exists():
            shutil.rmtree(out)
        changes, snapshot, _ = applier.api.generate(folder.config, out, spark=spark)
    records = sorted(read_records(changes), key=lambda r: int(r["lsn"]))
    snap = read_records(snapshot) if snapshot is not None else []
    return case_config(folder.config), Case(tuple(records), tuple(snap), None, folder.custom_sql)


def describe(config: Config, case: Case, limit: int = 40) -> list[str]:
    """The case in a few lines: snapshot rows, then each command of each transaction."""
    lines = [
        f"snapshot {r['article']} {json.dumps(r['image'], ensure_ascii=False)}" for r in case.snapshot[:limit]
    ]
    if len(case.snapshot) > limit:
        lines.append(f"... {len(case.snapshot) - limit} more snapshot rows")
    keys = {a.name: a.key for a in config.articles}
    for r in case.changes[:limit]:
        lines.append(f"xact {r['xact_seqno']} lsn {r['lsn']} {_command(r, keys.get(r['article'], ()))}")
    if len(case.changes) > limit:
        lines.append(f"... {len(case.changes) - limit} more commands")
    return lines


def _command(r: Mapping[str, Any], key: Sequence[str]) -> str:
    op, art = r["op"], r["article"]
    if op in _PAYLOAD:
        return f"{op} {art}"
    before, after = r.get("before") or {}, r.get("after") or {}
    image = before or after
    k = [image.get(c) for c in key]
    if op == "I":
        return f"I {art} {k} {json.dumps(after, ensure_ascii=False)}"
    if op == "D":
        return f"D {art} {k}"
    moved = [after.get(c) for c in key]
    changes = ", ".join(
        f"{c} {json.dumps(before.get(c), ensure_ascii=False)} -> {json.dumps(v, ensure_ascii=False)}"
        for c, v in after.items()
        if before.get(c) != v and c not in key
    )
    return f"U {art} {k}" + (f" -> {moved}" if moved != k else "") + (f": {changes}" if changes else "")
