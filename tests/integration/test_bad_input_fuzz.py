"""Fuzz: hypothesis draws bad input of every kind, each case driven through the CLI in-process
(``applier.cli.main``, the session's Spark and PostgreSQL) and each refused before anything
is applied: exit code 2, no traceback, a message naming the place (file and line, or the
option or key), and no table of the case's article in the subscriber.

Kinds: malformed change lines (broken JSON, missing fields, wrong types, unknown article or
op, a key missing from an image, values that do not fit their column, NUL, lone surrogates,
invalid UTF-8, lsn out of range), positions across lines (lsn out of transaction order,
duplicated), bad snapshots, bad configuration files (syntax, unknown keys, wrong types, out of
range values, invalid UTF-8), bad option values, bad files (empty, blank, fake Parquet, a
folder or a FIFO where a file belongs, missing), bad output paths and bad connection strings.
Derandomized: CI draws the same cases every time.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.support.badinput import COLUMNS, FIFO, FOLDER, Case, Runner, insert, jsonl, row, toml_config

pytestmark = pytest.mark.integration

EXAMPLES = 260  # drawn; at least MIN_CASES distinct ones must run
MIN_CASES = 200
CH = ["--config", "{dir}/c.toml", "--changes", "{dir}/ch.jsonl"]
_TEXT = st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r")  # one line of UTF-8


def _cfg(table: str) -> bytes:
    return toml_config(table).encode()


# -- values that do not fit their column ----------------------------------------------------
BAD_VALUES = {
    "id": st.one_of(st.text(max_size=5), st.floats(allow_nan=False), st.integers(min_value=2**31)),
    "n": st.one_of(
        st.integers(min_value=2**31), st.integers(max_value=-(2**31) - 1), st.booleans(), st.text(max_size=5)
    ),
    "s": st.one_of(st.integers(min_value=32768), st.integers(max_value=-32769)),
    "v": st.one_of(
        st.text(_TEXT, min_size=11, max_size=30), st.integers(), st.lists(st.integers(), max_size=2)
    ),
    "d": st.one_of(
        st.integers(min_value=10**4, max_value=10**40).map(str),
        st.sampled_from(["1e400", "-1e10", "abc", "", "NaN", "Infinity", "1e999999999"]),
        st.booleans(),
    ),
    "r": st.one_of(
        st.floats(min_value=3.41e38, max_value=1e308),
        st.floats(min_value=-1e308, max_value=-3.41e38),
        st.text(max_size=4),
    ),
}
bad_value = st.sampled_from(sorted(BAD_VALUES)).flatmap(lambda c: st.tuples(st.just(c), BAD_VALUES[c]))


# -- malformed change lines: (kind, parameters) -> (line content, words after the place) ------
def _line(kind: str, p: Any, table: str, i: int) -> tuple[Any, list[str]]:
    rec = insert(table, i)
    if kind == "broken_json":
        text = json.dumps(rec)
        return text[: max(1, min(p, len(text) - 1))], ["malformed JSON"]
    if kind == "garbage":
        return p, []
    if kind == "missing_field":
        del rec[p]
        return rec, ["op must be" if p == "op" else repr(p)]
    if kind == "wrong_type":
        field, value = p
        return {**rec, field: value}, [repr(field)]
    if kind == "position_range":
        field, value = p
        return {**rec, field: value}, [f"{field!r} must be"]
    if kind == "unknown_article":
        return {**rec, "article": p}, ["article"]
    if kind == "unknown_op":
        return {**rec, "op": p}, ["op must be"]
    if kind == "key_missing":
        image = {k: v for k, v in row(i).items() if k != "id"}
        side = {"I": "after", "U": "before", "D": "before"}[p]
        return {**rec, "op": p, "before": row(i), "after": row(i), side: image}, [
            "key column 'id' is missing"
        ]
    if kind == "bad_value":
        col, value = p
        return {**rec, "after": {**row(i), col: value}}, [f"column {col!r}"]
    if kind == "nul":
        at, text = p
        return {**rec, "after": {**row(i), "v": text[:at] + "\x00" + text[at:]}}, ["NUL character"]
    if kind == "surrogate":
        return {**rec, "after": {**row(i), "v": "a" + p}}, ["lone surrogate"]
    if kind == "invalid_utf8":
        return json.dumps(rec).encode().replace(f'"v{i}"'.encode(), b'"v' + p + b'"'), ["not UTF-8"]
    if kind == "unknown_column":
        return {**rec, "after": {**row(i), p: 1}}, ["is not a column"]
    if kind == "image_not_object":
        return {**rec, "after": p}, ["expected an object"]
    raise AssertionError(kind)


_NOT_INT = st.one_of(
    st.text(max_size=4), st.floats(allow_nan=False), st.booleans(), st.lists(st.integers(), max_size=1)
)
_POSITIONS = ["lsn", "xact_seqno", "command_id", "schema_version"]
LINE_KINDS = {
    "broken_json": st.integers(1, 200),
    "garbage": st.text(_TEXT, min_size=1, max_size=30).filter(lambda s: s.strip() != ""),
    "missing_field": st.sampled_from(["lsn", "xact_seqno", "command_id", "article", "op"]),
    "wrong_type": st.tuples(st.sampled_from(_POSITIONS), _NOT_INT),
    "position_range": st.one_of(
        st.tuples(
            st.sampled_from(["lsn", "xact_seqno"]),
            st.one_of(st.integers(max_value=0), st.integers(min_value=2**63)),
        ),
        st.tuples(st.just("command_id"), st.one_of(st.integers(max_value=-1), st.integers(min_value=2**31))),
    ),
    "unknown_article": st.one_of(st.text(_TEXT, min_size=1, max_size=20), st.integers()),
    "unknown_op": st.one_of(
        st.text(_TEXT, max_size=4).filter(lambda s: s not in ("I", "U", "D", "DDL", "SQL", "PROC")),
        st.integers(),
    ),
    "key_missing": st.sampled_from(["I", "U", "D"]),
    "bad_value": bad_value,
    "nul": st.tuples(
        st.integers(0, 3), st.text(st.characters(min_codepoint=65, max_codepoint=90), max_size=3)
    ),
    "surrogate": st.sampled_from(["\ud800", "\udfff", "\udc80"]),
    "invalid_utf8": st.sampled_from(
        [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf8\x88\x80\x80\x80", b"\x80"]
    ),
    "unknown_column": st.text(_TEXT, min_size=1, max_size=8).filter(
        lambda s: s not in {c["name"] for c in COLUMNS}
    ),
    "image_not_object": st.one_of(st.integers(), st.text(max_size=3), st.lists(st.integers(), max_size=2)),
}


@st.composite
def line_faults(draw: Any) -> tuple[str, Any]:
    kind = draw(st.sampled_from(sorted(LINE_KINDS)))
    p = draw(LINE_KINDS[kind])
    good = draw(st.integers(1, 4))
    at = draw(st.integers(0, good))  # index of the bad line among good + 1

    def make(table: str) -> Case:
        recs: list[Any] = [insert(table, i) for i in range(1, good + 1)]
        bad, words = _line(kind, p, table, good + 1)
        recs.insert(at, bad)
        return Case(
            f"line {kind} {p!r} {good} {at}",
            {"c.toml": _cfg(table), "ch.jsonl": jsonl(recs)},
            CH,
            [f"{{dir}}/ch.jsonl:{at + 1}", *words],
        )

    return f"line {kind} {p!r} {good} {at}", make


@st.composite
def position_faults(draw: Any) -> tuple[str, Any]:
    kind = draw(st.sampled_from(["swap_lsn", "dup_lsn", "dup_xact"]))
    n = draw(st.integers(2, 6))
    i = draw(st.integers(1, n - 1))
    j = draw(st.integers(i + 1, n))

    def make(table: str) -> Case:
        recs = [insert(table, k) for k in range(1, n + 1)]
        a, b = recs[i - 1], recs[j - 1]
        if kind == "swap_lsn":
            a["lsn"], b["lsn"] = b["lsn"], a["lsn"]
            words = ["transaction order"]
        elif kind == "dup_lsn":
            b["lsn"] = a["lsn"]
            words = ["appears 2 times"]
        else:
            b["xact_seqno"] = a["xact_seqno"]
            words = ["xact_seqno"]
        files = {"c.toml": _cfg(table), "ch.jsonl": jsonl(recs)}
        return Case(f"positions {kind} {n} {i} {j}", files, CH, ["{dir}/ch.jsonl:", *words])

    return f"positions {kind} {n} {i} {j}", make


SNAPSHOT_KINDS = {
    "dup_key": st.integers(0, 3),
    "wrong_article": st.text(_TEXT, min_size=1, max_size=12),
    "bad_value": bad_value,
    "not_object": st.one_of(st.integers(), st.none(), st.text(max_size=3)),
    "malformed": st.integers(1, 20),
    "nul": st.integers(0, 3),
    "invalid_utf8": st.sampled_from([b"\xff", b"\xc3(", b"\xed\xb0\x80"]),
}


@st.composite
def snapshot_faults(draw: Any) -> tuple[str, Any]:
    kind = draw(st.sampled_from(sorted(SNAPSHOT_KINDS)))
    p = draw(SNAPSHOT_KINDS[kind])
    good = draw(st.integers(1, 4))

    def make(table: str) -> Case:
        art = f"dbo.{table}"
        lines: list[Any] = [{"article": art, "image": row(k)} for k in range(1, good + 1)]
        words = ["{dir}/sn.jsonl:" + str(good + 1)]
        if kind == "dup_key":
            lines.append({"article": art, "image": row(min(p, good - 1) + 1)})
            words = ["{dir}/sn.jsonl:", "appears 2 times"]
        elif kind == "wrong_article":
            lines.append({"article": p, "image": row(100)})
            words.append("unknown article")
        elif kind == "bad_value":
            lines.append({"article": art, "image": {**row(100), p[0]: p[1]}})
            words.append(f"column {p[0]!r}")
        elif kind == "not_object":
            lines.append({"article": art, "image": p})
        elif kind == "malformed":
            lines.append(json.dumps({"article": art, "image": row(100)})[:p])
            words.append("malformed JSON")
        elif kind == "nul":
            lines.append({"article": art, "image": {**row(100), "v": "ab"[:p] + "\x00"}})
            words.append("NUL character")
        else:
            lines.append(
                json.dumps({"article": art, "image": row(100)}).encode().replace(b'"v100"', b'"' + p + b'"')
            )
            words.append("not UTF-8")
        files = {"c.toml": _cfg(table), "ch.jsonl": jsonl([insert(table, 1000)]), "sn.jsonl": jsonl(lines)}
        return Case(f"snapshot {kind} {p!r} {good}", files, [*CH, "--snapshot", "{dir}/sn.jsonl"], words)

    return f"snapshot {kind} {p!r} {good}", make


# -- configuration files ---------------------------------------------------------------------
def _config_dict(table: str) -> dict[str, Any]:
    return {
        "run": {"streams": 2, "commit_batch_size": 10},
        "workload": {"transactions": 10},
        "articles": [{"name": f"dbo.{table}", "columns": [dict(c) for c in COLUMNS]}],
    }


def _toml(d: dict[str, Any]) -> str:
    """Enough TOML for _config_dict's shape (tables, then [[articles]] with inline columns)."""

    def value(v: Any) -> str:
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{value(k)} = {value(x)}" for k, x in v.items()) + " }"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, str):  # a TOML basic string: JSON's escapes, but no surrogate pairs, DEL escaped
            return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")
        return json.dumps(v)

    out = []
    for section, body in d.items():
        if isinstance(body, list):
            for item in body:
                out.append(f"[[{section}]]")
                out += [f"{value(k)} = {value(v)}" for k, v in item.items()]
        elif isinstance(body, dict):
            out.append(f"[{section}]")
            out += [f"{value(k)} = {value(v)}" for k, v in body.items()]
        else:
            out.insert(0, f"{value(section)} = {value(body)}")
    return "\n".join(out) + "\n"


