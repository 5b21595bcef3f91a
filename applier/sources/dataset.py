"""Change streams as Spark DataFrames: generated, read from files, written to files.

The generator runs one Spark task per lane (mapInArrow), so nothing passes through the
driver. Change files are validated line by line on the executors; the first errors come
back to the driver with their file and line, and nothing is applied when there is any.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from applier.articles import Article
from applier.errors import InputError
from applier.settings import Config
from applier.sources.canonical import (
    ARROW_CHANGE,
    CHANGE_FIELDS,
    CHANGE_SCHEMA,
    SNAPSHOT_SCHEMA,
    validate_record,
    validate_snapshot_row,
)
from applier.sources.events import SchemaChange, Schemas
from applier.sources.generator import LANES, generate_lane

_GEN_SCHEMA = "kind string, " + CHANGE_SCHEMA
_ARROW_GEN = pa.schema([("kind", pa.string()), *ARROW_CHANGE])
_BATCH = 8192


@dataclass
class ChangeSet:
    """The stream to apply and the initial snapshot of the subscriber."""

    changes: DataFrame
    snapshot: DataFrame
    origin: str
    schemas: Schemas | None = field(default=None)  # None: no DDL events, every article at version 1

    def unpersist(self) -> None:
        self.changes.unpersist()
        self.snapshot.unpersist()


def _batches(rows: Iterator[tuple[Any, ...]], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    cols: list[list[Any]] = [[] for _ in schema]
    n = 0
    for r in rows:
        for i, v in enumerate(r):
            cols[i].append(v)
        n += 1
        if n == _BATCH:
            yield pa.RecordBatch.from_arrays(
                [pa.array(c, type=f.type) for c, f in zip(cols, schema, strict=False)], schema=schema
            )
            cols = [[] for _ in schema]
            n = 0
    if n:
        yield pa.RecordBatch.from_arrays(
            [pa.array(c, type=f.type) for c, f in zip(cols, schema, strict=False)], schema=schema
        )


def generate(spark: SparkSession, config: Config) -> ChangeSet:
    articles, workload = config.articles, config.workload
    from applier.sources import hazards

    lane_generator = hazards.generate_lane if workload.kind in hazards.HAZARDS else generate_lane

    def lanes(it: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        def rows() -> Iterator[tuple[Any, ...]]:
            for batch in it:
                for lane in batch.column("id").to_pylist():
                    for kind, r in lane_generator(articles, workload, int(lane)):
                        if kind == "snapshot":
                            yield ("snapshot", None, None, None, r[0], "S", 1, None, r[2], None, None, r[1])
                        else:
                            yield ("change", *r)

        yield from _batches(rows(), _ARROW_GEN)

    gen = spark.range(0, LANES, numPartitions=LANES).mapInArrow(lanes, _GEN_SCHEMA)
    from applier.sparkenv import cache_level

    size = workload.initial_rows * len(articles) + workload.commands
    gen = gen.persist(cache_level(size))
    changes = gen.where(F.col("kind") == "change").drop("kind")
    snapshot = gen.where(F.col("kind") == "snapshot").select(
        "article", F.col("key_after").alias("key"), F.col("after").alias("image")
    )
    return ChangeSet(changes, snapshot, f"generated {workload.kind} seed={workload.seed}")


# -- files -------------------------------------------------------------------------------
def _files(path: Path, suffixes: tuple[str, ...]) -> list[Path]:
    if path.is_dir():
        found = sorted(
            p
            for p in path.rglob("*")
            if p.is_file() and p.suffix.lower() in suffixes and not p.name.startswith((".", "_"))
        )
        return found
    return [path]


def _validate_lines(
    spark: SparkSession,
    files: list[Path],
    articles: Mapping[str, Article],
    snapshot: bool,
    schemas: Schemas | None = None,
) -> DataFrame:
    """JSON Lines files -> validated rows; InputError naming file:line on the first bad ones."""
    sc = spark.sparkContext

    def check(file: str):  # type: ignore[no-untyped-def]
        def part(it: Iterator[tuple[str, int]]) -> Iterator[tuple[Any, ...]]:
            for text, idx in it:
                place = f"{file}:{idx + 1}"
                if not text.strip():
                    continue
                try:
                    rec = json.loads(text)
                    row = (
                        validate_snapshot_row(rec, articles, place)
                        if snapshot
                        else validate_record(rec, articles, place, schemas)
                    )
                    yield (None, *row)
                except json.JSONDecodeError as e:
                    yield (f"{place}: malformed JSON: {e.msg} at column {e.colno}",)
                except InputError as e:
                    yield (str(e),)

        return part

    rdds = [sc.textFile(str(f)).zipWithIndex().mapPartitions(check(str(f))) for f in files]
    rdd = sc.union(rdds) if len(rdds) > 1 else rdds[0]
    rdd = rdd.persist(StorageLevel.MEMORY_AND_DISK)
    errors = rdd.filter(lambda r: r[0] is not None).map(lambda r: r[0]).take(5)
    if errors:
        rdd.unpersist()
        more = "" if len(errors) < 5 else "\n  (and maybe more)"
        raise InputError("invalid change file, nothing applied:\n  " + "\n  ".join(errors) + more)
    schema = SNAPSHOT_SCHEMA if snapshot else CHANGE_SCHEMA
    return spark.createDataFrame(rdd.map(lambda r: r[1:]), schema)


def _validate_parquet(
    spark: SparkSession, path: Path, articles: Mapping[str, Article], schemas: Schemas | None = None
) -> DataFrame:
    df = spark.read.parquet(str(path)).withColumn("_file", F.input_file_name())
    missing = [f for f in ("lsn", "xact_seqno", "command_id", "article", "op") if f not in df.columns]
    if missing:
        raise InputError(f"{path}: not a canonical change file, missing column(s) {missing}")

    def check(r: Any) -> tuple[Any, ...]:
        d = r.asDict()
        for img in ("before", "after"):
            if isinstance(d.get(img), str):
                try:
                    d[img] = json.loads(d[img])
                except json.JSONDecodeError as e:
                    return (f"{d['_file']}: lsn {d.get('lsn')}: {img} is not JSON: {e.msg}",)
        try:
            return (None, *validate_record(d, articles, d["_file"], schemas))
        except InputError as e:
            return (str(e),)

    rdd = df.rdd.map(check).persist(StorageLevel.MEMORY_AND_DISK)
    errors = rdd.filter(lambda r: r[0] is not None).map(lambda r: r[0]).take(5)
    if errors:
        raise InputError("invalid change file, nothing applied:\n  " + "\n  ".join(errors))
    return spark.createDataFrame(rdd.map(lambda r: r[1:]), CHANGE_SCHEMA)


def _snapshot_parquet(spark: SparkSession, path: Path, articles: Mapping[str, Article]) -> DataFrame:
    """A Parquet snapshot as ``applier generate --format parquet`` writes it (article, key,
    image as canonical JSON text), every image validated against its article."""
    df = spark.read.parquet(str(path))
    if not {"article", "image"} <= set(df.columns):
        raise InputError(f"{path}: not a canonical snapshot, expected columns article and image")

    def check(r: Any) -> tuple[Any, ...]:
        place = f"{path}: article {r['article']}"
        try:
            image = json.loads(r["image"]) if isinstance(r["image"], str) else r["image"]
            return (None, *validate_snapshot_row({"article": r["article"], "image": image}, articles, place))
        except (InputError, json.JSONDecodeError) as e:
            return (f"{place}: {e}",)

    rdd = df.select("article", "image").rdd.map(check).persist(StorageLevel.MEMORY_AND_DISK)
    errors = rdd.filter(lambda r: r[0] is not None).map(lambda r: r[0]).take(5)
    if errors:
        raise InputError("invalid snapshot file, nothing applied:\n  " + "\n  ".join(errors))
    return spark.createDataFrame(rdd.map(lambda r: r[1:]), SNAPSHOT_SCHEMA)


def _check_positions(df: DataFrame, origin: str) -> None:
    """lsn and (xact_seqno, command_id) must each name one command."""
    for cols in (["lsn"], ["xact_seqno", "command_id"]):
        dup = df.groupBy(*cols).count().where("count > 1").limit(1).collect()
        if dup:
            what = ", ".join(f"{c}={dup[0][c]}" for c in cols)
            raise InputError(f"{origin}: {what} appears {dup[0]['count']} times; positions must be unique")


def _schemas(
    spark: SparkSession, articles: Mapping[str, Article], path: Path, files: list[Path] | None
) -> Schemas | None:
    """First pass: the DDL events (few) to the driver, so that every command can then be
    validated against the article shape of its schema version. None when there are none."""
    sc = spark.sparkContext
    raw: list[tuple[str, Any]] = []
    if files is None:
        df = spark.read.parquet(str(path)).withColumn("_file", F.input_file_name())
        if "op" in df.columns:
            for r in df.where(F.col("op") == "DDL").collect():
                d = r.asDict()
                raw.append((f"{d['_file']}", d))
    else:
        for f in files:
            for text, idx in sc.textFile(str(f)).zipWithIndex().filter(lambda t: '"DDL"' in t[0]).collect():
                try:
                    rec = json.loads(text)
                except json.JSONDecodeError:
                    continue  # reported with its line by the validation pass
                if isinstance(rec, dict) and rec.get("op") == "DDL":
                    raw.append((f"{f}:{idx + 1}", rec))
    if not raw:
        return None
    changes: list[SchemaChange] = []
    for place, rec in raw:
        row = validate_record(rec, articles, place)
        changes.append(
            SchemaChange.parse(row[3], row[0], row[5], json.loads(row[7]), f"{place}: lsn {row[0]}")
        )
    return Schemas.build(articles, changes)


def read_changes(
    spark: SparkSession, config: Config, path: str | Path, snapshot_path: str | Path | None = None
) -> ChangeSet:
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such change file or directory")
    articles = {a.name: a for a in config.articles}
    parquet = path.suffix.lower() == ".parquet" or (path.is_dir() and any(path.rglob("*.parquet")))
    if parquet:
        schemas = _schemas(spark, articles, path, None)
        changes = _validate_parquet(spark, path, articles, schemas)
    else:
        files = _files(path, (".jsonl", ".json", ".ndjson"))
        if not files:
            raise InputError(f"{path}: no .jsonl files found")
        schemas = _schemas(spark, articles, path, files)
        changes = _validate_lines(spark, files, articles, snapshot=False, schemas=schemas)
    changes = changes.persist(StorageLevel.MEMORY_AND_DISK)
    _check_positions(changes, str(path))
    if snapshot_path is not None:
        sp = Path(snapshot_path)
        if not sp.exists():
            raise InputError(f"{sp}: no such snapshot file")
        if sp.suffix.lower() == ".parquet" or (sp.is_dir() and any(sp.rglob("*.parquet"))):
            snap = _snapshot_parquet(spark, sp, articles)
        else:
            snap = _validate_lines(spark, _files(sp, (".jsonl", ".json", ".ndjson")), articles, snapshot=True)
    else:
        snap = spark.createDataFrame([], SNAPSHOT_SCHEMA)
    return ChangeSet(changes, snap.persist(StorageLevel.MEMORY_AND_DISK), str(path), schemas)


def write_changes(cs: ChangeSet, out: str | Path, fmt: str = "jsonl") -> tuple[Path, Path]:
    """Write the canonical change file and the snapshot beside it."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ch, sn = out / "changes", out / "snapshot"
    for d in (ch, sn):  # overwrite an earlier output, never a folder applier did not write
        if d.exists():
            if not (d / "_SUCCESS").exists() and any(d.iterdir()):
                raise InputError(f"{d} exists and is not an earlier applier output; choose another --out")
            shutil.rmtree(d)
    changes = cs.changes.orderBy("lsn")
    if fmt == "parquet":
        changes.write.mode("overwrite").parquet(str(ch))
        cs.snapshot.write.mode("overwrite").parquet(str(sn))
        return ch, sn

    # JSON Lines with images as objects (not JSON-in-a-string), key columns derived again on read.
    def to_json(r: Any) -> str:
        d = {f: r[f] for f in ("lsn", "xact_seqno", "command_id", "article", "op", "schema_version")}
        if r["op"] in ("DDL", "SQL", "PROC"):  # events: the payload under its own name
            d[{"DDL": "ddl", "SQL": "sqldml", "PROC": "procedure"}[r["op"]]] = json.loads(r["after"])
            return json.dumps(d, ensure_ascii=False, separators=(",", ":"))
        d["before"] = json.loads(r["before"]) if r["before"] else None
        d["after"] = json.loads(r["after"]) if r["after"] else None
        d["changed"] = list(r["changed"] or [])
        return json.dumps(d, ensure_ascii=False, separators=(",", ":"))

    changes.rdd.map(to_json).saveAsTextFile(str(ch))
    cs.snapshot.rdd.map(
        lambda r: json.dumps(
            {"article": r["article"], "image": json.loads(r["image"])},
            ensure_ascii=False,
            separators=(",", ":"),
        )
    ).saveAsTextFile(str(sn))
    for d in (ch, sn):
        for part in d.glob("part-*"):
            part.rename(part.with_name(part.name + ".jsonl"))
    return ch, sn


assert tuple(f.name for f in ARROW_CHANGE) == CHANGE_FIELDS
