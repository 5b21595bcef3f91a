"""Change and snapshot files read into validated DataFrames.

Every line (or Parquet row) is validated on the executors; the first errors come back to the
driver with their file and line, and nothing is applied when there is any. An event's payload
is decoded there once and its event comes back with them. The validated rows carry their
place (``_place``: file:line, or the Parquet file) until the checks across rows are done
(:mod:`applier.sources.positions`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from applier.articles import Article
from applier.errors import InputError
from applier.records.events import SchemaChange, Schemas, StreamEvent
from applier.records.schema import CHANGE_SCHEMA, EVENT_OPS, SNAPSHOT_SCHEMA, ChangeRow, Validated
from applier.sources.canonical import (
    validate_event,
    validate_record,
    validate_schema_change,
    validate_snapshot_row,
)
from applier.sources.positions import PLACE, Position, position_faults, snapshot_key_faults

KEPT = 1000  # bad records' errors kept at most (--errors all prints them; the message names the first)
T = TypeVar("T")


def unexpected(place: str, e: Exception, doing: str = "validate") -> str:
    """A record the validation (or a format's reading) itself could not handle: refused like
    any bad record."""
    return f"{place}: cannot {doing} this record: {type(e).__name__}: {e}"


def read_lines(
    spark: SparkSession,
    files: Sequence[Any],
    parse: Callable[[str, str, int, int], Iterable[tuple[Any, ...]]],
    refuse: Callable[[str, Exception, int, int], tuple[Any, ...]],
    parts: int | None = None,
) -> Any:
    """The JSON Lines reader (canonical files, snapshots, every text capture format): each line
    of each file that is not blank, in file order (partitions in order), through ``parse(text,
    place, file index, line index)``, ``place`` being file:line; what it raises (a bad record,
    or one it cannot handle) becomes ``refuse(place, error, file index, line index)``: the
    record refused with its place, the rest read on. ``parts``: at least this many partitions a
    file (1: zipWithIndex then needs no job). RDD of what they return."""
    sc = spark.sparkContext

    def of(file: str, fi: int):  # type: ignore[no-untyped-def]
        def part(it: Iterator[tuple[str, int]]) -> Iterator[tuple[Any, ...]]:
            for text, idx in it:
                if not text.strip():
                    continue
                place = f"{file}:{idx + 1}"
                try:
                    yield from parse(text, place, fi, idx)
                except Exception as e:  # noqa: BLE001 - any record the checks cannot handle is refused
                    yield refuse(place, e, fi, idx)

        return part

    rdds = [
        sc.textFile(str(f), parts).zipWithIndex().mapPartitions(of(str(f), i)) for i, f in enumerate(files)
    ]
    return sc.union(rdds) if len(rdds) > 1 else rdds[0]


def spark_read(what: Path, read: Callable[[], T]) -> T:
    """Spark's reading of a file that is not what it says (a damaged Parquet file, columns of
    another type in another file): InputError naming the file, not a Java stack."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    try:
        return read()
    except (PySparkException, Py4JJavaError) as e:
        first = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), type(e).__name__)
        raise InputError(f"{what}: Spark cannot read it: {first[:300]}") from None


class _Summary(NamedTuple):
    """Validated records summed up: the first errors, how many are refused, how many are good,
    and the good ones ``keep`` picked (:func:`_summary`)."""

    kept: list[str]
    bad: int
    good: int
    found: list[Validated[Any]]

    def raise_errors(self, noun: str) -> None:
        raise_errors(self.kept, noun, self.bad if len(self.kept) == KEPT else None)


def _summary(rdd: Any, keep: Callable[[Any], bool] | None = None) -> _Summary:
    """An RDD of :class:`Validated` summed up in one job: each partition's first errors, its
    counts, and its good rows that ``keep`` picks (few: they reach the driver)."""

    def summary(it: Iterable[Validated[Any]]) -> Iterator[_Summary]:
        kept: list[str] = []
        found: list[Validated[Any]] = []
        bad = good = 0
        for v in it:
            if v.error is None:
                good += 1
                if keep is not None and keep(v.row):
                    found.append(v)
                continue
            bad += 1
            if len(kept) < KEPT:
                kept.append(v.error)
        yield _Summary(kept, bad, good, found)

    parts: list[_Summary] = rdd.mapPartitions(summary).collect()
    return _Summary(
        [e for p in parts for e in p.kept][:KEPT],
        sum(p.bad for p in parts),
        sum(p.good for p in parts),
        [v for p in parts for v in p.found],
    )