OUT_OF_RANGE = [
    ("run", "streams", st.one_of(st.integers(max_value=0), st.integers(min_value=65, max_value=2**40))),
    ("run", "commit_batch_size", st.integers(max_value=0)),
    ("run", "retry_attempts", st.integers(max_value=0)),
    (
        "run",
        "lock_timeout_ms",
        st.one_of(st.integers(max_value=0), st.integers(min_value=2**31, max_value=2**60)),
    ),
    ("workload", "transactions", st.integers(max_value=0)),
    ("workload", "initial_rows", st.integers(max_value=-1)),
    ("workload", "chain_length", st.integers(max_value=0)),
    (
        "workload",
        "key_update_share",
        st.one_of(st.floats(min_value=1.01, max_value=1e9), st.floats(max_value=-0.01, min_value=-1e9)),
    ),
    ("workload", "seed", st.integers(min_value=2**63, max_value=2**80)),
]
WRONG_TYPES = [
    ("run", "streams"),
    ("run", "set_apply"),
    ("run", "partition"),
    ("workload", "transactions"),
    ("workload", "kind"),
    ("run", "error_policy"),
]
CONFIG_KINDS = {
    "out_of_range": st.sampled_from(range(len(OUT_OF_RANGE))).flatmap(
        lambda k: st.tuples(st.just(k), OUT_OF_RANGE[k][2])
    ),
    "wrong_type": st.tuples(
        st.sampled_from(range(len(WRONG_TYPES))),
        st.one_of(
            st.lists(st.integers(), max_size=2),
            st.floats(0.5, 2.5),
            st.dictionaries(st.just("x"), st.integers(), max_size=1),
        ),
    ),
    "unknown_key": st.tuples(
        st.sampled_from(["top", "run", "workload", "article", "column"]),
        st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True),
    ),
    "bad_choice": st.tuples(
        st.sampled_from(["partition", "model", "kind", "error_policy"]),
        st.text(_TEXT, min_size=1, max_size=10),
    ),
    "bad_column_type": st.text(_TEXT, min_size=1, max_size=12).filter(
        lambda s: (
            s.strip().lower()
            not in {"int", "bit", "real", "float", "date", "time", "text", "ntext", "image", "xml", "money"}
        )
    ),
    "bad_delivery": st.tuples(
        st.sampled_from(["insert", "update", "delete"]), st.text(_TEXT, min_size=1, max_size=10)
    ).filter(lambda p: not _parses(p)),
    "syntax": st.sampled_from(
        ["toml-value", "toml-table", "yaml-tab", "yaml-bracket", "json-comma", "json-truncated"]
    ),
    "invalid_utf8": st.sampled_from([b"\xff", b"\xc3", b"\x80abc"]),
}


