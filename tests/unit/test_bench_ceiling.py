"""The ceiling's calls: the same calls as applier plans, cut into the same rounds and chunks."""

from __future__ import annotations

from applier.bench.ceiling import chunks_per_stream, plan_stream
from applier.bench.stream import BenchStream, changes, snapshot, transactions


def test_stream_is_in_commit_order_and_only_updates():
    cfg = BenchStream.of(commands=2_000, rows=200, transaction_size=50).config()
    cs = list(changes(cfg))
    assert len(cs) == 2_000
    assert [c[0] for c in cs] == sorted(c[0] for c in cs)
    assert {c[4] for c in cs} == {"U"} and all(c[9] == c[10] for c in cs)  # non-key updates
    assert [len(x) for x in transactions(cfg)] == [50] * 40
    assert len(list(snapshot(cfg))) == 200


def test_chunks_keep_every_call_once_per_round_within_the_parameter_limit():
    cfg = BenchStream.of(commands=3_000, rows=300, transaction_size=30, commit_batch_size=20).config()
    planned = plan_stream(cfg, "postgres", changes(cfg))
    assert len(planned) == 3_000
    assert max(p.round for p in planned) == 4  # 100 transactions, 20 per round
    per_params = len(planned[0].call.params)
    limit = per_params * 37  # 37 calls per round trip
    for n in (1, 3):
        per_stream = chunks_per_stream(planned, n, limit)
        assert len(per_stream) == n and all(len(rounds) == 5 for rounds in per_stream)
        sent = [
            (sql.count("CALL "), len(params))
            for rounds in per_stream
            for rnd in rounds
            for sql, params in rnd
        ]
        assert sum(k for k, _ in sent) == 3_000
        assert all(p <= limit and p == k * per_params for k, p in sent)
    # the same values, in the same order, as planned (one stream keeps commit order)
    flat = [v for rnd in chunks_per_stream(planned, 1, limit)[0] for _, params in rnd for v in params]
    assert flat == [v for p in planned for v in p.call.params]
