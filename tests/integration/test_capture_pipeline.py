"""The capture pipeline (applier.sources.formats.convert) through canonical files with
sub-positions, and ``applier streams --explain`` (applier.explain).

A Debezium key change is a delete and a create at one source position; in a canonical file
they share an ``lsn`` and take ``seq`` 0 and 1 (README: "Canonical change files").
"""

from __future__ import annotations

import json

import pytest

import applier
from applier.errors import InputError
from applier.explain import stream_map
from tests.support.changes import write_jsonl
from tests.support.runs import config
from tests.support.subscriber import rows, table_ref

ART = "dbo.cap_seq"


def _cmd(lsn: int, seq: int | None, xact: int, cmd: int, op: str, **images: object) -> dict[str, object]:
    rec: dict[str, object] = {"lsn": lsn, "xact_seqno": xact, "command_id": cmd, "article": ART, "op": op}
    if seq is not None:
        rec["seq"] = seq
    rec.update(images)
    return rec


# Transaction 1 inserts keys 1 and 2; transaction 2 moves key 1 to 3 as Debezium delivers a key
# change (delete + create at one position, lsn 20 seq 0 and 1), then updates 3 (lsn 30).
KEY_CHANGE = [
    _cmd(10, 0, 1, 1, "I", after={"id": 1, "v": "a", "n": 1}),
    _cmd(10, 1, 1, 2, "I", after={"id": 2, "v": "b", "n": 2}),
    _cmd(20, 0, 2, 1, "D", before={"id": 1}),
    _cmd(20, 1, 2, 2, "I", after={"id": 3, "v": "a", "n": 1}),
    _cmd(30, None, 2, 3, "U", before={"id": 3, "v": "a", "n": 1}, after={"id": 3, "v": "a2", "n": 5}),
]


def test_sub_positions_convert_numbered_with_their_source(spark, tmp_path):
    cfg = config("cap_seq", streams=4)
    changes = write_jsonl(tmp_path / "seq.jsonl", KEY_CHANGE)
    done = applier.convert(cfg, changes, tmp_path / "out", spark=spark)
    assert (done.transactions, done.commands, done.duplicates) == (2, 5, 0)
    lines = [json.loads(x) for f in sorted(done.changes.glob("*.jsonl")) for x in f.read_text().splitlines()]
    assert [(r["lsn"], r["xact_seqno"], r["command_id"]) for r in lines] == [
        (1, 1, 1),
        (2, 1, 2),
        (3, 2, 1),
        (4, 2, 2),
        (5, 2, 3),
    ]
    assert [r["source"] for r in lines] == [
        "lsn 10 seq 0",
        "lsn 10 seq 1",
        "lsn 20 seq 0",
        "lsn 20 seq 1",
        "lsn 30 seq 0",
    ]
    # the converted file is a canonical file: read again as it is, the same commands
    again = applier.convert(cfg, done.changes, tmp_path / "again", spark=spark)
    assert (again.transactions, again.commands) == (2, 5)


def test_sub_positions_apply_at_four_streams_and_converge(spark, target, tmp_path):
    cfg = config("cap_seq", streams=4)
    changes = write_jsonl(tmp_path / "seq.jsonl", KEY_CHANGE)
    result = applier.run(cfg, target, spark=spark, changes=changes)
    assert result.verdict is applier.Verdict.CONVERGED
    got = rows(target, f"SELECT id, v, n FROM {table_ref(target, 'cap_seq')} ORDER BY id")
    assert got == [(2, "b", 2), (3, "a2", 5)]
    assert result.settings["input"]["changes"] == 5


@pytest.mark.parametrize(
    "bad, message",
    [
        pytest.param(  # one sub-position twice
            [KEY_CHANGE[0], {**KEY_CHANGE[1], "seq": 0}],
            r"lsn 10 seq 0 appears 2 times \(.*seq\.jsonl:1\)",
            marks=pytest.mark.e2e,
        ),
        pytest.param(  # (lsn, seq) order against command_id order
            [KEY_CHANGE[0], {**KEY_CHANGE[1], "command_id": 0}],
            r"seq\.jsonl:2: lsn 10 seq 1 \(command_id 0\) comes after lsn 10 seq 0 \(command_id 1, .*seq\.jsonl:1\)",
            marks=pytest.mark.e2e,
        ),
        pytest.param(  # events take a position of their own
            [KEY_CHANGE[0], {"lsn": 11, "xact_seqno": 1, "command_id": 3, "article": ART, "op": "DDL"}],
            r"seq\.jsonl:2: lsn 11: op must be I, U or D in a file with sub-positions",
            marks=pytest.mark.e2e,
        ),
        (  # a value that does not fit, named with its place and source position
            [KEY_CHANGE[0], {**KEY_CHANGE[1], "after": {"id": 2, "v": "b", "n": "two"}}],
            r"seq\.jsonl:2: lsn 10 seq 1: after: column 'n' \(int\): expected an integer",
        ),
    ],
    ids=["duplicate-position", "order", "event", "bad-value"],
)
def test_bad_sub_positions_are_refused_naming_the_line(spark, tmp_path, bad, message):
    cfg = config("cap_seq", streams=4)
    changes = write_jsonl(tmp_path / "seq.jsonl", bad)
    with pytest.raises(InputError, match=message) as e:
        applier.convert(cfg, changes, tmp_path / "out", spark=spark)
    assert "nothing applied" in str(e.value)
    assert not (tmp_path / "out" / "changes").exists()


