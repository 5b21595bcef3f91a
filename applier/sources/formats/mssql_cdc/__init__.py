"""SQL Server CDC change tables (``cdc.<capture_instance>_CT``) read as canonical changes.

Three ways in, one row reading:

* **CSV** exports of a change table (``--changes F.csv`` or a folder of them), read with Python's
  csv module, one Spark task per file: a header row naming the columns
  (``__$start_lsn, __$end_lsn, __$seqval, __$operation, __$update_mask, <captured columns...>,
  __$command_id``, in any order); binary values (LSNs, the update mask, binary columns) as hex
  with or without ``0x``; **NULL is an empty field or the text NULL** (so an empty string and the
  string 'NULL' of a text column cannot travel through CSV: use Parquet); quoted fields may hold
  commas, quotes and newlines. Errors name ``file:line`` (the line the record starts on).
* **Parquet** exports (``binary(10)`` LSNs as bytes, or hex text), read with pyarrow, one task
  per file; the place is ``file: row N`` (1-based).
* **ODBC** (``Options.source`` and ``Options.capture_instance``): ``SELECT`` from
  ``cdc.<capture_instance>_CT`` in Spark tasks, each with its own pyodbc connection and one slice
  of the rows (the last byte of ``__$seqval`` modulo the number of slices); identifiers quoted
  by the source's dialect. Only the column names are read on the driver.

Column semantics (MicrosoftDocs, cdc.<capture_instance>_CT): ``__$start_lsn`` is the commit LSN,
shared by every change of a transaction: the transaction (``tx``), commit order. ``__$seqval``
orders the changes of a transaction. ``__$operation``: 1 delete, 2 insert, 3 update before
image, 4 update after image; the 3 and the 4 of one row change share ``__$start_lsn`` and
``__$seqval`` and are joined into one update by :meth:`MssqlCdcFormat.combine` (an operation 3
or 4 without the other is an error naming its place). ``__$command_id`` (from the cumulative
updates of KB 3030352, which fixed the order of updated rows) orders the operations of a
transaction when present. Position in a transaction: (``__$command_id`` or 0, ``__$seqval``,
``__$operation``): 3 before 4, and a key update captured as delete + insert at one
``__$seqval`` (as Debezium's SQL Server documentation describes) keeps its delete first; with
``Options.fold_key_changes`` such a pair becomes one key update.

``__$update_mask``: bit *i* (counting from the least significant bit of the last byte, the
mask read as one big-endian number) stands for the captured column of ordinal *i + 1*, the
ordinal being the column's place among the captured columns of the change table
(``sys.fn_cdc_get_column_ordinal``; ``sys.fn_cdc_is_bit_set`` reads byte
``datalength(mask) - (ordinal - 1) / 8``). The columns of an update's mask are its ``changed``
columns (a key column whose value differs is changed whatever the mask says); without a mask
the changed columns are those whose values differ. Inserts and deletes set every bit.

Large objects: ``text``, ``ntext`` and ``image`` columns are NULL in operations 1 and 3;
``varchar(max)``, ``nvarchar(max)``, ``varbinary(max)`` (and ``xml``) are NULL in operation 3
unless the update changed them. Those NULLs are not values: the column is left out of the
before image (before images may be partial). Computed columns a capture includes are always
NULL and are not replicated: ignored.

Which article: the capture instance's source table. ODBC on SQL Server asks
``cdc.change_tables`` (``source_object_id``); otherwise the capture instance is taken to be the
default ``schema_table`` and matched against the articles. For files the capture instance is
``Options.capture_instance`` when given, else the file's name (``dbo_customers_CT.csv``, a
leading ``cdc.`` and the trailing ``_CT`` dropped), else its folder's name (Spark's
``part-*.parquet`` files).

Which column: captured columns are matched to the article's columns by name (exact, then
case-insensitive). A captured column the article does not have is an error naming it; an
article column the capture instance does not capture is an error too (a capture instance
created with a ``@captured_column_list`` that leaves a column out cannot say its value, and an
insert would write NULL there): give the article only the captured columns. ``__$`` columns
other than those above (``__$end_lsn``, ``__$lsn_period``...) are ignored.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from applier.articles import Article
from applier.errors import InputError
from applier.sources.formats import Change, Format, Item
from applier.sources.formats.mssql_cdc.files import csv_items, parquet_items
from applier.sources.formats.mssql_cdc.odbc import read_source
from applier.sources.formats.mssql_cdc.rows import (
    SEQVAL,
    START_LSN,
    instance_article,
    instance_of_file,
    joined,
    no_article,
)


@dataclass
class MssqlCdcFormat(Format):
    name: ClassVar[str] = "mssql-cdc"
    suffixes: ClassVar[tuple[str, ...]] = (".csv",)
    positional: ClassVar[bool | None] = False

    def parse(self, text: str, place: str) -> Iterator[Item]:
        raise InputError(f"{place}: mssql-cdc reads CSV or Parquet exports of a change table, or --source")

    # -- reading ---------------------------------------------------------------------------------
    def file_article(self, path: Path) -> tuple[Article, str]:
        """The article a change-table file belongs to and the capture instance that names it."""
        tried: list[str] = []
        for ci in (
            self.options.capture_instance,
            instance_of_file(path.name),
            instance_of_file(path.parent.name),
        ):
            if not ci or ci in tried:
                continue
            tried.append(ci)
            a = instance_article(self.articles, ci, str(path))
            if a is not None:
                return a, ci
            if ci == self.options.capture_instance:
                break  # the user's choice is not second-guessed by the file's name
        raise no_article(self.articles, tried, str(path))

    def file_items(self, path: Path) -> Iterator[tuple[str | None, Change | None]]:
        """(error, change) for every row of one CSV or Parquet file, in file order."""
        try:
            article, ci = self.file_article(path)
            if path.suffix.lower() == ".parquet":
                yield from parquet_items(path, article, ci)
            else:
                yield from csv_items(path, article, ci)
        except InputError as e:
            yield (str(e), None)
        except OSError as e:
            yield (f"{path}: cannot read the file: {e.strerror or e}", None)
        except UnicodeDecodeError as e:
            yield (f"{path}: not UTF-8 text ({e.reason} at byte {e.start} of a chunk)", None)

    def read(self, spark: Any, files: Sequence[Any]) -> Any:
        if self.options.source:
            return read_source(self, spark)
        paths = [str(f) for f in files]
        if not paths:
            raise InputError(
                "mssql-cdc: no change-table files, and no --source to read the change table from"
            )
        fmt = self
        return spark.sparkContext.parallelize(paths, len(paths)).flatMap(lambda p: fmt.file_items(Path(p)))

    # -- per transaction ---------------------------------------------------------------------------
    def combine(self, changes: list[Change]) -> list[Change]:
        """Operation 3 + 4 of one row change (same __$seqval) -> one update; with
        ``fold_key_changes``, a delete + insert of one article at one __$seqval -> one update."""
        out: list[Change] = []
        i = 0
        while i < len(changes):
            c = changes[i]
            nxt = changes[i + 1] if i + 1 < len(changes) else None
            op = c.pos[-1]
            same = nxt is not None and nxt.pos[:-1] == c.pos[:-1] and nxt.article == c.article
            if op == 3:
                if nxt is None or not same or nxt.pos[-1] != 4:
                    raise InputError(
                        f"{c.place}: {c.source}: an update's before image (operation 3) without its after "
                        f"image (operation 4 at the same {START_LSN} and {SEQVAL})"
                    )
                out.append(joined(c, nxt))
                i += 2
                continue
            if op == 4:
                raise InputError(
                    f"{c.place}: {c.source}: an update's after image (operation 4) without its before "
                    f"image (operation 3 at the same {START_LSN} and {SEQVAL})"
                )
            if self.options.fold_key_changes and op == 1 and same and nxt is not None and nxt.pos[-1] == 2:
                out.append(joined(c, nxt))
                i += 2
                continue
            out.append(c)
            i += 1
        return out


CLASSES: dict[str, type[Format]] = {"mssql-cdc": MssqlCdcFormat}
