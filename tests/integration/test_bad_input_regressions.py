"""The bad inputs that once went wrong, each refused before anything is applied: exit code 2,
one message naming the place, no traceback. Once they were tracebacks (1e400, an lsn beyond
bigint, a duplicate snapshot key, an empty file, a fake Parquet file, a folder for a file, a
file for --work-dir, invalid UTF-8 in a TOML file), partial applies (a negative lsn, lsns out
of transaction order, an unwritable --report), values changed in silence (NUL, invalid UTF-8,
real 1e39) or unclear messages (--streams abc, --workload bogus, a YAML tab, garbage --target)."""

from __future__ import annotations

import os

import pytest

from tests.support.badinput import FIFO, FOLDER, Case, Runner, insert, jsonl, toml_config

pytestmark = pytest.mark.integration

GOOD = 300  # good commands before the bad one: once applied, then the run crashed


def _changes(table: str, bad: dict | str | bytes | None = None, **over) -> bytes:
    recs: list = [insert(table, i) for i in range(1, GOOD + 1)]
    if isinstance(bad, dict) or bad is None:
        recs.append(insert(table, GOOD + 1, **(bad or {}), **over))
    else:
        recs.append(bad)
    return jsonl(recs)


def _run_case(key: str, files, argv, words, target: bool = True):
    def make(table: str) -> Case:
        return Case(
            key,
            {k: (v(table) if callable(v) else v) for k, v in files.items()},
            argv,
            words,
            target,
        )

    return make


CFG = {"c.toml": lambda t: toml_config(t).encode()}
CH = ["--config", "{dir}/c.toml", "--changes", "{dir}/ch.jsonl"]
LINE = f"ch.jsonl:{GOOD + 1}"


def _value(col: str, v):  # type: ignore[no-untyped-def]
    return lambda t: _changes(t, after={**insert(t, GOOD + 1)["after"], col: v})


