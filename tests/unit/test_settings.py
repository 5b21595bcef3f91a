"""Settings files are validated once, with errors naming the file and the key path."""

from __future__ import annotations

import pytest

from applier.articles import Syntax
from applier.config import ErrorPolicy, demo_config, load_config
from applier.errors import ConfigError


def write(tmp_path, name, text):
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


def test_toml_file_loads(tmp_path):
    cfg = load_config(write(tmp_path, "a.toml", GOOD))
    assert cfg.run.streams == 8 and cfg.run.commit_batch_size == 10
    assert cfg.workload.kind == "uniform" and cfg.workload.transactions == 50
    (a,) = cfg.articles
    assert (a.schema, a.table, a.key) == ("Sales", "Order Lines", ("id",))
    assert a.update.syntax == Syntax.MCALL
    assert a.delete.syntax == Syntax.XCALL and a.delete.procedure == "dbo.my_del"


def test_yaml_file_loads(tmp_path):
    text = "run:\n  streams: 2\narticles:\n  - name: dbo.t\n    columns:\n      - {name: k, type: int, key: true}\n"
    cfg = load_config(write(tmp_path, "a.yaml", text))
    assert cfg.run.streams == 2 and cfg.articles[0].name == "dbo.t"


BAD = [
    # (text, words the error must contain)
    ("[run]\nstreams = 0\n", "streams must be 1..64"),
    ('[run]\nstreams = "4"\n', "run.streams: expected int"),
    ("[run]\nstraems = 4\n", "unknown key(s) ['straems']"),
    ('[workload]\nkind = "zipf"\n', "unknown workload 'zipf'"),
    ('[[articles]]\nname = "dbo.t"\ncolumns = [{ name = "k", type = "int" }]\n', "no key columns"),
    (
        '[[articles]]\nname = "dbo.t"\ncolumns = [{ name = "k", type = "intt", key = true }]\n',
        "articles[0].columns[0].type",
    ),
    (
        '[[articles]]\nname = "dbo.t"\ncolumns = [{ name = "k", type = "int", key = true }]\ninsert = "SCALL"\n',
        "SCALL is not allowed for insert",
    ),
    (
        '[[articles]]\nname = "dbo.t"\ncolumns = [{ name = "k", type = "int", key = true }]\nupdate = "ZCALL"\n',
        "unknown call syntax 'ZCALL'",
    ),
    ('[run]\nerror_policy = "lenient"\n', "unknown error policy"),
    ("[run\n", "not valid"),
]


@pytest.mark.parametrize("text,words", BAD, ids=[b[1][:30] for b in BAD])
def test_bad_settings_name_file_and_key(tmp_path, text, words):
    p = write(tmp_path, "bad.toml", text)
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert str(p) in str(e.value)
    assert words in str(e.value)


def test_missing_file():
    with pytest.raises(ConfigError, match="cannot read"):
        load_config("/nonexistent/applier.toml")


def test_error_policies():
    assert str(ErrorPolicy.parse("strict")) == "strict"
    p = ErrorPolicy.parse("continue-on-data-consistency-errors")
    assert p.codes == ("2601", "2627", "20598")
    assert p.skips("row_not_found", "RP598") and p.skips("duplicate_key", "23505")
    assert not p.skips("lock_timeout", "55P03")
    assert not ErrorPolicy.parse("strict").skips("row_not_found", "20598")
    assert ErrorPolicy.parse("skip:547").skips("foreign_key", "23503")


def test_demo_config_has_composite_key():
    cfg = demo_config()
    assert {a.name for a in cfg.articles} == {"dbo.accounts", "dbo.order_lines"}
    assert cfg.article("dbo.order_lines").key == ("order_id", "line")
