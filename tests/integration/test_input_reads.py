"""A canonical change file is opened once on the driver and read once by Spark (issue 33: one
input path). The driver's scan (:func:`applier.sources.files.scan_inputs`) reads each file once for
its size, digest and what it holds (schema changes, sub-positions); the run checks its paths,
reads its stream and records its identity from that scan, and Spark reads the file in one job.
"""

from __future__ import annotations

import builtins
import dataclasses
import io
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from applier.config import parse_config
from tests.support.changes import write_jsonl

pytestmark = pytest.mark.integration

ART = "dbo.reads"


def _config(subscriptions: int):  # type: ignore[no-untyped-def]
    return parse_config(
        {
            "run": {"streams": 2, "commit_batch_size": 2},
            "articles": [
                {
                    "name": ART,
                    "columns": [
                        {"name": "id", "type": "int", "key": True},
                        {"name": "v", "type": "nvarchar(40)"},
                    ],
                }
            ],
            "subscriptions": [{"name": f"reads_{i}"} for i in range(subscriptions)],
        },
        "<test reads>",
    )


def _changes(tmp: Path) -> Path:
    """Rows, a schema change (the file mentions "DDL") and a value "seq" (the file mentions
    "seq", though no command carries a sub-position): each once made Spark read the file again."""

    def record(lsn: int, op: str, version: int = 1, **fields: Any) -> dict[str, Any]:
        head = {"lsn": lsn, "xact_seqno": lsn, "command_id": 1, "article": ART, "op": op}
        return {**head, "schema_version": version, **fields}

    ddl = {"action": "add_column", "column": {"name": "extra", "type": "nvarchar(20)"}}
    records = [
        record(1, "I", after={"id": 1, "v": "seq"}),
        record(2, "I", after={"id": 2, "v": "x"}),
        record(3, "DDL", 2, ddl=ddl),
        record(4, "I", 2, after={"id": 3, "v": "y", "extra": "z"}),
    ]
    return write_jsonl(tmp / "changes.jsonl", records)


class Opens:
    """Every open of a file on the driver (``open``, ``Path.open``), counted by resolved path."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts: Counter[Path] = Counter()
        real = builtins.open

        def counted(file: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(file, (str, Path)):
                self.counts[Path(file).resolve()] += 1
            return real(file, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", counted)
        monkeypatch.setattr(io, "open", counted)

    def of(self, path: Path) -> int:
        return self.counts[path.resolve()]


def test_a_canonical_file_is_opened_once_on_the_driver_whatever_the_subscriptions(
    spark, pg, tmp_path, monkeypatch
):
    import dataclasses

    import applier

    cfg = _config(2)
    subs = tuple(dataclasses.replace(s, database=f"reads_{i}") for i, s in enumerate(cfg.subscriptions))
    cfg = cfg.replace(subscriptions=subs)
    changes = _changes(tmp_path)
    snapshot = write_jsonl(tmp_path / "snapshot.jsonl", [{"article": ART, "image": {"id": 9, "v": "s"}}])
    opens = Opens(monkeypatch)
    result = applier.run(cfg, pg, spark=spark, changes=changes, snapshot=snapshot)
    monkeypatch.undo()
    assert [s.verdict.value for s in result.subscriptions] == ["converged", "converged"]
    # checked, read, and digested for each subscription's identity: one open each
    assert (opens.of(changes), opens.of(snapshot)) == (1, 1), dict(opens.counts)


def test_a_canonical_file_is_read_by_one_spark_job(spark, tmp_path) -> None:
    from applier.sources.dataset import read_changes

    cfg = _config(1)
    cs, jobs = _jobs(spark, lambda: read_changes(spark, cfg, _changes(tmp_path)))
    try:
        # the stream is whole: its schema change known, its rows validated against it
        assert cs.schemas is not None and cs.schemas.version_at(ART, 4) == 2
        assert cs.rows == 4 and cs.events is not None and [e.op for e in cs.events] == ["DDL"]
        # the validation pass alone: no sniff for "DDL" (was 2 jobs) nor for "seq" (was 2)
        assert len(jobs) == 1, jobs
    finally:
        cs.unpersist()


def _jobs(spark, read):  # type: ignore[no-untyped-def]
    """What ``read()`` returns and the names of the Spark jobs it ran (their stages')."""
    sc = spark.sparkContext
    group = f"test-input-reads-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "a reading counted")
    try:
        got = read()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    tracker = sc.statusTracker()
    jobs = sorted(tracker.getJobIdsForGroup(group))
    return got, [[tracker.getStageInfo(s).name for s in tracker.getJobInfo(j).stageIds] for j in jobs]


@pytest.mark.parametrize("ddl", [True, False], ids=["with-ddl", "rows-only"])
def test_a_canonical_parquet_file_is_validated_in_one_pass(spark, tmp_path, ddl) -> None:
    """Parquet holds what it holds in columns: no probe reads it before it is validated (which
    rows are schema changes: the validation pass finds them; whether a command has a
    sub-position: its schema says there is no ``seq`` column). A file with schema changes is
    validated once more, each command against its article's version."""
    from applier.sources.dataset import read_changes, write_changes

    cfg = _config(1)
    cs = read_changes(spark, cfg, _changes(tmp_path))
    try:
        if not ddl:  # the rows before the schema change
            cs = dataclasses.replace(cs, changes=cs.changes.where("schema_version = 1 AND op = 'I'"))
        out, _ = write_changes(cs, tmp_path / "out", "parquet")
    finally:
        cs.unpersist()
    got, jobs = _jobs(spark, lambda: read_changes(spark, cfg, out))
    try:
        assert (got.schemas is not None and got.schemas.version_at(ART, 4) == 2) is ddl
        assert got.changes.count() == (4 if ddl else 2)
        # read once for its schema (Spark's job named "parquet"), validated (once more with
        # schema changes), then the check of positions (3 jobs: the rows to Python, the range
        # partitioner's sample, the sort): 8 jobs when the schema was read three times and the
        # sniffs were jobs of their own, 6 either way with a probe (seq, DDL rows) first
        assert sum(names[0].startswith("parquet at ") for names in jobs) == 1, jobs
        assert len(jobs) == (6 if ddl else 5), jobs
    finally:
        got.unpersist()
