"""Commit times read from each capture format (``--pace source``), and rounds cut on them."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from applier.apply.pace import Pace
from applier.articles import Article, Column, parse_type
from applier.errors import InputError
from applier.partition.strategies import Timed, time_rounds
from applier.sources.formats import Begin, Change, Options
from applier.sources.formats.debezium import DebeziumFormat
from applier.sources.formats.maxwell import MaxwellFormat
from applier.sources.formats.mssql_cdc import MssqlCdcFormat
from applier.sources.formats.wal2json import Wal2json, Wal2json2

UTC = dt.timezone.utc
TBL = Article(
    "public",
    "tbl",
    (Column("id", parse_type("int"), nullable=False), Column("v", parse_type("int"))),
    ("id",),
)
ARTS = {TBL.name: TBL}


def _epoch(*a: int) -> float:
    return dt.datetime(*a, tzinfo=UTC).timestamp()


def _changes(items) -> list[Change]:  # type: ignore[no-untyped-def]
    return [i for i in items if isinstance(i, Change)]


def test_wal2json_v1_timestamp_is_every_change_s_commit_time() -> None:
    doc = {
        "xid": 7,
        "timestamp": "2026-11-28 09:00:01.25+01",
        "change": [
            {
                "kind": "insert",
                "schema": "public",
                "table": "tbl",
                "columnnames": ["id", "v"],
                "columnvalues": [i, 0],
            }
            for i in (1, 2)
        ],
    }
    got = _changes(Wal2json(ARTS).parse(json.dumps(doc), "f:1"))
    assert [c.committed for c in got] == [_epoch(2026, 11, 28, 8, 0, 1) + 0.25] * 2
    assert [
        c.committed for c in _changes(Wal2json(ARTS).parse(json.dumps({**doc, "timestamp": None}), "f:1"))
    ] == [None, None]
    with pytest.raises(InputError, match=r"f:1: timestamp: .*unreadable"):
        list(Wal2json(ARTS).parse(json.dumps({**doc, "timestamp": "yesterday"}), "f:1"))


def test_wal2json_v2_begin_carries_the_commit_time() -> None:
    (b,) = Wal2json2(ARTS).parse('{"action":"B","timestamp":"2026-11-28 09:00:00+00"}', "f:1")
    assert isinstance(b, Begin) and b.at == _epoch(2026, 11, 28, 9, 0, 0)
    (b,) = Wal2json2(ARTS).parse('{"action":"B"}', "f:1")
    assert isinstance(b, Begin) and b.at is None


def _dbz(source: dict[str, object]) -> str:
    src = {"connector": "postgresql", "schema": "public", "table": "tbl", "txId": 9, "lsn": 100, **source}
    return json.dumps({"op": "c", "after": {"id": 1, "v": 2}, "source": src, "ts_ms": 1})


def test_debezium_source_ts_is_the_commit_time() -> None:
    f = DebeziumFormat(ARTS, Options())
    (c,) = _changes(f.parse(_dbz({"ts_ms": 1764320400250}), "d:1"))
    assert c.committed == 1764320400.25  # source.ts_ms, not the connector's own ts_ms
    (c,) = _changes(f.parse(_dbz({"ts_ms": 1764320400250, "ts_us": 1764320400250123}), "d:1"))
    assert c.committed == pytest.approx(1764320400.250123)
    (c,) = _changes(f.parse(_dbz({}), "d:1"))
    assert c.committed is None
    with pytest.raises(InputError, match=r"d:1: source.ts_ms: expected an integer"):
        list(f.parse(_dbz({"ts_ms": "noon"}), "d:1"))


def test_maxwell_ts_is_the_commit_time() -> None:
    line = {
        "database": "public",
        "table": "tbl",
        "type": "insert",
        "ts": 1764320400,
        "xid": 5,
        "commit": True,
        "data": {"id": 1, "v": 2},
    }
    (c,) = _changes(MaxwellFormat(ARTS, Options()).parse(json.dumps(line), "m:1"))
    assert c.committed == 1764320400.0


def test_a_cdc_export_s_tran_end_time_is_the_commit_time(tmp_path: Path) -> None:
    dbo = Article("dbo", "tbl", TBL.columns, ("id",))
    f = MssqlCdcFormat({dbo.name: dbo}, Options())
    lsn, seq = "0x0000002A000001F40003", "0x0000002A000001F00002"
    p = tmp_path / "dbo_tbl_CT.csv"
    p.write_text(
        "__$start_lsn,__$seqval,__$operation,__$update_mask,id,v,tran_end_time\n"
        f"{lsn},{seq},3,0x02,1,1,2026-11-28 09:00:00.500\n"
        f"{lsn},{seq},4,0x02,1,2,2026-11-28 09:00:00.500\n"
    )
    found = list(f.file_items(p))
    assert [e for e, _ in found] == [None, None]
    (u,) = f.combine(sorted((c for _, c in found if c is not None), key=lambda c: c.pos))
    assert u.op == "U" and u.committed == _epoch(2026, 11, 28, 9, 0, 0) + 0.5
    p.write_text(p.read_text().replace("2026-11-28 09:00:00.500", "soon", 1))
    errors = [e for e, _ in f.file_items(p) if e]
    assert errors and "tran_end_time" in errors[0] and "dbo_tbl_CT.csv:2" in errors[0]


def test_rounds_cut_on_the_clock_never_span_more_than_the_interval() -> None:
    dues = [0.0, 0.02, 0.04, 0.09, 0.1, 0.11, 1.5, 1.5, 1.5, 3.0]
    assert time_rounds(dues, 0.1, 50) == [0, 4, 6, 9]
    assert time_rounds(dues, 0.1, 2) == [0, 2, 4, 6, 8, 9]  # CommitBatchSize caps a round
    assert time_rounds([], 0.1, 5) == []
    pace = Pace(4, due=tuple(dues), firsts=(0, 4, 6, 9))
    assert [pace.round_due(r) for r in range(4)] == [0.09, 0.11, 1.5, 3.0]


def test_due_times_are_the_capture_s_offsets_over_the_speed() -> None:
    t = Timed((100.0, 100.5, 102.0), speed=2.0)
    assert t.dues([1, 2, 3]) == [0.0, 0.25, 1.0]
    assert t.dues([2, 3]) == [0.25, 1.0]  # a filtered subscription keeps the capture's clock


def test_a_resumed_paced_run_starts_its_clock_at_the_first_round_left() -> None:
    import json as _json
    import time

    from applier.apply.pace import agree_start

    pace = Pace(10, rate=100.0)  # round r's last transaction is due at (10 r + 9) / 100 s

    def gather_of(*done: int):  # type: ignore[no-untyped-def]
        return lambda mine: [_json.dumps([_json.loads(mine)[0], d]) for d in done]

    now = time.time()
    fresh = agree_start(gather_of(-1, -1), 0.05, pace, -1)
    assert now + 0.05 <= fresh <= time.time() + 0.05
    # streams 0 and 1 committed rounds 0..4 and 0..6: round 5 is the first left
    resumed = agree_start(gather_of(4, 6), 0.05, pace, 4)
    assert resumed == pytest.approx(fresh - pace.round_due(4), abs=0.05)
    assert resumed + pace.round_due(5) - time.time() < 0.2  # round 5 is due about now, not in 0.5 s


def test_the_html_says_a_replay_at_the_capture_s_pace() -> None:
    from applier.report.charts.lag import load_section

    load = {
        "rate": None,
        "pace": "source",
        "speed": 2.0,
        "source_seconds": 1.6,
        "source_rate": 30.0,
        "round_size": 6,
        "throughput": 29.5,
        "window_seconds": 1.62,
        "schedule": {
            "rounds": 12,
            "start_after_due": {"min": 0.0001, "p50": 0.0003, "p99": 0.007, "max": 0.007},
        },
        "lag": {"transactions": 48, "percentiles": {"p50": 0.05, "max": 0.14}, "per_round": [], "curve": []},
    }
    page = str(load_section(load))
    assert "replayed at the capture&#39;s commit times (x2: 1.6 s, 30.0 tps)" in page or (
        "replayed at the capture's commit times (x2: 1.6 s, 30.0 tps)" in page
    ), page[:400]
    assert "rounds of up to 6 transactions" in page
    assert "0.000 s (p50) and 0.007 s (max) after due" in page
    rated_load = {
        k: v
        for k, v in load.items()
        if k not in ("pace", "speed", "source_seconds", "source_rate", "schedule")
    }
    rated = str(load_section({**rated_load, "rate": 150.0}))  # a --rate run's figures have no pace keys
    assert "paced at 150.0 tps" in rated and "up to" not in rated and "after due" not in rated