CASES = [
    # change values
    (
        "decimal 1e400",
        {**CFG, "ch.jsonl": _value("d", "1e400")},
        CH,
        [LINE, "column 'd'", "does not fit precision 6"],
    ),
    ("real 1e39", {**CFG, "ch.jsonl": _value("r", 1e39)}, CH, [LINE, "column 'r'", "out of range for real"]),
    ("int beyond int", {**CFG, "ch.jsonl": _value("n", 2**31)}, CH, [LINE, "column 'n'", "out of range"]),
    ("smallint beyond", {**CFG, "ch.jsonl": _value("s", 40000)}, CH, [LINE, "column 's'", "out of range"]),
    (
        "string too long",
        {**CFG, "ch.jsonl": _value("v", "x" * 11)},
        CH,
        [LINE, "column 'v'", "longer than 10"],
    ),
    ("decimal beyond precision", {**CFG, "ch.jsonl": _value("d", "10000.00")}, CH, [LINE, "does not fit"]),
    (
        "NUL in a change",
        {**CFG, "ch.jsonl": _value("v", "a\x00b")},
        CH,
        [LINE, "column 'v'", "NUL character"],
    ),
    (
        "float beyond float8",
        {
            **CFG,
            "ch.jsonl": lambda t: _changes(
                t, jsonl([insert(t, GOOD + 1)]).decode().replace('"r": 1.5', '"r": 1e309').strip()
            ),
        },
        CH,
        [LINE, "column 'r'", "finite"],
    ),
    (
        "invalid UTF-8 in a change",
        {
            **CFG,
            "ch.jsonl": lambda t: _changes(
                t, jsonl([insert(t, GOOD + 1)]).replace(b'"v301"', b'"v\xff"').strip()
            ),
        },
        CH,
        [LINE, "not UTF-8"],
    ),
    # positions
    (
        "lsn beyond bigint",
        {**CFG, "ch.jsonl": lambda t: _changes(t, lsn=2**63)},
        CH,
        [LINE, "'lsn' must be 1..9223372036854775807"],
    ),
    ("negative lsn", {**CFG, "ch.jsonl": lambda t: _changes(t, lsn=-5)}, CH, [LINE, "'lsn' must be"]),
    (
        "lsn out of order",
        {**CFG, "ch.jsonl": lambda t: _changes(t, lsn=5)},
        CH,
        ["ch.jsonl:1", LINE, "transaction order"],
    ),
    (
        "duplicate lsn",
        {**CFG, "ch.jsonl": lambda t: _changes(t, lsn=(GOOD << 20) | 1)},
        CH,
        ["lsn=", "appears 2 times", LINE],
    ),
    # snapshots
    (
        "duplicate snapshot key",
        {
            **CFG,
            "ch.jsonl": lambda t: jsonl([insert(t, 1000)]),
            "sn.jsonl": lambda t: jsonl(
                [{"article": f"dbo.{t}", "image": {"id": i % 300}} for i in range(301)]
            ),
        },
        [*CH, "--snapshot", "{dir}/sn.jsonl"],
        ["sn.jsonl:1,", "sn.jsonl:301", "key [0] appears 2 times"],
    ),
    (
        "NUL in a snapshot",
        {
            **CFG,
            "ch.jsonl": lambda t: jsonl([insert(t, 1000)]),
            "sn.jsonl": lambda t: jsonl([{"article": f"dbo.{t}", "image": {"id": 1, "v": "\x00"}}]),
        },
        [*CH, "--snapshot", "{dir}/sn.jsonl"],
        ["sn.jsonl:1", "column 'v'", "NUL character"],
    ),
    # files
    ("empty change file", {**CFG, "ch.jsonl": b""}, CH, ["ch.jsonl: no change records"]),
    ("blank change file", {**CFG, "ch.jsonl": b"\n  \n\t\n"}, CH, ["ch.jsonl: no change records"]),
    (
        "fake parquet",
        {**CFG, "x.parquet": b"hello\n"},
        ["--config", "{dir}/c.toml", "--changes", "{dir}/x.parquet"],
        ["x.parquet: not a Parquet file"],
    ),
    ("folder for the change file", {**CFG, "ch.jsonl": FOLDER}, CH, ["ch.jsonl: a folder without"]),
    (
        "folder for the snapshot file",
        {**CFG, "ch.jsonl": lambda t: jsonl([insert(t, 1)]), "sn.jsonl": FOLDER},
        [*CH, "--snapshot", "{dir}/sn.jsonl"],
        ["sn.jsonl: a folder without"],
    ),
    ("FIFO for the change file", {**CFG, "ch.jsonl": FIFO}, CH, ["ch.jsonl: a FIFO"]),
    ("missing change file", CFG, CH, ["ch.jsonl: no such change file"]),
    # outputs: a good stream, refused before it is applied
    (
        "report is a folder",
        {**CFG, "ch.jsonl": lambda t: _changes(t), "out": FOLDER},
        [*CH, "--report", "{dir}/out"],
        ["--report {dir}/out: a folder"],
    ),
    (
        "report under a file",
        {**CFG, "ch.jsonl": lambda t: _changes(t), "f": b"x"},
        [*CH, "--report", "{dir}/f/r.json"],
        ["--report {dir}/f/r.json", "is not a folder"],
    ),
    (
        "work-dir is a file",
        {**CFG, "ch.jsonl": lambda t: _changes(t), "w": b"x"},
        [*CH, "--work-dir", "{dir}/w"],
        ["--work-dir {dir}/w: exists and is not a folder"],
    ),
    # configuration and options
    (
        "invalid UTF-8 TOML",
        {"c.toml": b'[run]\nsubscription = "\xff"\n'},
        ["--config", "{dir}/c.toml"],
        ["c.toml:2: not UTF-8"],
    ),
    (
        "YAML tab",
        {"c.yaml": b"run:\n\tstreams: 2\n"},
        ["--config", "{dir}/c.yaml"],
        ["c.yaml:2:1: not valid YAML"],
    ),
    ("config is a folder", {"c.toml": FOLDER}, ["--config", "{dir}/c.toml"], ["c.toml: a folder"]),
    (
        "--streams abc",
        CFG,
        ["--config", "{dir}/c.toml", "--streams", "abc"],
        ["--streams", "invalid int value: 'abc'"],
    ),
    (
        "--streams 65",
        CFG,
        ["--config", "{dir}/c.toml", "--streams", "65"],
        ["--streams: streams must be 1..64, got 65"],
    ),
    (
        "--workload bogus",
        CFG,
        ["--config", "{dir}/c.toml", "--workload", "bogus"],
        ["--workload", "invalid choice: 'bogus'"],
    ),
    (
        "garbage --target",
        CFG,
        ["--config", "{dir}/c.toml", "--target", "garbage"],
        ["--target: bad ODBC connection string"],
        False,
    ),
    (
        "--target without a driver",
        CFG,
        ["--config", "{dir}/c.toml", "--target", "Server=x;Uid=u;Pwd=secret"],
        ["--target", "driver"],
        False,
    ),
]


