"""``python -m applier.archive``: record the class-data archive unless it is there.

``--train`` is the child the recording runs (``applier.sparkenv.classdata.record_class_archive``): a small
run of the stages' Spark work, no database, whose JVM writes the archive when it exits.
"""

from __future__ import annotations

import sys
import tempfile
from typing import Any

from pyspark.sql import functions as F

from applier.bench.stream import BenchStream
from applier.partition.layout import lay_out
from applier.partition.strategies import partition, with_rounds
from applier.records.schema import SNAPSHOT_SCHEMA
from applier.sources.dataset import generate
from applier.sources.hazards import effective_config
from applier.sparkenv import cache_level
from applier.sparkenv.classdata import record_class_archive
from applier.sparkenv.session import spark_session
from applier.verify.diff import diff_all
from applier.verify.oracle import digest_diff, oracle


def train() -> None:
    """Load the classes of a run: generate, lay out, cache, digest oracle, Python workers, join."""
    spark = spark_session(2, app="applier-class-archive")
    cfg = effective_config(BenchStream.of(20_000, 2_000, 100, 100, 1).config(2))
    cs = generate(spark, cfg)
    assert cs.stats is not None
    indexed, _ = with_rounds(cs.changes, 100, (cs.stats.first_xact, cs.stats.transactions))
    planned = lay_out(partition(indexed, "key-hash", 2, cfg.articles), 2, cfg.articles)
    planned = planned.persist(cache_level(20_000))
    planned.count()

    def same(batches: Any) -> Any:
        yield from batches

    found = cs.snapshot.mapInArrow(same, SNAPSHOT_SCHEMA)
    digest_diff(planned, cs.snapshot, found).groupBy("kind").count().collect()
    diff_all(oracle(planned, cs.snapshot), found).where(F.col("kind").isNotNull()).limit(5).collect()
    with tempfile.TemporaryDirectory() as tmp:
        planned.limit(1000).write.parquet(tmp + "/p")
        spark.read.parquet(tmp + "/p").groupBy("stream").count().collect()
    planned.unpersist()
    cs.unpersist()


if __name__ == "__main__":
    if sys.argv[1:] == ["--train"]:
        train()
    else:
        print(record_class_archive([sys.executable, "-m", "applier.archive", "--train"]))
