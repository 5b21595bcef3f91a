"""Captured change traffic (Debezium, Maxwell, wal2json, SQL Server CDC) read as canonical records.

A format turns each record it reads (a line of a JSON file, a row of a CSV or Parquet change
table) into :class:`Change` items: one row change with its article, images in the canonical
encoding (:mod:`applier.values`), its transaction and its order in it, and the capture's own
position as text. Everything else is the same for every format and lives in
:mod:`applier.sources.formats.convert`: the items are grouped by transaction on the executors
(a sort, nothing collected to the driver), duplicate deliveries dropped and counted, the
format's ``combine`` pairs what must be paired (SQL Server CDC's before and after images,
Debezium's key change folded on request), and positions are numbered: ``xact_seqno`` is the
transaction's rank in commit order, ``command_id`` its change's rank in it, ``lsn`` the
change's rank in the whole stream. Each record is then validated as a canonical record is
(errors name file, line and field) and nothing is applied when any is bad.

A change's ``committed`` is its transaction's commit time at the publisher, where the capture
gives one: ``--pace source`` replays the stream on that clock (see
:func:`applier.sources.formats.convert.commit_times`).

Items a format may yield besides changes: :class:`Begin` / :class:`Commit` markers (formats
whose transactions are known only from file order, as wal2json version 2 without xids: a change
with ``tx=None`` belongs to the transaction whose Begin came last before it in file order), and
:class:`Expect` (a transaction's announced number of changes, as Debezium's END event gives,
checked after duplicates are dropped).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from applier.articles import Article
from applier.errors import InputError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from applier.records.events import Schemas, StreamEvent
    from applier.records.schema import ChangeRow
    from applier.sources.files import InputFiles

    # What reads a format: (spark, articles, path, options, the driver's scan) -> Read
    Reading = Callable[
        [SparkSession, Mapping[str, Article], "str | Path | None", "Options", "InputFiles | None"], "Read"
    ]


@dataclass(frozen=True, slots=True)
class Change:
    """One row change read from a capture, before positions are numbered.

    ``before`` / ``after``: {column: canonical value} (applier.values.encode of the decoded
    value; validate_record checks them again against the article). ``tx`` orders transactions in
    commit order and is equal for every change of one transaction (tuples of ints and strings,
    compared as tuples; None: from the Begin marker before it in file order). ``pos`` orders the
    changes of one transaction; equal (tx, pos, article, op) with equal images is a duplicate
    delivery (dropped and counted), with other images an error. ``source`` is the capture's own
    position as text (kept in the canonical file written by ``applier convert``); ``place`` is
    file:line (or file: row) for errors.
    """

    article: str
    op: str  # I, U or D
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None
    tx: tuple[Any, ...] | None
    pos: tuple[Any, ...]
    source: str
    place: str
    changed: tuple[str, ...] | None = None  # columns changed by an update (None: those that differ)
    # Columns the capture left out of an update's new row because they did not change (PostgreSQL's
    # unchanged TOASTed values): taken from the row's previous image (formats.unchanged).
    unchanged: tuple[str, ...] = ()
    # When its transaction committed at the publisher, epoch seconds (wal2json's ``timestamp``,
    # Debezium's ``source.ts_ms``, Maxwell's ``ts``, a CDC export's ``tran_end_time``); None:
    # the capture does not say. ``--pace source`` replays the stream at these times.
    committed: float | None = None


@dataclass(frozen=True, slots=True)
class Begin:
    """A transaction starts (file-ordered formats); ``at``: its commit time, when the capture
    gives it there (wal2json version 2's ``timestamp``), for the changes that follow."""

    place: str
    at: float | None = None


@dataclass(frozen=True, slots=True)
class Commit:
    place: str


@dataclass(frozen=True, slots=True)
class Expect:
    """The number of row changes transaction ``tx`` announces (checked once duplicates are
    dropped; a mismatch is an error naming ``place``)."""

    tx: tuple[Any, ...]
    count: int
    place: str


Item = Change | Begin | Commit | Expect


@dataclass(frozen=True)
class Options:
    """What the user chose for the reading of a capture (``applier run`` / ``convert`` options)."""

    format: str = "canonical"  # one of FORMATS
    fold_key_changes: bool = False  # Debezium: delete + create at one position -> one key update
    source: str | None = None  # mssql-cdc: an ODBC connection string to read the change table from
    capture_instance: str | None = None  # mssql-cdc: cdc.<capture_instance>_CT


@dataclass
class Format:
    """A capture format. Built on the driver, pickled to the executors (keep it plain data).

    ``parse`` turns one line of a text file into items (raise InputError naming ``place`` and the
    field); formats that are not JSON Lines (CSV, Parquet, ODBC) override ``read``.
    """

    name: ClassVar[str] = ""
    suffixes: ClassVar[tuple[str, ...]] = (".jsonl", ".json", ".ndjson", ".txt")
    # Transactions known only from file order (Begin/Commit markers, changes with tx=None):
    # True, False, or None (found out from the data, at the cost of one pass).
    positional: ClassVar[bool | None] = None
    # Equal positions with equal images are a duplicate delivery (dropped, counted); False: an
    # error (positions must be unique, as in a canonical file).
    dedup: ClassVar[bool] = True
    # Every image value is made by applier.values.encode against the article's column: the
    # canonical validation checks the images' shape, not each value again.
    encoded: ClassVar[bool] = False
    articles: Mapping[str, Article]
    options: Options = field(default_factory=Options)

    def parse(self, text: str, place: str) -> Iterator[Item]:
        raise NotImplementedError

    def combine(self, changes: list[Change]) -> list[Change]:
        """The changes of one transaction in order, duplicates dropped -> what to apply (pairs
        joined, key changes folded). Default: as they are."""
        return changes

    def read(self, spark: Any, files: Sequence[Any]) -> Any:
        """RDD of (error text or None, item or None) for every record of ``files``: by default
        every line of every file through ``parse``, in file order (partitions in order)."""
        from applier.sources.formats.convert import read_lines

        return read_lines(spark, files, self)

    # -- helpers for formats ----------------------------------------------------------------
    def article(self, schema: str | None, table: str, place: str) -> Article:
        """The article a capture names by schema and table (exact, then case-insensitive; a
        missing schema matches the only article of that table), or InputError naming place."""
        return find_article(self.articles, schema, table, place)


def find_article(articles: Mapping[str, Article], schema: str | None, table: str, place: str) -> Article:
    if schema is not None:
        a = articles.get(f"{schema}.{table}")
        if a is not None:
            return a
    low = table.lower()
    found = [
        a
        for a in articles.values()
        if a.table.lower() == low and (schema is None or a.schema.lower() == schema.lower())
    ]
    if len(found) == 1:
        return found[0]
    shown = f"{schema}.{table}" if schema is not None else table
    if len(found) > 1:
        names = ", ".join(sorted(a.name for a in found))
        raise InputError(f"{place}: table {shown!r} matches several articles ({names}); give the schema")
    known = ", ".join(sorted(articles)) or "none"
    raise InputError(f"{place}: table {shown!r} is not an article (known: {known})")


# -- the one reading interface ------------------------------------------------------------
@dataclass
class Read:
    """What a format's reader gives back, every format's (canonical included): the validated
    change rows and what the reading learned of them."""

    # CHANGE_FIELDS and ``_place``; a capture's (``captured``) also ``_source``, ``_unchanged``
    # and ``_committed`` (:data:`applier.sources.formats.convert.CAPTURED_SCHEMA`)
    rows: DataFrame
    origin: str  # the input, as errors name it
    title: str  # the stream's name in the report
    format: str
    cached: tuple[Any, ...] = ()
    schemas: Schemas | None = None  # None: no DDL events, every article at version 1
    # A small file's rows, read on the driver (where its positions were checked): the stream's
    # events, transactions and commands are then known without a job
    at_hand: list[ChangeRow] | None = None
    # The stream's DDL, SQL and PROC events as the validation decoded them, in lsn order (None:
    # not gathered; the run collects them from ``rows``)
    events: tuple[StreamEvent, ...] | None = None
    captured: bool = False  # a capture's rows: with their source position and commit time
    transactions: int = 0  # a capture's, counted as it was read
    changes: int = 0
    unchanged: int = 0  # updates whose new row left out unchanged values (formats.unchanged)
    notes: dict[str, Any] = field(default_factory=dict)  # how a capture was read (the report's)

    def commit_times(self) -> tuple[float, ...] | None:
        """Each transaction's commit time at the publisher (``--pace source``), where the rows
        carry one (a capture's; one small job); None: a canonical file's carry none."""
        if not self.captured:
            return None
        from applier.sources.formats.convert import commit_times

        return commit_times(self.rows, self.transactions, self.origin, self.format)

    def unpersist(self) -> None:
        for c in self.cached:
            c.unpersist()


@dataclass(frozen=True)
class Reader:
    """One ``--format``: ``read`` turns its input into validated change rows (:class:`Read`),
    in one pipeline for every format. Registered in :data:`FORMATS`, built without importing
    Spark (the CLI lists the names): the module that reads it (``applier.sources.formats.<module>``,
    its Format classes in ``CLASSES``) is imported when it reads. A capture's reader:
    :func:`applier.sources.formats.convert.read_capture` through its Format."""

    name: str
    module: str

    def format_class(self) -> type[Format]:
        classes: dict[str, type[Format]] = import_module(f"applier.sources.formats.{self.module}").CLASSES
        return classes[self.name]

    @property
    def suffixes(self) -> tuple[str, ...]:
        """The files a folder of this format's changes is read for."""
        return self.format_class().suffixes

    def read(
        self,
        spark: SparkSession,
        articles: Mapping[str, Article],
        path: str | Path | None,
        options: Options,
        scanned: InputFiles | None = None,
    ) -> Read:
        """The input at ``path`` (or the format's own source) -> its validated change rows;
        InputError naming the places of the first bad records, nothing applied, otherwise.
        ``scanned``: the driver's scan of ``path`` (None: scanned here)."""
        return self.reading()(spark, articles, path, options, scanned)

    def reading(self) -> Reading:
        """The function that reads this format (with :meth:`read`'s arguments): a capture's,
        :func:`applier.sources.formats.convert.read_capture` through its Format class."""
        from functools import partial

        from applier.sources.formats.convert import read_capture

        return partial(read_capture, self.format_class())


@dataclass(frozen=True)
class CanonicalReader(Reader):
    """applier's own change files (JSON Lines or Parquet): :func:`applier.sources.formats.
    canonical.read_canonical` (a file whose commands carry sub-positions included)."""

    @property
    def suffixes(self) -> tuple[str, ...]:
        from applier.sources.files import JSON_SUFFIXES

        return JSON_SUFFIXES

    def reading(self) -> Reading:
        from applier.sources.formats.canonical import read_canonical

        return read_canonical


# Every input format, canonical included, by its --format name (iterates the names: the CLI's
# choices, the API's check).
FORMATS: dict[str, Reader] = {
    "canonical": CanonicalReader("canonical", "canonical"),
    "debezium": Reader("debezium", "debezium"),
    "maxwell": Reader("maxwell", "maxwell"),
    "wal2json": Reader("wal2json", "wal2json"),
    "wal2json2": Reader("wal2json2", "wal2json"),
    "mssql-cdc": Reader("mssql-cdc", "mssql_cdc"),
}


def reader(name: str) -> Reader:
    """The reader of a --format name, or InputError listing the known ones."""
    found = FORMATS.get(name)
    if found is None:
        raise InputError(f"unknown change format {name!r} (known: {', '.join(FORMATS)})")
    return found


def suffixes_of(capture: Options | None) -> tuple[str, ...]:
    """The text files a folder of ``capture``'s changes is read for (None or canonical: applier's
    own JSON Lines)."""
    return reader(capture.format if capture is not None else "canonical").suffixes


def format_class(name: str) -> type[Format]:
    """The Format class of a --format name, or InputError listing the known ones."""
    return reader(name).format_class()
