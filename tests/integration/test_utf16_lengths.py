"""nchar/nvarchar lengths as SQL Server counts them (UTF-16 code units) for a T-SQL subscriber,
as PostgreSQL counts them (characters) for a PostgreSQL one, checked before a run applies
anything, naming the lsn (the snapshot's key) and the column."""

from __future__ import annotations

from pathlib import Path

import pytest

from applier.config import parse_config
from applier.dialects import DIALECTS
from applier.errors import InputError
from applier.records.events import Schemas
from applier.sources.dataset import read_changes
from applier.sources.lengths import check_utf16_lengths
from tests.support.badinput import jsonl

pytestmark = pytest.mark.integration

EMOJI = "\U0001f600"  # beyond U+FFFF: 2 UTF-16 code units
COLUMNS = [{"name": "id", "type": "int", "key": True}, {"name": "v", "type": "nvarchar(4)"}]


def _insert(i: int, v: str) -> dict:
    return {
        "lsn": (i << 20) | 1,
        "xact_seqno": i,
        "command_id": 1,
        "article": "dbo.u16",
        "op": "I",
        "after": {"id": i, "v": v},
    }


def _read(spark, tmp_path: Path, changes: list[dict], snapshot: list[dict] | None = None):  # type: ignore[no-untyped-def]
    cfg = parse_config({"articles": [{"name": "dbo.u16", "columns": COLUMNS}]}, "<test>")
    ch = tmp_path / "ch.jsonl"
    ch.write_bytes(jsonl(changes))
    sn = None
    if snapshot is not None:
        sn = tmp_path / "sn.jsonl"
        sn.write_bytes(jsonl(snapshot))
    return cfg, read_changes(spark, cfg, ch, sn)


def _check(cfg, cs, dialect: str) -> None:  # type: ignore[no-untyped-def]
    schemas = Schemas.build({a.name: a for a in cfg.articles}, [])
    check_utf16_lengths(cs.changes, cs.snapshot, cs.origin, schemas, DIALECTS[dialect].UTF16_LENGTHS)


def test_exactly_n_units_fits_and_one_more_is_refused_for_tsql_only(spark, tmp_path: Path) -> None:
    good = [_insert(i, v) for i, v in enumerate(["abcd", EMOJI * 2, "a" + EMOJI + "b", "xy"], 1)]
    cfg, cs = _read(spark, tmp_path, good)
    for dialect in ("tsql", "babelfish", "postgres"):  # 4 units at most: fits everywhere
        _check(cfg, cs, dialect)
    cs.unpersist()
    # lsn 3 << 20 | 1: 3 characters (fit nvarchar(4) in characters), 5 units (do not fit in units)
    bad = [*good[:2], _insert(3, EMOJI * 2 + "a"), good[3]]
    cfg, cs = _read(spark, tmp_path, bad)
    try:
        _check(cfg, cs, "postgres")  # PostgreSQL's varchar(4) counts characters: 3 fit
        for dialect in ("tsql", "babelfish"):  # Babelfish too (measured: 'value too long ... as UTF16')
            with pytest.raises(InputError) as e:
                _check(cfg, cs, dialect)
            (line,) = [s for s in str(e.value).splitlines() if "lsn" in s]
            assert (
                f"ch.jsonl: lsn {(3 << 20) | 1}: after: column 'v' (nvarchar(4)): 5 UTF-16 code units" in line
            )
            assert "longer than 4" in line
    finally:
        cs.unpersist()


def test_snapshot_values_are_counted_too(spark, tmp_path: Path) -> None:
    snap = [
        {"article": "dbo.u16", "image": {"id": 7, "v": EMOJI * 3}},
        {"article": "dbo.u16", "image": {"id": 8, "v": EMOJI * 2}},
    ]
    cfg, cs = _read(spark, tmp_path, [_insert(1, "a")], snap)
    try:
        _check(cfg, cs, "postgres")
        with pytest.raises(
            InputError, match=r"snapshot: dbo\.u16 key \[7\]: column 'v' \(nvarchar\(4\)\): 6 UTF-16"
        ):
            _check(cfg, cs, "tsql")
    finally:
        cs.unpersist()


def test_a_run_with_a_tsql_subscriber_refuses_before_it_connects(spark, tmp_path: Path) -> None:
    """The pipeline asks its subscribers' dialects: a T-SQL endpoint that no server answers is
    never reached, the stream is refused first (nothing installed, nothing applied)."""
    from applier.pipeline.run import run
    from applier.targets.endpoint import Endpoint

    cfg = parse_config({"articles": [{"name": "dbo.u16", "columns": COLUMNS}]}, "<test>")
    ch = tmp_path / "ch.jsonl"
    ch.write_bytes(jsonl([_insert(1, "ab"), _insert(2, EMOJI * 2 + "a")]))
    nowhere = Endpoint("Driver={FreeTDS};Server=127.0.0.1;Port=1;UID=sa;PWD=secret", "tsql", "nowhere")
    with pytest.raises(
        InputError, match=r"lsn 2097153: after: column 'v' \(nvarchar\(4\)\): 5 UTF-16 code units"
    ):
        run(spark, cfg, {cfg.run.subscription: nowhere}, changes=ch)