CASES = [(*c, True) if len(c) == 4 else c for c in CASES]


@pytest.mark.parametrize("key,files,argv,words,own_target", CASES, ids=[c[0] for c in CASES])
def test_known_bad_input_is_refused_before_anything_is_applied(
    spark, target, tmp_path, capsys, key, files, argv, words, own_target
):
    runner = Runner(target, capsys, tmp_path)
    message = runner.refused(_run_case(key, files, argv, words, own_target))
    assert "secret" not in message


@pytest.mark.skipif(os.geteuid() != 0, reason="as root only: chmod 000 stops no one, a folder does")
def test_unreadable_as_root_is_tested_with_a_folder_where_the_file_belongs(tmp_path):
    """Reading permissions cannot be tested as root (root reads a 000 file; as anyone else
    tests/unit/test_input_files.py::test_unreadable_file does): an input that cannot be read as a
    file is tested with a folder in its place, for every input the run reads."""
    f = tmp_path / "c.jsonl"
    f.write_text("{}\n")
    f.chmod(0)
    assert f.read_text() == "{}\n"  # the premise: as root, mode 000 makes nothing unreadable
    folders = {name for _, files, *_ in CASES for name, content in files.items() if content is FOLDER}
    assert {"c.toml", "ch.jsonl", "sn.jsonl"} <= folders  # the configuration, changes and snapshot


def test_generate_out_that_is_a_file_is_refused_before_spark(tmp_path, capsys):
    from applier.cli import main

    f = tmp_path / "out"
    f.write_text("x")
    assert main(["generate", "--out", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"--out {f}: exists and is not a folder" in err and "Traceback" not in err


@pytest.mark.parametrize("small", [True, False], ids=["on the driver", "distributed"])
def test_checks_across_rows_find_the_same_fault_on_the_driver_and_distributed(
    spark, tmp_path, monkeypatch, small
):
    """Small files are checked on the driver, large ones with a sort by lsn across partitions."""
    from applier.config import parse_config
    from applier.errors import InputError
    from applier.sources import files
    from applier.sources.dataset import read_changes
    from tests.support.badinput import COLUMNS

    if not small:
        monkeypatch.setattr(files, "SMALL", 0)
    cfg = parse_config({"articles": [{"name": "dbo.rows", "columns": COLUMNS}]}, "<test>")
    recs = [insert("rows", i) for i in range(1, 200)]
    ch = tmp_path / "ch.jsonl"
    for change, words in [
        ({150: {"lsn": 5}}, ["ch.jsonl:1: lsn 1048577", "ch.jsonl:150)", "transaction order"]),
        (
            {150: {"lsn": (149 << 20) | 1}},
            ["lsn=156237825 appears 2 times", "ch.jsonl:149, ", "ch.jsonl:150)"],
        ),
        ({150: {"xact_seqno": 149, "command_id": 1}}, ["xact_seqno=149, command_id=1 appears 2 times"]),
    ]:
        ch.write_bytes(jsonl([{**r, **change.get(i, {})} for i, r in enumerate(recs, 1)]))
        with pytest.raises(InputError) as e:
            read_changes(spark, cfg, ch)
        for w in words:
            assert w in str(e.value), str(e.value)
    ch.write_bytes(jsonl(recs))
    sn = tmp_path / "sn.jsonl"
    sn.write_bytes(jsonl([{"article": "dbo.rows", "image": {"id": i % 150}} for i in range(151)]))
    with pytest.raises(
        InputError, match=r"sn\.jsonl:1, .*sn\.jsonl:151: dbo\.rows key \[0\] appears 2 times"
    ):
        read_changes(spark, cfg, ch, sn)
    sn.write_bytes(jsonl([{"article": "dbo.rows", "image": {"id": i}} for i in range(150)]))
    cs = read_changes(spark, cfg, ch, sn)
    assert (cs.changes.count(), cs.snapshot.count()) == (199, 150)
    assert cs.changes.columns == list(cs.changes.columns) and "_place" not in cs.changes.columns
    cs.unpersist()
