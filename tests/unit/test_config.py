"""applier.config: files are checked once, with every error naming the file and the key path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from applier.articles import Syntax
from applier.config import (
    HAZARD_WORKLOADS,
    Config,
    ErrorPolicy,
    RunSettings,
    Subscription,
    Workload,
    article_to_dict,
    check_config,
    demo_articles,
    demo_config,
    json_schema,
    load_config,
    parse_article_dicts,
    parse_config,
    validate_workload,
    with_overrides,
)
from applier.errors import ConfigError

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "config.schema.json"
REGENERATE = (
    '.venv/bin/python -c "import json,applier.config as c; '
    'print(json.dumps(c.json_schema(), indent=2, sort_keys=True))" > docs/config.schema.json'
)


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


GOOD = """
[run]
streams = 8
commit_batch_size = 10

[workload]
kind = "uniform"
transactions = 50

[[articles]]
name = "Sales.Order Lines"
columns = [
  { name = "id", type = "bigint", key = true },
  { name = "note", type = "nvarchar(max)" },
]
update = "MCALL"
delete = "XCALL dbo.my_del"
"""
ARTICLE = '[[articles]]\nname = "dbo.t"\ncolumns = [{ name = "k", type = "int", key = true }]\n'


def test_toml_file_loads(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, "a.toml", GOOD))
    assert cfg.run.streams == 8 and cfg.run.commit_batch_size == 10
    assert cfg.workload.kind == "uniform" and cfg.workload.transactions == 50
    (a,) = cfg.articles
    assert (a.schema, a.table, a.key) == ("Sales", "Order Lines", ("id",))
    assert a.update.syntax == Syntax.MCALL
    assert a.delete.syntax == Syntax.XCALL and a.delete.procedure == "dbo.my_del"


def test_yaml_file_loads(tmp_path: Path) -> None:
    text = "run:\n  streams: 2\narticles:\n  - name: dbo.t\n    columns:\n      - {name: k, type: int, key: true}\n"
    cfg = load_config(write(tmp_path, "a.yaml", text))
    assert cfg.run.streams == 2 and cfg.articles[0].name == "dbo.t"


BAD = [
    # (text, words the error must contain)
    # a range names the key and both bounds
    ("[run]\nstreams = 0\n", "streams must be 1..64"),
    # strict types: a string is not an int
    ('[run]\nstreams = "4"\n', "run.streams: expected int"),
    # a misspelt key is refused, not ignored
    ("[run]\nstraems = 4\n", "unknown key(s) ['straems']"),
    # workload names are checked
    ('[workload]\nkind = "zipf"\n', "unknown workload 'zipf'"),
    # the article's own check: replication needs a key
    ('[[articles]]\nname = "dbo.t"\ncolumns = [{ name = "k", type = "int" }]\n', "no key columns"),
    # a column type error names the column's path
    (
        '[[articles]]\nname = "dbo.t"\ncolumns = [{ name = "k", type = "intt", key = true }]\n',
        "articles[0].columns[0].type",
    ),
    # call syntaxes allowed per operation (seed 003)
    (ARTICLE + 'insert = "SCALL"\n', "SCALL is not allowed for insert"),
    # an unknown call syntax
    (ARTICLE + 'update = "ZCALL"\n', "unknown call syntax 'ZCALL'"),
    # error policies are checked
    ('[run]\nerror_policy = "lenient"\n', "unknown error policy"),
    # a file that does not parse
    ("[run\n", "not valid"),
]


@pytest.mark.parametrize("text,words", BAD, ids=[b[1][:30] for b in BAD])
def test_bad_settings_name_file_and_key(tmp_path: Path, text: str, words: str) -> None:
    p = write(tmp_path, "bad.toml", text)
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert str(p) in str(e.value)
    assert words in str(e.value)


NEW_BAD = [
    # (text, words the error must contain)
    # the agent commits per round: a writeset dependency inside a round is never seen committed
    ('[run]\npartition = "writeset"\n' + ARTICLE, "run: partition 'writeset' needs model 'independent'"),
    # ... also when the model is said explicitly
    ('[run]\npartition = "writeset"\nmodel = "agent"\n' + ARTICLE, "needs model 'independent', not 'agent'"),
    # a skip code no dialect knows: not a number at all
    ('[run]\nerror_policy = "skip:abc"\n' + ARTICLE, "run.error_policy: error policy 'skip:abc'"),
    # ... a number no dialect classifies; the known ones are listed
    (
        '[run]\nerror_policy = "skip:99999"\n' + ARTICLE,
        "unknown error code(s) ['99999'] (codes a dialect knows:",
    ),
    # retry_attempts reaches the retry policy: at least one attempt
    ("[run]\nretry_attempts = 0\n" + ARTICLE, "run.retry_attempts: retry_attempts must be >= 1, got 0"),
    # no articles and a workload that changes the published tables: no silent demo articles
    ('[workload]\nkind = "uniform"\n', "articles: missing"),
    # the same message says what to do
    ("[run]\nstreams = 2\n", "list the published tables, or use a hazard workload"),
    # articles that a hazard workload would ignore
    ('[workload]\nkind = "key-swap"\n' + ARTICLE, "articles: workload 'key-swap' brings its own articles"),
    # a bool is not an int
    ("[run]\nstreams = true\n" + ARTICLE, "run.streams: expected int, got bool True"),
    # a missing key is named
    ('[[articles]]\nname = "dbo.t"\n', "articles[0]: missing required key 'columns'"),
    # unknown keys list the allowed ones (schema, not the model's schema_)
    (
        ARTICLE + "colums = []\n",
        "unknown key(s) ['colums'] (allowed: ['columns', 'delete', 'insert',",
    ),
    # a publication row filter was accepted and never read: refused (subscriptions filter rows)
    (ARTICLE + 'filter = "id > 0"\n', "unknown key(s) ['filter']"),
    # two articles of one name
    (ARTICLE + ARTICLE, "articles: duplicate article(s) ['dbo.t']"),
    # a subscription's column list must hold the key
    (
        ARTICLE.replace("key = true }", "key = true }, { name = 'v', type = 'int' }")
        + '[[subscriptions]]\nname = "s"\narticles = [{ name = "dbo.t", columns = ["v"] }]\n',
        "subscriptions[0].articles[0].columns: the key column 'k' must be in the column list",
    ),
    # subscriptions name known articles
    (ARTICLE + '[[subscriptions]]\nname = "s"\narticles = [{ name = "dbo.x" }]\n', "unknown article 'dbo.x'"),
    # an empty row filter
    (
        ARTICLE + '[[subscriptions]]\nname = "s"\narticles = [{ name = "dbo.t", where = " " }]\n',
        "where: must not be",
    ),
    # two subscriptions of one name
    (
        ARTICLE + '[[subscriptions]]\nname = "s"\n[[subscriptions]]\nname = "s"\n',
        "duplicate subscription(s) ['s']",
    ),
    # a foreign key must reference the parent's key or a unique key
    (
        ARTICLE
        + '[[articles]]\nname = "dbo.c"\ncolumns = [{ name = "id", type = "int", key = true }, '
        + '{ name = "t", type = "int" }]\nreferences = [{ columns = ["t"], article = "dbo.t", parent_columns = ["x"] }]\n',
        "articles[1].references[0].parent_columns: ['x'] is neither the key nor a unique key of dbo.t",
    ),
    # name and schema/table both: one would be ignored
    (ARTICLE + 'table = "u"\n', "articles[0].name: give name (schema.table) or schema and table, not both"),
]


@pytest.mark.parametrize("text,words", NEW_BAD, ids=[b[1][:40] for b in NEW_BAD])
def test_new_checks_refuse(tmp_path: Path, text: str, words: str) -> None:
    p = write(tmp_path, "bad.toml", text)
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert f"{p}: " in str(e.value)
    assert words in str(e.value)


def test_every_error_is_reported_one_per_line() -> None:
    data = {
        "run": {"streams": 0, "model": "agnet"},
        "workload": {"kind": "zipf"},
        "articles": [{"name": "x"}],
    }
    with pytest.raises(ConfigError) as e:
        parse_config(data, "f.toml")
    lines = str(e.value).splitlines()
    assert all(line.startswith("f.toml: ") for line in lines)
    assert "f.toml: run.streams: streams must be 1..64, got 0" in lines
    assert any(line.startswith("f.toml: run.model: unknown apply model 'agnet'") for line in lines)
    assert any(line.startswith("f.toml: workload.kind: unknown workload 'zipf'") for line in lines)
    assert "f.toml: articles[0]: missing required key 'columns'" in lines


SKIP_CODES = [
    # (policy, accepted)
    ("skip:abc", False),  # not a code
    ("skip:99999", False),  # a number no dialect knows
    ("skip:2601:RP598", True),  # a SQL Server number and a PostgreSQL SQLSTATE
    ("skip:120598:40P01", True),  # codes of one dialect only are enough
    ("continue-on-data-consistency-errors", True),  # its codes are known
]


@pytest.mark.parametrize("policy,accepted", SKIP_CODES)
def test_skip_codes_must_be_known(policy: str, accepted: bool) -> None:
    if accepted:
        assert str(ErrorPolicy.parse(policy)).startswith("skip:")
    else:
        with pytest.raises(ConfigError, match=r"unknown error code\(s\).*2601"):
            ErrorPolicy.parse(policy)


def test_json_file_without_articles_is_refused(tmp_path: Path) -> None:
    p = write(tmp_path, "a.json", json.dumps({"run": {"streams": 2}}))
    with pytest.raises(ConfigError, match="articles: missing") as e:
        load_config(p)
    assert str(p) in str(e.value)


@pytest.mark.parametrize("kind", HAZARD_WORKLOADS)
def test_hazard_workload_without_articles_is_accepted(tmp_path: Path, kind: str) -> None:
    # a hazard workload brings its own articles: the demo's stand in as placeholders
    cfg = load_config(write(tmp_path, "h.yml", f"workload:\n  kind: {kind}\n"))
    assert cfg.workload.kind == kind and cfg.articles == demo_articles()


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config("/nonexistent/applier.toml")


@pytest.mark.parametrize("name,text", [("a.json", "{"), ("a.yaml", "a: [")])
def test_unparsable_json_and_yaml(tmp_path: Path, name: str, text: str) -> None:
    with pytest.raises(ConfigError, match="not valid (JSON|YAML)"):
        load_config(write(tmp_path, name, text))


def test_error_policies() -> None:
    assert str(ErrorPolicy.parse("strict")) == "strict"
    p = ErrorPolicy.parse("continue-on-data-consistency-errors")
    assert p.codes == ("2601", "2627", "20598")
    assert p.skips("row_not_found", "RP598") and p.skips("duplicate_key", "23505")
    assert not p.skips("lock_timeout", "55P03")
    assert not ErrorPolicy.parse("strict").skips("row_not_found", "20598")
    assert ErrorPolicy.parse("skip:547").skips("foreign_key", "23503")


def test_demo_config_has_composite_key() -> None:
    cfg = demo_config()
    assert {a.name for a in cfg.articles} == {"dbo.accounts", "dbo.order_lines"}
    assert cfg.article("dbo.order_lines").key == ("order_id", "line")


OVERRIDES = [
    # (run, workload, words of the error); None: accepted
    ({"streams": 0}, None, "command line: run.streams: streams must be 1..64, got 0"),
    ({"error_policy": "skip:abc"}, None, "command line: run.error_policy: error policy 'skip:abc'"),
    ({"partition": "writeset"}, None, "command line: run: partition 'writeset' needs model 'independent'"),
    ({"streams": "4"}, None, "run.streams: expected int, got str '4'"),  # types as strict as a file's
    ({"straems": 4}, None, "run: unknown key(s) ['straems']"),
    (None, {"transactions": 0}, "workload.transactions: transactions must be >= 1, got 0"),
    ({"partition": "writeset", "model": "independent"}, None, None),
    ({"streams": 16, "error_policy": "skip:2601:RP598", "set_apply": True}, {"kind": "uniform"}, None),
    (None, {"kind": "key-chain"}, None),  # the demo's articles become placeholders
]


@pytest.mark.parametrize("run,workload,words", OVERRIDES)
def test_with_overrides_validates(
    run: dict[str, object] | None, workload: dict[str, object] | None, words: str | None
) -> None:
    base = demo_config()
    if words is None:
        cfg = with_overrides(base, run=run, workload=workload)
        assert cfg.source == base.source
        for k, v in (run or {}).items():
            assert str(getattr(cfg.run, k)) == str(v)
        for k, v in (workload or {}).items():
            assert getattr(cfg.workload, k) == v
    else:
        with pytest.raises(ConfigError) as e:
            with_overrides(base, run=run, workload=workload)
        assert words in str(e.value)


def test_overrides_of_a_file_keep_its_articles_and_source(tmp_path: Path) -> None:
    p = write(tmp_path, "a.toml", GOOD)
    cfg = with_overrides(load_config(p), run={"streams": 3})
    assert cfg.run.streams == 3 and cfg.source == str(p) and cfg.articles[0].name == "Sales.Order Lines"
    with pytest.raises(ConfigError, match="brings its own articles"):  # the file's articles would be ignored
        with_overrides(load_config(p), workload={"kind": "hot-key"})


def test_overrides_of_a_hazard_file_do_not_bring_the_demo_articles(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, "h.toml", '[workload]\nkind = "reorder"\n'))
    with pytest.raises(ConfigError, match="articles: missing"):
        with_overrides(cfg, workload={"kind": "uniform"})


def rich_config() -> Config:
    return parse_config(
        {
            "run": {
                "partition": "writeset",
                "model": "independent",
                "error_policy": "skip:547",
                "retry_attempts": 2,
            },
            "workload": {"kind": "updates", "key_update_share": 0, "seed": 7},
            "articles": [
                {
                    "schema": "s",
                    "table": "p",
                    "columns": [
                        {"name": "id", "type": "int", "key": True},
                        {"name": "code", "type": "money"},
                        {"name": "at", "type": "datetime2(3)", "nullable": False},
                        {"name": "c", "type": "int", "computed": True},
                    ],
                    "unique": [["code"]],
                    "update": "XCALL s.upd",
                    "delete": "SQL",
                },
                {
                    "name": "s.c",
                    "columns": [
                        {"name": "id", "type": "bigint", "key": True},
                        {"name": "pid", "type": "int"},
                    ],
                    "references": [{"columns": ["pid"], "article": "s.p", "parent_columns": ["id"]}],
                },
            ],
            "subscriptions": [
                {
                    "name": "east",
                    "target": "Driver=x;PWD=secret",
                    "streams": 2,
                    "articles": [{"name": "s.p", "where": "id > 1", "columns": ["code", "id"]}],
                },
                {"name": "west", "database": "w", "sqldml_threshold": 9},
            ],
        },
        "<rich>",
    )


def test_check_config_round_trips_through_to_dict() -> None:
    cfg = rich_config()
    assert check_config(cfg) == cfg  # articles, run, workload and subscriptions survive to_dict
    assert cfg.subscriptions[0].target == "Driver=x;PWD=secret"  # checked with the real target...
    assert cfg.to_dict()["subscriptions"][0]["target"] == "***"  # ...which to_dict redacts
    assert check_config(demo_config()) == demo_config()


CODE_BUILT = [
    # (config built in code, words of the error)
    (demo_config().replace(run=RunSettings(streams=0)), "<defaults>: run.streams: streams must be 1..64"),
    (demo_config().replace(run=RunSettings(partition="writeset")), "needs model 'independent'"),
    (demo_config().replace(run=RunSettings(retry_attempts=0)), "retry_attempts must be >= 1"),
    (demo_config().replace(workload=Workload(kind="zipf")), "unknown workload 'zipf'"),
    (demo_config().replace(subscriptions=(Subscription("s", streams=65),)), "subscriptions[0].streams"),
    (
        rich_config().replace(workload=Workload(kind="key-chain")),
        "brings its own articles",
    ),  # not placeholders
]


@pytest.mark.parametrize("config,words", CODE_BUILT)
def test_check_config_refuses(config: Config, words: str) -> None:
    with pytest.raises(ConfigError) as e:
        check_config(config)
    assert words in str(e.value)


def test_article_dicts_round_trip() -> None:
    assert parse_article_dicts([article_to_dict(a) for a in demo_articles()], "<demo>") == demo_articles()
    with pytest.raises(ConfigError, match=r"<x>: articles\[0\]\.columns\[0\]: missing required key 'type'"):
        parse_article_dicts([{"name": "dbo.t", "columns": [{"name": "k"}]}], "<x>")


def test_validate_workload() -> None:
    validate_workload(Workload(kind="uniform"))
    with pytest.raises(ConfigError, match=r"workload\.key_update_share: key_update_share must be 0\.\.1"):
        validate_workload(Workload(key_update_share=1.5))


def test_schema_file_is_current() -> None:
    expected = json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
    actual = SCHEMA_FILE.read_text(encoding="utf-8") if SCHEMA_FILE.exists() else ""
    assert actual == expected, f"docs/config.schema.json is stale; regenerate it with:\n  {REGENERATE}"


def test_schema_describes_every_field() -> None:
    schema = json_schema()
    assert schema["title"] == "applier configuration"
    tables = [schema, *schema["$defs"].values()]
    for table in tables:
        for name, prop in table["properties"].items():
            assert prop.get("description"), name
    assert schema["$defs"]["RunSection"]["properties"]["streams"]["maximum"] == 64


BAD_FILES = [
    # (name, bytes, words of the one-line error)
    ("a.toml", b'[run]\nsubscription = "a\xff"\n', "a.toml:2: not UTF-8 text (byte 0xff at column 18)"),
    (
        "a.yaml",
        b"run:\n\tstreams: 2\n",
        "a.yaml:2:1: not valid YAML: found character '\\t' that cannot start any token",
    ),
    # a key given twice is refused at the second one, at any depth (PyYAML alone keeps the last)
    (
        "a.yaml",
        b"run:\n  streams: 2\n  streams: 3\n",
        "a.yaml:3:3: not valid YAML: duplicate key 'streams' (first on line 2)",
    ),
    (
        "a.yaml",
        b"articles:\n  - name: dbo.t\n    columns:\n      - {name: k, type: int, key: true, key: false}\n",
        "a.yaml:4:41: not valid YAML: duplicate key 'key' (first on line 4)",
    ),
    (
        "a.yaml",
        b"run: {}\nworkload: {}\nrun: {}\n",
        "a.yaml:3:1: not valid YAML: duplicate key 'run' (first on line 1)",
    ),
    ("a.json", b'{"run": {"streams": 2,}}', "a.json:1:23: not valid JSON"),
    ("a.toml", b"[run]\nstreams = \n", "a.toml: not valid TOML: Invalid value (at line 2, column 11)"),
    ("a.toml", b"[workload]\nseed = 9223372036854775808\n", "seed must be at most 9223372036854775807"),
    ("a.toml", b"[run]\nlock_timeout_ms = 2147483648\n", "lock_timeout_ms must be at most 2147483647"),
]


@pytest.mark.parametrize("name,data,words", BAD_FILES, ids=[w[:30] for *_, w in BAD_FILES])
def test_bad_config_files_get_one_line_naming_the_place(
    tmp_path: Path, name: str, data: bytes, words: str
) -> None:
    f = tmp_path / name
    f.write_bytes(data)
    with pytest.raises(ConfigError) as e:
        load_config(f)
    assert words in str(e.value)
    assert str(f) in str(e.value)


def test_yaml_merge_keys_still_override(tmp_path: Path) -> None:
    # '<<' is not a duplicate: YAML's merge key lets the mapping's own keys win over what it merges
    text = "base: &b {streams: 1, commit_batch_size: 5}\nrun:\n  <<: *b\n  streams: 2\n"
    data = {"run": {"streams": 2, "commit_batch_size": 5}, "base": {"streams": 1, "commit_batch_size": 5}}
    from applier.config.yamlfile import load

    assert load(text) == data


@pytest.mark.parametrize(
    "workload,accepted",
    [
        # a generated lsn is xact_seqno << 20 | command_id: command_id 2**20 is the next transaction's
        ({"commands_per_transaction": 2**20 - 1}, True),
        ({"commands_per_transaction": 2**20}, False),
        # and transactions, a 32-bit integer, keep xact_seqno << 20 a bigint
        ({"transactions": 2**31 - 1}, True),
    ],
)
def test_generated_positions_cannot_collide(workload: dict, accepted: bool) -> None:
    from applier.records.schema import make_lsn

    data = {
        "workload": {"kind": "uniform", **workload},
        "articles": [{"name": "dbo.t", "columns": [{"name": "k", "type": "int", "key": True}]}],
    }
    if not accepted:
        ((name, value),) = workload.items()
        with pytest.raises(
            ConfigError, match=rf"^c\.toml: workload\.{name}: {name} must be 1\.\.{value - 1}, got {value}$"
        ):
            parse_config(data, "c.toml")
        return
    w = parse_config(data, "c.toml").workload
    last_xact, last_cmd = w.transactions, w.commands_per_transaction
    # the largest positions the bounds allow: one transaction's last command sorts before the next's first
    assert (
        make_lsn(last_xact - 1, last_cmd)
        < make_lsn(last_xact, 1)
        <= make_lsn(last_xact, last_cmd)
        <= 2**63 - 1
    )


def test_config_that_is_a_folder_or_a_fifo(tmp_path: Path) -> None:
    import os

    with pytest.raises(ConfigError, match="a folder, expected a configuration file"):
        load_config(tmp_path)
    fifo = tmp_path / "c.toml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):  # never waits for a writer
        load_config(fifo)
