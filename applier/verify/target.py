"""Read the subscriber's rows back, normalised to the canonical image encoding.

Each article is read in slices of a hash of its key, each slice by its own Spark task with
its own connection (fetchmany in chunks), so the table never passes through the driver and
the normalisation runs on every core.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from applier import failpoints
from applier.articles import Article
from applier.records.schema import SNAPSHOT_SCHEMA
from applier.targets.endpoint import Endpoint
from applier.values import dumps_sorted_image, encoder, key_text

_ARROW = pa.schema([("article", pa.string()), ("key", pa.string()), ("image", pa.string())])


def read_target(
    spark: SparkSession, target: Endpoint, articles: Sequence[Article], slices: int | None = None
) -> DataFrame:
    """(article, key, image) of every row the subscriber holds, images canonical."""
    by_name = {a.name: a for a in articles}
    if slices is None:
        slices = max(1, spark.sparkContext.defaultParallelism // max(1, len(articles)))

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        dialect = target.dialect
        failpoints.reach("verify.read")
        conn = target.connect()
        try:
            for b in batches:
                for name, part in zip(
                    b.column("article").to_pylist(), b.column("slice").to_pylist(), strict=True
                ):
                    a = by_name[name]
                    # the dict is built in sorted-name order: its image needs no sort per row
                    cols = sorted(
                        ((i, c.name, encoder(c)) for i, c in enumerate(a.replicated)), key=lambda x: x[1]
                    )
                    cur = conn.cursor()
                    if slices > 1:
                        cur.execute(dialect.select_rows_sql(a, slices), part)
                    else:
                        cur.execute(dialect.select_rows_sql(a))
                    while True:
                        rows = cur.fetchmany(10000)
                        if not rows:
                            break
                        keys, images = [], []
                        for r in rows:
                            img = {n: enc(r[i]) for i, n, enc in cols}
                            keys.append(key_text(a, img))
                            images.append(dumps_sorted_image(img))
                        yield pa.RecordBatch.from_arrays(
                            [pa.array([name] * len(keys)), pa.array(keys), pa.array(images)], schema=_ARROW
                        )
            conn.commit()
        finally:
            conn.close()

    work = [(a.name, i) for a in articles for i in range(slices)]
    names = spark.createDataFrame(work, "article string, slice int")
    return names.repartition(max(1, len(work))).mapInArrow(read, SNAPSHOT_SCHEMA)