def _parses(p: tuple[str, str]) -> bool:
    from applier.articles import Delivery

    try:
        Delivery.parse(*p)
    except Exception:  # noqa: BLE001 - refused: the case we want
        return False
    return True


_ALLOWED = {
    "top": {"run", "workload", "articles", "subscriptions"},
    "run": {
        "subscription",
        "streams",
        "commit_batch_size",
        "partition",
        "model",
        "lock_timeout_ms",
        "error_policy",
        "retry_attempts",
        "set_apply",
    },
    "workload": {
        "kind",
        "initial_rows",
        "transactions",
        "commands_per_transaction",
        "key_update_share",
        "chain_length",
        "seed",
    },
    "article": {
        "name",
        "schema",
        "table",
        "columns",
        "key",
        "insert",
        "update",
        "delete",
        "unique",
        "references",
    },
    "column": {"name", "type", "nullable", "key", "identity", "computed"},
}


@st.composite
def config_faults(draw: Any) -> tuple[str, Any]:
    kind = draw(st.sampled_from(sorted(CONFIG_KINDS)))
    p = draw(CONFIG_KINDS[kind])
    fmt = draw(st.sampled_from(["toml", "yaml", "json"]))
    if kind == "unknown_key" and p[1] in _ALLOWED[p[0]]:
        p = (p[0], p[1] + "_x")
    if kind == "bad_choice":
        from applier.config import MODELS, PARTITIONS, WORKLOADS, ErrorPolicy

        names = {"partition": PARTITIONS, "model": MODELS, "kind": WORKLOADS}.get(p[0], ())
        ok = p[1] in names
        if p[0] == "error_policy":
            try:
                ErrorPolicy.parse(p[1])
                ok = True
            except Exception:  # noqa: BLE001 - refused: the case we want
                ok = False
        if ok:
            p = (p[0], p[1] + "?")

    def make(table: str) -> Case:
        d = _config_dict(table)
        art = d["articles"][0]
        name = f"c.{fmt}"
        words = [f"{{dir}}/{name}"]
        if kind == "out_of_range":
            section, key, _ = OUT_OF_RANGE[p[0]]
            d[section][key] = p[1]
            words.append(f"{section}.{key}")
        elif kind == "wrong_type":
            section, key = WRONG_TYPES[p[0]]
            d[section][key] = p[1]
            words.append(f"{section}.{key}")
        elif kind == "unknown_key":
            where, key = p
            {
                "top": d,
                "run": d["run"],
                "workload": d["workload"],
                "article": art,
                "column": art["columns"][1],
            }[where][key] = 1
            words += ["unknown key", repr(key)]
        elif kind == "bad_choice":
            key, value = p
            d["workload" if key == "kind" else "run"][key] = value
            words.append(key)
        elif kind == "bad_column_type":
            art["columns"][2]["type"] = p
            words.append("articles[0].columns[2].type")
        elif kind == "bad_delivery":
            art[p[0]] = p[1]
            words.append(f"articles[0].{p[0]}")
        text = {"toml": _toml, "yaml": lambda x: yaml.safe_dump(x, allow_unicode=True), "json": json.dumps}[
            fmt
        ](d)
        data = text.encode("utf-8")
        if kind == "syntax":
            form = p.split("-")[0]
            name = f"c.{form}"
            words = [f"{{dir}}/{name}", f"not valid {form.upper()}"]
            base = {"toml": _toml(d), "yaml": yaml.safe_dump(d), "json": json.dumps(d)}[form]
            broken = {
                "toml-value": base + "[run2]\nstreams = \n",
                "toml-table": base + "[run\n",
                "yaml-tab": base + "extra:\n\tstreams: 2\n",
                "yaml-bracket": base + "extra: [1, 2\n",
                "json-comma": base[:-1] + ",}",
                "json-truncated": base[: len(base) // 2],
            }[p]
            data = broken.encode()
        elif kind == "invalid_utf8":
            data = data.replace(f"dbo.{table}".encode(), f"dbo.{table}".encode() + p, 1)
            words.append("not UTF-8")
        return Case(f"config {kind} {p!r} {fmt}", {name: data}, ["--config", f"{{dir}}/{name}"], words)

    return f"config {kind} {p!r} {fmt}", make


# -- options, files, outputs, targets --------------------------------------------------------
def _not(parse: Any) -> Any:
    def bad(s: str) -> bool:
        try:
            parse(s)
        except ValueError:
            return True
        return False

    return st.text(_TEXT, min_size=1, max_size=8).filter(bad)


OPTIONS = {
    "--streams": st.one_of(_not(int), st.integers(max_value=0).map(str), st.integers(min_value=65).map(str)),
    "--commit-batch-size": st.one_of(_not(int), st.integers(max_value=0).map(str)),
    "--retry-attempts": st.one_of(_not(int), st.integers(max_value=0).map(str)),
    "--lock-timeout-ms": st.one_of(_not(int), st.integers(max_value=0).map(str)),
    "--transactions": st.integers(max_value=0).map(str),
    "--initial-rows": st.integers(max_value=-1).map(str),
    "--chain-length": st.one_of(_not(int), st.integers(max_value=0).map(str)),
    "--key-update-share": st.one_of(_not(float), st.floats(min_value=1.01, max_value=1e6).map(str)),
    "--seed": _not(int),
    "--workload": st.text(_TEXT, min_size=1, max_size=8).map(lambda s: s + "?"),
    "--partition": st.text(_TEXT, min_size=1, max_size=8).map(lambda s: s + "?"),
    "--model": st.text(_TEXT, min_size=1, max_size=8).map(lambda s: s + "?"),
    "--error-policy": st.sampled_from(
        ["skip:", "skip:99999", "skip:abc", "ignore", "strict:1", "skip:20598:x"]
    ),
}


@st.composite
def option_faults(draw: Any) -> tuple[str, Any]:
    option = draw(st.sampled_from(sorted(OPTIONS) + ["unknown"]))
    value = draw(OPTIONS.get(option, st.from_regex(r"--zz[a-z]{1,8}", fullmatch=True)))

    def make(table: str) -> Case:
        argv = ["--config", "{dir}/c.toml"]
        if option == "unknown":
            argv.append(value)
            words = ["unrecognized arguments", value]
        else:
            argv.append(f"{option}={value}")
            words = [option]
        return Case(f"option {option} {value!r}", {"c.toml": _cfg(table)}, argv, words)

    return f"option {option} {value!r}", make


FILE_KINDS = [
    "empty",
    "blank",
    "fake_parquet",
    "parquet_magic_only",
    "folder",
    "missing",
    "fifo",
    "invalid_utf8",
]


@st.composite
def file_faults(draw: Any) -> tuple[str, Any]:
    slot = draw(st.sampled_from(["--changes", "--snapshot", "--config", "--custom-sql"]))
    kind = draw(st.sampled_from(FILE_KINDS))
    blank = draw(st.text(st.sampled_from(" \t\n\r"), max_size=6))
    junk = draw(st.binary(min_size=0, max_size=40))
    if slot in ("--config", "--custom-sql") and kind in (
        "empty",
        "blank",
        "fake_parquet",
        "parquet_magic_only",
    ):
        kind = "invalid_utf8"
    if slot == "--snapshot" and kind in ("empty", "blank"):
        kind = "fake_parquet"  # an empty snapshot is a snapshot of no rows

    def make(table: str) -> Case:
        name = {"--changes": "ch", "--snapshot": "sn", "--config": "cf", "--custom-sql": "procs"}[slot]
        suffix = {"--config": ".toml", "--custom-sql": ".sql"}.get(
            slot, ".parquet" if "parquet" in kind else ".jsonl"
        )
        fname = name + suffix
        content: Any = {
            "empty": b"",
            "blank": blank.encode(),
            "fake_parquet": junk.replace(b"PAR1", b"") + b"\n",
            "parquet_magic_only": b"PAR1" + junk + b"\x00" * 8 + b"PAR1",
            "folder": FOLDER,
            "fifo": FIFO,
            "invalid_utf8": b"-- x\n\xff\xfe" + junk,
        }.get(kind)
        files: dict[str, Any] = {"c.toml": _cfg(table)}
        if content is not None:
            files[fname] = content
        argv = ["--config", "{dir}/c.toml"]
        if slot == "--config":
            argv = ["--config", f"{{dir}}/{fname}"]
        elif slot == "--changes":
            argv += ["--changes", f"{{dir}}/{fname}"]
        else:
            files["ch.jsonl"] = jsonl([insert(table, 1)])
            argv += ["--changes", "{dir}/ch.jsonl", slot, f"{{dir}}/{fname}"]
        return Case(f"file {slot} {kind} {blank!r} {junk!r}", files, argv, [f"{{dir}}/{fname}"])

    return f"file {slot} {kind} {blank!r} {junk!r}", make


@st.composite
def output_faults(draw: Any) -> tuple[str, Any]:
    option = draw(st.sampled_from(["--report", "--work-dir"]))
    kind = draw(st.sampled_from(["folder_or_file", "under_a_file", "deep_under_a_file"]))
    depth = draw(st.integers(0, 2))

    def make(table: str) -> Case:
        files = {
            "c.toml": _cfg(table),
            "ch.jsonl": jsonl([insert(table, i) for i in range(1, 4)]),
            "f": b"x",
            "d": FOLDER,
        }
        sub = "/".join(["s"] * depth)
        path = {
            "folder_or_file": "{dir}/d" if option == "--report" else "{dir}/f",
            "under_a_file": "{dir}/f/" + (sub or "x"),
            "deep_under_a_file": "{dir}/f/" + (sub + "/" if sub else "") + "out/r.json",
        }[kind]
        return Case(f"output {option} {kind} {depth}", files, [*CH, option, path], [f"{option} {path}"])

    return f"output {option} {kind} {depth}", make


@st.composite
def target_faults(draw: Any) -> tuple[str, Any]:
    form = draw(st.sampled_from(["garbage", "no_driver", "unknown_driver", "unreachable"]))
    text = draw(st.text(_TEXT, min_size=1, max_size=20))
    if form == "garbage":
        text = text.replace("=", "") or "x"
        if text.strip() in ("embedded", "mssql", "postgres-container"):
            text += "!"
    elif form == "no_driver":
        text = f"Server={text.replace(';', '').replace('=', '')};Uid=u;Pwd=s3cret"
    elif form == "unknown_driver":
        text = "Driver={Nope" + text.replace("}", "").replace(";", "") + "};Server=x;Pwd=s3cret"
    else:
        from applier.targets.embedded import free_port

        text = (
            f"Driver={{PostgreSQL Unicode}};Server=127.0.0.1;Port={free_port()};Database=x;Uid=u;Pwd=s3cret"
        )

    def make(table: str) -> Case:
        argv = ["--config", "{dir}/c.toml", "--target", text]
        return Case(f"target {form} {text!r}", {"c.toml": _cfg(table)}, argv, ["--target"], target=False)

    return f"target {form} {text!r}", make


BRANCHES = {
    "line": line_faults(),
    "positions": position_faults(),
    "snapshot": snapshot_faults(),
    "config": config_faults(),
    "option": option_faults(),
    "file": file_faults(),
    "output": output_faults(),
    "target": target_faults(),
}
# Drawn in these proportions: the kinds Spark validates cost ~1 s a case, the others ~10 ms.
SHARES = {
    "line": 5,
    "positions": 2,
    "snapshot": 2,
    "config": 3,
    "option": 2,
    "file": 2,
    "output": 1,
    "target": 1,
}
CASES = st.sampled_from([k for k, n in SHARES.items() for _ in range(n)]).flatmap(BRANCHES.__getitem__)


@pytest.mark.e2e
def test_fuzzed_bad_input_is_refused_before_anything_is_applied(spark, target, tmp_path, capsys):
    runner = Runner(target, capsys, tmp_path)
    kinds: dict[str, int] = {}
    spent: dict[str, float] = {}
    started = time.perf_counter()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        phases=(Phase.explicit, Phase.generate),  # a failure is reported as drawn: no shrinking
        suppress_health_check=list(HealthCheck),
    )
    @given(CASES)
    def one(case: tuple[str, Any]) -> None:
        key, make = case
        t = time.perf_counter()
        message = runner.refused(make)
        assert "s3cret" not in message
        kind = key.split()[0]
        kinds[kind] = kinds.get(kind, 0) + 1
        spent[kind] = spent.get(kind, 0.0) + time.perf_counter() - t

    one()
    seconds = time.perf_counter() - started
    print(f"\n{len(runner.seen)} distinct bad-input cases in {runner.runs} runs, {seconds:.0f} s")
    for kind in sorted(kinds):
        print(f"  {kind:10} {kinds[kind]:4} cases {spent[kind]:6.1f} s")
    assert len(runner.seen) >= MIN_CASES, kinds
    assert all(
        kinds.get(k, 0) >= 5
        for k in ("line", "positions", "snapshot", "config", "option", "file", "output", "target")
    ), kinds