def _errors(rdd: Any, noun: str) -> int:
    """The errors of an RDD of :class:`Validated` raised as :func:`raise_errors` does; else how
    many rows are good. One job."""
    got = _summary(rdd)
    got.raise_errors(noun)
    return got.good


def validated(
    rec: Any, articles: Mapping[str, Article], place: str, schemas: Schemas | None = None
) -> Validated[ChangeRow]:
    """A decoded change record validated (InputError otherwise); an event's payload decoded
    and parsed once, here, and carried with it (``event``)."""
    if isinstance(rec, Mapping) and rec.get("op") in EVENT_OPS:
        row, event = validate_event(rec, articles, place, schemas)
        return Validated(None, place, row, event)
    return Validated(None, place, validate_record(rec, articles, place, schemas))


def _is_event(row: ChangeRow) -> bool:
    return row.op in EVENT_OPS


def events_of(found: Iterable[Validated[Any]]) -> list[StreamEvent]:
    """The events the validation decoded, in lsn order."""
    return sorted((v.event for v in found if v.event is not None), key=lambda e: e.lsn)


def placed_row(v: Validated[Any]) -> tuple[Any, ...]:
    """A validated row as Spark takes it: ``_place`` first, then the row's fields."""
    return (v.place, *v.good)


def raise_errors(errors: list[str], noun: str, total: int | None = None) -> None:
    """Bad records' errors (at most :data:`KEPT`; ``total``: how many there are, where counted)
    as one InputError (nothing applied), if there are any: two lines at most, the first error
    and how many more; ``details`` holds every one kept (``--errors all`` prints them)."""
    if not errors:
        return
    n = len(errors) if total is None else total
    message = f"invalid {noun}, nothing applied: {errors[0]}"
    if n > 1:
        at_least = " or more" if total is None and len(errors) >= KEPT else ""
        message += (
            f"\n  and {n - 1}{at_least} more bad record{'s' if n > 2 else ''} (--errors all prints every one)"
        )
    details = list(errors)
    if n > len(errors) or (total is None and len(errors) >= KEPT):
        details.append(f"... {'and ' + str(n - len(errors)) if n > len(errors) else 'maybe'} more, not kept")
    raise InputError(message, details)


SMALL_PARTITION_ROWS = 20_000  # rows of a small file a partition holds (the ones read on the driver)


