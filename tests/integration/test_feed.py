"""How the stream tasks get their rows (``apply.streams``): from feed files the plan phase
writes (a local master) or through Spark (a cluster, ``APPLIER_FEED=spark``). Both apply the
same commands to the same end state; the feed files (verify reads them back as the planned
stream) are gone after the run; a stream whose
file is missing fails loudly instead of applying nothing; and Arrow batches are cut by rows
alone only where the articles' row bound keeps them under Spark's byte limit."""

from __future__ import annotations

import pytest

import applier
from applier.apply.streams import FEED_ENV, feeds_from_files, read_feed
from applier.errors import ApplierError
from applier.sparkenv import ARROW_MAX_BYTES, DISK_ONLY_ABOVE, arrow_batches_by_rows
from tests.support.runs import config
from tests.support.subscriber import rows

pytestmark = pytest.mark.integration


def _state(target, table: str):  # type: ignore[no-untyped-def]
    return rows(target, f'SELECT * FROM "dbo"."{table}" ORDER BY 1')


@pytest.mark.parametrize("feed", ["files", "spark"])
def test_both_feeds_apply_the_stream_and_leave_no_feed_files(spark, target, tmp_path, monkeypatch, feed):
    if feed == "spark":
        monkeypatch.setenv(FEED_ENV, "spark")
    assert feeds_from_files(spark, 1000) is (feed == "files")
    cfg = config(f"feed_{feed}", streams=4, batch=5, kind="key-chains", transactions=80, initial_rows=40)
    work = tmp_path / "work"
    result = applier.run(cfg, target, spark=spark, work_dir=work)
    (sub,) = result.subscriptions
    assert sub.verdict is applier.Verdict.CONVERGED, sub.check.to_json()
    assert sub.summary.commands > 0
    assert not list(work.rglob("*stream-*.parquet*")), "feed files left behind"


def test_a_feed_a_killed_run_left_is_removed_by_the_next_run_of_its_subscription(spark, target, tmp_path):
    from applier.apply.streams import feed_folder

    work = tmp_path / "work"
    # What a kill -9 between the plan phase and the end of the apply leaves: whole files and
    # one written aside, of a segment this run does not have and of the one it has.
    mine = [feed_folder(work, "feed_stale", 3), feed_folder(work, "feed_stale", 0)]
    other = feed_folder(work, "feed_stale_2", 0)  # another subscription's, maybe a live run's
    for folder in [*mine, other]:
        folder.mkdir(parents=True)
        (folder / "stream-7.parquet").write_bytes(b"x" * 1024)
        (folder / ".stream-1.parquet.0.part").write_bytes(b"x")
    cfg = config("feed_stale", streams=2, batch=5, kind="key-chains", transactions=20, initial_rows=10)
    result = applier.run(cfg, target, spark=spark, work_dir=work)
    assert result.subscriptions[0].verdict is applier.Verdict.CONVERGED
    assert not any(f.exists() for f in mine)
    assert sorted(p.name for p in other.iterdir()) == [".stream-1.parquet.0.part", "stream-7.parquet"]


def test_feed_files_only_for_a_local_master_and_an_in_memory_stream(spark, monkeypatch):
    monkeypatch.delenv(FEED_ENV, raising=False)
    assert str(spark.sparkContext.master).startswith("local")
    assert feeds_from_files(spark, None) and feeds_from_files(spark, DISK_ONLY_ABOVE)
    assert not feeds_from_files(spark, DISK_ONLY_ABOVE + 1)  # cached on disk already


def test_a_missing_feed_file_is_an_error_not_an_empty_stream(tmp_path):
    with pytest.raises(ApplierError, match=r"stream 3 has no rows to apply: .*stream-3\.parquet is missing"):
        list(read_feed(str(tmp_path), 3))


def test_arrow_batches_are_cut_by_rows_only_where_the_bound_allows(spark):
    assert spark.conf.get(ARROW_MAX_BYTES) != "2147483647"
    before = spark.conf.get(ARROW_MAX_BYTES)
    with arrow_batches_by_rows(spark, 1_000):  # 5,000 rows x 1 KB: under 64 MiB
        assert spark.conf.get(ARROW_MAX_BYTES) == "2147483647"
    assert spark.conf.get(ARROW_MAX_BYTES) == before
    with arrow_batches_by_rows(spark, 100_000):  # 5,000 x 100 KB: the byte limit stays
        assert spark.conf.get(ARROW_MAX_BYTES) == before
    with arrow_batches_by_rows(spark, None):  # a LOB column: no bound
        assert spark.conf.get(ARROW_MAX_BYTES) == before


def test_a_stream_without_rows_gets_a_file_with_the_schema_and_no_batches(spark, tmp_path):
    from applier.apply.streams import feed_frame, write_feed

    df = spark.createDataFrame([(1, "a"), (2, "b")], "k long, v string").repartition(4, "k")
    per_partition = df.rdd.glom().map(len).collect()
    assert 0 in per_partition  # 2 keys over 4 partitions: some stream has no rows
    assert write_feed(spark, df, tmp_path, 100) == per_partition
    for i, n in enumerate(per_partition):
        assert sum(b.num_rows for b in read_feed(str(tmp_path), i)) == n
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"stream-{i}.parquet" for i in range(4)
    ]  # nothing aside
    # the files are the planned stream verify reads: Spark reads them back whole
    back = feed_frame(spark, str(tmp_path), 4, df.schema)
    assert sorted(tuple(r) for r in back.collect()) == [(1, "a"), (2, "b")]