def test_streams_explain_shows_where_a_key_update_crosses_streams(spark, tmp_path):
    """A key chain 1 -> 2 -> 3: key-hash routes each update by its before key, so key 2's two
    commands sit on two streams in one round (the hazard); on one stream nothing crosses."""
    recs = [
        {
            "lsn": 1,
            "xact_seqno": 1,
            "command_id": 1,
            "article": "dbo.cap_explain",
            "op": "I",
            "after": {"id": 1, "v": "x", "n": 0},
        },
    ]
    for i, (old, new) in enumerate([(1, 2), (2, 3), (3, 4), (4, 5), (5, 6)], start=2):
        recs.append(
            {
                "lsn": i,
                "xact_seqno": i,
                "command_id": 1,
                "article": "dbo.cap_explain",
                "op": "U",
                "before": {"id": old, "v": "x", "n": 0},
                "after": {"id": new, "v": "x", "n": 0},
            }
        )
    changes = write_jsonl(tmp_path / "chain.jsonl", recs)
    cfg = config("cap_explain", streams=4)
    sm = stream_map(spark, cfg, changes)
    keys = {json.loads(r["key"])[0]: r for r in sm.keys.collect()}
    assert sorted(keys) == [1, 2, 3, 4, 5, 6]
    assert [c["lsn"] for c in keys[2]["commands"]] == [2, 3]  # created by lsn 2, moved on by lsn 3
    crossing = {k for k, r in keys.items() if r["crossing"]}
    # a key is crossed exactly when its creating update and its next one hash to two streams
    expected = {
        new
        for (old, new) in [(1, 2), (2, 3), (3, 4), (4, 5)]
        if keys[new]["commands"][0]["stream"] != keys[new]["commands"][1]["stream"]
    }
    assert crossing == expected and crossing  # with 4 streams some key of the chain moves
    one = stream_map(spark, config("cap_explain", streams=1), changes)
    assert one.crossing().count() == 0


def test_canonical_files_with_and_without_sub_positions_take_one_reader(spark, tmp_path):
    """issue 33: canonical is a format like the others, and a file with sub-positions goes
    through the same entry (``FORMATS["canonical"].read``), numbered again inside it."""
    from applier.records.schema import CHANGE_FIELDS
    from applier.sources.formats import FORMATS, Options

    articles = {a.name: a for a in config("cap_seq", streams=4).articles}
    plain = [{**{k: v for k, v in r.items() if k != "seq"}, "lsn": i} for i, r in enumerate(KEY_CHANGE, 1)]
    want = [(1, 1, 1, "I"), (2, 1, 2, "I"), (3, 2, 1, "D"), (4, 2, 2, "I"), (5, 2, 3, "U")]
    for name, records in (("seq", KEY_CHANGE), ("plain", plain)):
        got = FORMATS["canonical"].read(
            spark, articles, write_jsonl(tmp_path / f"{name}.jsonl", records), Options()
        )
        try:
            rows = sorted(got.rows.select(*CHANGE_FIELDS).collect())
            assert [(r.lsn, r.xact_seqno, r.command_id, r.op) for r in rows] == want, name
            if name == "seq":  # numbered again, each command with its position in the file
                assert got.captured and got.at_hand is None and (got.transactions, got.changes) == (2, 5)
                assert sorted(r["_source"] for r in got.rows.collect())[2:4] == [
                    "lsn 20 seq 0",
                    "lsn 20 seq 1",
                ]
            else:  # a small file: validated on the driver, its rows at hand
                assert not got.captured and got.at_hand is not None
                assert [r.lsn for r in got.at_hand] == [1, 2, 3, 4, 5] and got.at_hand[2].key_before == "[1]"
        finally:
            got.unpersist()


def test_a_parquet_canonical_file_with_sub_positions_is_numbered_again(spark, tmp_path):
    """A Parquet canonical file holding ``seq`` goes through the capture pipeline as a JSON Lines
    one does (its rows as Spark reads them, not its bytes as text lines)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from applier.sources.dataset import read_changes

    def table(records: list[dict[str, object]]) -> pa.Table:
        def text(v: object) -> str | None:
            return None if v is None else json.dumps(v)

        return pa.table(
            {
                **{f: [r[f] for r in records] for f in ("lsn", "xact_seqno", "command_id", "article", "op")},
                "seq": [r.get("seq") for r in records],
                "before": [text(r.get("before")) for r in records],
                "after": [text(r.get("after")) for r in records],
            }
        )

    cfg = config("cap_seq", streams=4)
    pq.write_table(table(KEY_CHANGE), tmp_path / "seq.parquet")
    cs = read_changes(spark, cfg, tmp_path / "seq.parquet")
    try:
        assert cs.sources is not None and cs.notes["changes"] == 5
        got = sorted((r["lsn"], r["command_id"], r["op"], r["_source"]) for r in cs.sources.collect())
        assert got == [
            (1, 1, "I", "lsn 10 seq 0"),
            (2, 2, "I", "lsn 10 seq 1"),
            (3, 1, "D", "lsn 20 seq 0"),
            (4, 2, "I", "lsn 20 seq 1"),
            (5, 3, "U", "lsn 30 seq 0"),
        ]
    finally:
        cs.unpersist()
    bad = table([KEY_CHANGE[0], {**KEY_CHANGE[1], "after": {"id": 2, "v": "b", "n": "two"}}])
    pq.write_table(bad, tmp_path / "bad.parquet")
    with pytest.raises(InputError, match=r"bad\.parquet: lsn 10 seq 1: after: column 'n' \(int\)"):
        read_changes(spark, cfg, tmp_path / "bad.parquet")
