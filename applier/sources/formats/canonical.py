"""applier's own change files (JSON Lines or Parquet), read as every format is
(:data:`applier.sources.formats.FORMATS`): :func:`read_canonical`.

Every record is validated on the executors (:mod:`applier.sources.reading`), and the checks
across records done: positions unique, lsn order is transaction order.

Commands that carry a sub-position (``seq``): captured traffic has pairs that share one source position (Debezium's key change: a delete
and a create at one lsn). In a canonical file they are written with the same ``lsn`` and
``seq`` 0, 1, ...: the position of a command is then (lsn, seq), unique in the file, and
(xact_seqno, command_id) still names one command. Such a file is read through the capture
pipeline: transactions in xact_seqno order, commands in (lsn, seq) order in each, and applier
numbers them again (lsn 1..N in that order); the file's own position is kept as the command's
source position ("lsn 7 seq 1"), which the converted file (``applier convert``) shows beside it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pyspark import StorageLevel
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from applier.articles import Article
from applier.errors import InputError
from applier.records.schema import ROW_OPS, ChangeRow
from applier.sources import positions, reading
from applier.sources.canonical import position
from applier.sources.files import PARQUET_SUFFIX, InputFiles, change_files
from applier.sources.formats import Change, Format, Item, Options, Read
from applier.sources.formats.convert import read_capture
from applier.sources.positions import Position, position_ends


class CanonicalSeqFormat(Format):
    name = "canonical"
    positional: ClassVar[bool | None] = False
    dedup: ClassVar[bool] = False

    def parse(self, text: str, place: str) -> Iterator[Item]:
        try:
            rec = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"{place}: malformed JSON: {e.msg} at column {e.colno}") from None
        yield self.change(rec, place)

    def change(self, rec: Any, place: str) -> Change:
        """A record (a JSON Lines line's, a Parquet row's) -> its Change, or InputError."""
        if not isinstance(rec, dict):
            raise InputError(f"{place}: expected a JSON object, got {type(rec).__name__}")
        lsn = position(rec, "lsn", place)
        at = f"{place}: lsn {lsn}"
        seq = position(rec, "seq", at, 0)
        xact = position(rec, "xact_seqno", at)
        cmd = position(rec, "command_id", at)
        op = rec.get("op")
        if op not in ROW_OPS:
            raise InputError(
                f"{at}: op must be I, U or D in a file with sub-positions (seq), got {op!r}; "
                "schema changes, statements and procedures take a position of their own"
            )
        article = rec.get("article")
        if not isinstance(article, str):
            raise InputError(f"{at}: field 'article' must be a string")
        changed = rec.get("changed")
        return Change(
            article,
            op,
            rec.get("before"),
            rec.get("after"),
            (xact,),
            (lsn, seq, cmd),
            f"lsn {lsn} seq {seq}",
            place,
            tuple(changed) if isinstance(changed, list) else None,
        )

    def read(self, spark: Any, files: Sequence[Any]) -> Any:
        """A JSON Lines file line by line (:meth:`Format.read`); a Parquet file's rows as Spark
        reads them (images as JSON text), each named by its file."""
        if not files or Path(files[0]).suffix != PARQUET_SUFFIX:
            return super().read(spark, files)
        fmt = self

        def item(r: Any) -> tuple[Any, ...]:
            rec = r.asDict()
            place = str(rec.pop("_file"))
            try:
                for img in ("before", "after"):
                    if isinstance(rec.get(img), str):
                        try:
                            rec[img] = json.loads(rec[img])
                        except json.JSONDecodeError as e:
                            raise InputError(
                                f"{place}: lsn {rec.get('lsn')}: {img} is not JSON: {e.msg}"
                            ) from None
                return (None, fmt.change(rec, place), None)
            except InputError as e:
                return (str(e), None, None)
            except Exception as e:  # noqa: BLE001 - any record the checks cannot handle is refused
                return (reading.unexpected(place, e, "read"), None, None)

        paths = [str(f) for f in files]
        df = reading.spark_read(
            Path(paths[0]).parent,
            lambda: spark.read.parquet(*paths).withColumn("_file", F.input_file_name()),
        )
        return df.rdd.map(item)

    def combine(self, changes: list[Change]) -> list[Change]:
        """(lsn, seq) names one command, and (lsn, seq) order is command_id order in a
        transaction (the changes come in (lsn, seq) order): a canonical file's check of positions
        (:func:`applier.sources.positions.position_ends`), with (lsn, seq) for the lsn."""
        rows = (Position(c.pos[:2], 0, c.pos[2], c) for c in changes)
        for ends in position_ends(0, rows):
            if ends.fault is not None:
                a, b = ends.fault.before.place, ends.fault.after.place
                if ends.fault.kind == "lsn":
                    raise InputError(
                        f"{b.place}: {b.source} appears 2 times ({a.place}); (lsn, seq) names one command"
                    )
                raise InputError(
                    f"{b.place}: {b.source} (command_id {b.pos[2]}) comes after {a.source} "
                    f"(command_id {a.pos[2]}, {a.place}) but not after it in its transaction; "
                    "(lsn, seq) order must be command_id order"
                )
        return changes


CLASSES: dict[str, type[Format]] = {"canonical": CanonicalSeqFormat}


def read_canonical(
    spark: SparkSession,
    articles: Mapping[str, Article],
    path: str | Path | None,
    options: Options,
    scanned: InputFiles | None = None,
) -> Read:
    """The canonical reader (:class:`applier.sources.formats.CanonicalReader`): a change file or
    folder, JSON Lines or Parquet, every record validated and the checks across records done
    before anything is applied; InputError naming the place otherwise. A file whose commands
    carry sub-positions is numbered again by the capture pipeline (:class:`CanonicalSeqFormat`).
    ``scanned``: the driver's scan of ``path`` (None: scanned here), which says what the files
    hold: no Spark job reads them to find out. ``options`` say nothing to a canonical file."""
    if path is None:
        raise InputError("--format canonical: give --changes")
    found = scanned or change_files(path)
    path = found.path
    at_hand: list[ChangeRow] | None = None
    if found.parquet:  # read once, its DDL rows found by the validation (:func:`reading.validate_parquet`)
        df = reading.parquet_changes(spark, path)
        if reading.parquet_subpositions(path, df):
            return read_capture(CanonicalSeqFormat, spark, articles, path, Options(), found)
        placed, good, schemas, events = reading.validate_parquet(spark, path, articles, df)
    else:
        if _has_subpositions(spark, found):
            return read_capture(CanonicalSeqFormat, spark, articles, path, Options(), found)
        schemas = reading.schemas_of(spark, articles, found.events, found.ddl_lines)
        at_hand = [] if found.small else None  # a small file's rows, its positions checked
        events = []
        placed = reading.validate_lines(
            spark, found.files, articles, False, schemas, found.small, str(path), at_hand, events
        )
    placed = placed.persist(StorageLevel.MEMORY_AND_DISK)
    if found.parquet and good == 0:
        placed.unpersist()
        raise InputError(f"{path}: no change records; nothing to apply")
    try:
        if at_hand is None:
            positions.check_positions(placed, str(path))
    except BaseException:
        placed.unpersist()
        raise
    return Read(placed, str(path), str(path), "canonical", (placed,), schemas, at_hand, tuple(events))


def _has_subpositions(spark: SparkSession, found: InputFiles) -> bool:
    """Some command of a JSON Lines file carries a sub-position (a top-level ``seq``): the file
    is numbered again (:class:`CanonicalSeqFormat`). The driver's scan knows, unless too many
    lines mention "seq" to read there: then one job."""
    if found.subpositions is not None:
        return found.subpositions

    def top_level(text: str) -> bool:
        try:
            rec = json.loads(text)
        except json.JSONDecodeError:
            return False  # reported with its line by the validation
        return isinstance(rec, dict) and rec.get("seq") is not None

    sc = spark.sparkContext
    rdds = [sc.textFile(str(f)).filter(lambda t: '"seq"' in t) for f in found.files]
    rdd = sc.union(rdds) if len(rdds) > 1 else rdds[0]
    return not rdd.filter(top_level).isEmpty()