def validate_lines(
    spark: SparkSession,
    files: Sequence[Path],
    articles: Mapping[str, Article],
    snapshot: bool,
    schemas: Schemas | None = None,
    small: bool = False,
    origin: str = "",
    rows_out: list[Any] | None = None,
    events_out: list[StreamEvent] | None = None,
) -> DataFrame:
    """JSON Lines files -> validated rows with their ``_place``; InputError naming file:line on
    the first bad ones. ``small``: one partition per file (zipWithIndex then needs no job), the
    rows gathered on the driver, where the checks across rows run (:func:`check_positions` or
    :func:`check_snapshot_keys`, ``origin`` naming the input), and added to ``rows_out``
    (:class:`ChangeRow` or :class:`SnapshotRow`); the stream's events, decoded by the
    validation, are added to ``events_out`` (in lsn order)."""
    sc = spark.sparkContext

    def parse(text: str, place: str, _file: int, _line: int) -> Iterator[Validated[Any]]:
        rec = json.loads(text)
        if snapshot:
            yield Validated(None, place, validate_snapshot_row(rec, articles, place))
        else:
            yield validated(rec, articles, place, schemas)

    def refuse(place: str, e: Exception, _file: int, _line: int) -> Validated[Any]:
        if isinstance(e, json.JSONDecodeError):
            return Validated.refused(f"{place}: malformed JSON: {e.msg} at column {e.colno}")
        return Validated.refused(str(e) if isinstance(e, InputError) else unexpected(place, e))

    rdd = read_lines(spark, files, parse, refuse, 1 if small else None)
    noun = "snapshot file" if snapshot else "change file"
    schema = f"{PLACE} string, " + (SNAPSHOT_SCHEMA if snapshot else CHANGE_SCHEMA)
    if small:  # one job: rows and errors to the driver, the checks across rows run there
        rows: list[Validated[Any]] = rdd.collect()
        errors = [v.error for v in rows if v.error is not None]
        raise_errors(errors, noun, len(errors))
        # the checks across rows on the rows at hand (a job each over the DataFrame made of them)
        if snapshot:
            snapshot_key_faults([(v.good.article, v.good.key, v.place) for v in rows])
        else:
            position_faults(
                sorted(Position(v.good.lsn, v.good.xact_seqno, v.good.command_id, v.place) for v in rows),
                origin,
            )
        if rows_out is not None:
            rows_out.extend(v.good for v in rows)
        if events_out is not None:
            events_out.extend(events_of(rows))
        placed = [placed_row(v) for v in rows]
        # in as many partitions as the rows fill (a list would be cut into the session's
        # default parallelism: 8 tasks of a few rows in every stage that reads them)
        slices = max(1, min(sc.defaultParallelism, -(-len(placed) // SMALL_PARTITION_ROWS)))
        return spark.createDataFrame(sc.parallelize(placed, slices), schema)
    rdd = rdd.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        got = _summary(rdd, None if snapshot else _is_event)  # one job: errors, counts, events
        got.raise_errors(noun)
    except InputError:
        rdd.unpersist()
        raise
    if events_out is not None:
        events_out.extend(events_of(got.found))
    return spark.createDataFrame(rdd.map(placed_row), schema)


def parquet_changes(spark: SparkSession, path: Path) -> DataFrame:
    """A Parquet change path as Spark reads it (its schema found: a job), each row with its
    ``_file``: read once, then validated (:func:`validate_parquet`)."""
    return spark_read(path, lambda: spark.read.parquet(str(path)).withColumn("_file", F.input_file_name()))


def parquet_subpositions(path: Path, df: DataFrame) -> bool:
    """Some command of a Parquet change file carries a sub-position (``seq`` not null): one job,
    where the file has a ``seq`` column at all (its schema says, without a job)."""
    if "seq" not in df.columns:
        return False
    return bool(spark_read(path, lambda: df.where(F.col("seq").isNotNull()).limit(1).count()))


def validate_parquet(
    spark: SparkSession, path: Path, articles: Mapping[str, Article], df: DataFrame
) -> tuple[DataFrame, int, Schemas | None, list[StreamEvent]]:
    """The rows of :func:`parquet_changes` validated, with their ``_place``, how many there
    are, and the schema versions of its DDL rows; InputError naming the file on the first bad
    ones. One pass, which finds the DDL rows as it validates them (an event's validation needs
    no schema version); a file that holds some is validated once more, each command against
    the version of its article at its lsn (the first pass's errors may be of that); and its
    events, decoded by the first pass."""
    missing = [f for f in ("lsn", "xact_seqno", "command_id", "article", "op") if f not in df.columns]
    if missing:
        raise InputError(f"{path}: not a canonical change file, missing column(s) {missing}")

    def checked(schemas: Schemas | None) -> Any:
        def check(r: Any) -> Validated[Any]:
            d = r.asDict()
            place = str(d["_file"])
            for img in ("before", "after"):
                if isinstance(d.get(img), str):
                    try:
                        d[img] = json.loads(d[img])
                    except json.JSONDecodeError as e:
                        return Validated.refused(f"{place}: lsn {d.get('lsn')}: {img} is not JSON: {e.msg}")
            try:
                return validated(d, articles, place, schemas)
            except InputError as e:
                return Validated.refused(str(e))
            except Exception as e:  # noqa: BLE001 - any record the checks cannot handle is refused
                return Validated.refused(unexpected(place, e))

        return df.rdd.map(check).persist(StorageLevel.MEMORY_AND_DISK)

    rdd = checked(None)
    got = spark_read(path, lambda: _summary(rdd, _is_event))
    events = events_of(got.found)
    changes = [e.payload for e in events if isinstance(e.payload, SchemaChange)]
    schemas = Schemas.build(articles, changes) if changes else None
    if schemas is None:
        got.raise_errors("change file")
        good = got.good
    else:  # its commands validated again, against their schema versions
        rdd.unpersist()
        rdd = checked(schemas)
        good = spark_read(path, lambda: _errors(rdd, "change file"))
    placed = spark.createDataFrame(rdd.map(placed_row), f"{PLACE} string, {CHANGE_SCHEMA}")
    return placed, good, schemas, events


def snapshot_parquet(spark: SparkSession, path: Path, articles: Mapping[str, Article]) -> DataFrame:
    """A Parquet snapshot as ``applier generate --format parquet`` writes it (article, key,
    image as canonical JSON text), every image validated against its article."""
    df = spark_read(path, lambda: spark.read.parquet(str(path)))
    if not {"article", "image"} <= set(df.columns):
        raise InputError(f"{path}: not a canonical snapshot, expected columns article and image")

    def check(r: Any) -> Validated[Any]:
        place = f"{path}: article {r['article']}"
        try:
            image = json.loads(r["image"]) if isinstance(r["image"], str) else r["image"]
            row = validate_snapshot_row({"article": r["article"], "image": image}, articles, place)
            return Validated(None, place, row)
        except (InputError, json.JSONDecodeError) as e:
            return Validated.refused(f"{place}: {e}")
        except Exception as e:  # noqa: BLE001 - any record the checks cannot handle is refused
            return Validated.refused(unexpected(place, e))

    rdd = df.select("article", "image").rdd.map(check).persist(StorageLevel.MEMORY_AND_DISK)
    spark_read(path, lambda: _errors(rdd, "snapshot file"))
    return spark.createDataFrame(rdd.map(placed_row), f"{PLACE} string, {SNAPSHOT_SCHEMA}")


def schemas_of(
    spark: SparkSession,
    articles: Mapping[str, Article],
    files: Sequence[Path],
    lines: Sequence[tuple[str, str]] | None = None,
) -> Schemas | None:
    """The DDL events (few) on the driver, so that every command can then be validated against
    the article shape of its schema version; None when there are none. ``lines``: the
    (file:line, text) of the JSON Lines lines that mention "DDL", as the driver's scan kept them
    (:class:`applier.sources.files.InputFiles`); None: a first Spark pass over ``files`` finds
    them (a Parquet file's: :func:`validate_parquet`)."""
    sc = spark.sparkContext
    raw: list[tuple[str, Any]] = []
    if lines is not None:
        raw = _ddl_records(lines)
    elif files:  # the JSON Lines files that mention "DDL" (the driver's check saw which)

        def placed(f: str) -> Any:
            return sc.textFile(f).zipWithIndex().filter(lambda t: '"DDL"' in t[0]).map(lambda t: (f, *t))

        rdds = [placed(str(f)) for f in files]
        found = (sc.union(rdds) if len(rdds) > 1 else rdds[0]).collect()
        raw = _ddl_records((f"{f}:{idx + 1}", text) for f, text, idx in found)
    return schemas_from(articles, raw)


def schemas_from(articles: Mapping[str, Article], raw: Sequence[tuple[str, Any]]) -> Schemas | None:
    """The schema versions of the DDL records (place, record) of a stream; None for none."""
    if not raw:
        return None
    return Schemas.build(articles, [validate_schema_change(rec, articles, place) for place, rec in raw])


def _ddl_records(lines: Iterable[tuple[str, str]]) -> list[tuple[str, Any]]:
    """(place, record) of the lines that hold a DDL event; a line that is not JSON is left to
    the validation pass, which reports it with its line."""
    out: list[tuple[str, Any]] = []
    for place, text in lines:
        try:
            rec = json.loads(text)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict) and rec.get("op") == "DDL":
            out.append((place, rec))
    return out
