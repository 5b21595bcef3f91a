"""CSV and Parquet exports of a change table, read in one Spark task per file (see the package's
docstring for what they hold)."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from applier.articles import Article
from applier.errors import InputError
from applier.sources.formats import Change
from applier.sources.formats.mssql_cdc.rows import change, layout


def csv_items(path: Path, article: Article, ci: str) -> Iterator[tuple[str | None, Change | None]]:
    with path.open(newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f, strict=True)
        try:
            header = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            yield (f"{path}:1: {e}", None)
            return
        lay = layout(header, article, f"cdc.{ci}_CT", f"{path}:1")
        while True:
            start = reader.line_num + 1
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                yield (f"{path}:{start}: {e}", None)
                return
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            place = f"{path}:{start}"
            if len(row) != len(header):
                yield (f"{place}: {len(row)} fields, the header names {len(header)}", None)
                continue
            try:
                yield (None, change(lay, row, place, text=True))
            except InputError as e:
                yield (str(e), None)


def parquet_items(path: Path, article: Article, ci: str) -> Iterator[tuple[str | None, Change | None]]:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(str(path))
    names = list(pf.schema_arrow.names)
    lay = layout(names, article, f"cdc.{ci}_CT", f"{path}: schema")
    n = 0
    for batch in pf.iter_batches(batch_size=4096):
        columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        for r in range(batch.num_rows):
            n += 1
            place = f"{path}: row {n}"
            try:
                yield (None, change(lay, [c[r] for c in columns], place, text=False))
            except InputError as e:
                yield (str(e), None)
