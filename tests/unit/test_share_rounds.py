"""A stream's batches cut into rounds (:class:`Shares`) and a share cut into runs of one
article and operation (:meth:`Share.runs`), pure Arrow: what the stream task plans from."""

from __future__ import annotations

from itertools import groupby

import pyarrow as pa
import pytest

from applier.apply.share import Share, Shares

SCHEMA = pa.schema(
    [("lsn", pa.int64()), ("round", pa.int32()), ("article", pa.string()), ("op", pa.string())]
)


def _batch(rows: list[tuple[int, int, str | None, str | None]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in rows], SCHEMA)


def _lsns(share: Share) -> list[int]:
    return share.values("lsn") if len(share) else []


def test_rounds_cut_across_batches_skip_empty_ones_and_leave_absent_rounds_empty() -> None:
    batches = [
        _batch([(1, 0, "a", "U"), (2, 0, "a", "U"), (3, 1, "a", "U")]),
        _batch([]),  # an empty batch between two of a round
        _batch([(4, 1, "a", "U"), (5, 1, "a", "U")]),
        _batch([(6, 3, "a", "U")]),  # round 2 has no rows of this stream
    ]
    shares = Shares(iter(batches))
    got = [_lsns(shares.take_round(r)) for r in range(5)]
    assert got == [[1, 2], [3, 4, 5], [], [6], []]


def test_a_round_whole_in_one_batch_and_a_batch_of_many_rounds() -> None:
    shares = Shares(iter([_batch([(i, i // 3, "a", "I") for i in range(10)])]))
    assert [_lsns(shares.take_round(r)) for r in range(4)] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]


def test_rows_of_an_earlier_round_after_a_later_one_are_refused_with_their_lsn() -> None:
    shares = Shares(iter([_batch([(1, 0, "a", "U"), (2, 1, "a", "U"), (7, 0, "a", "U")])]))
    assert _lsns(shares.take_round(0)) == [1]
    with pytest.raises(RuntimeError, match="out of round order at lsn 7"):
        shares.take_round(1)  # found where round 1 ends


def test_no_batches_give_empty_shares() -> None:
    assert len(Shares(iter([])).take_round(0)) == 0


@pytest.mark.parametrize(
    "pairs",
    [
        [("a", "U")] * 5,  # one run (the usual share)
        [("a", "U"), ("a", "U"), ("b", "U"), ("a", "U"), ("a", "D"), ("a", "D")],
        [("a", "I"), (None, "I"), (None, "I"), ("a", "I"), ("a", None), (None, None)],  # NULLs
        [("a", "U")],
    ],
)
def test_runs_are_the_groups_of_equal_article_and_operation_in_row_order(
    pairs: list[tuple[str, str]],
) -> None:
    rows = [(i, 0, a, o) for i, (a, o) in enumerate(pairs)]
    share = Share([_batch(rows[:2]), _batch(rows[2:])], SCHEMA)  # two chunks: cut across them too
    expected = []
    start = 0
    for key, run in groupby(pairs):
        n = len(list(run))
        expected.append((key, start, start + n))
        start += n
    assert share.runs("article", "op") == expected


def test_an_empty_share_has_no_runs() -> None:
    assert Share([], SCHEMA).runs("article", "op") == []
