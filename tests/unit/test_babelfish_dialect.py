"""The Babelfish dialect's capability flags, and finding a Babelfish build (no database, no Spark).

Each flag turns one piece of SQL Server's text into what Babelfish 4.3 takes; SQL Server's text
stays where the flag is on (the golden files of test_tsql_dialect.py and
test_sqlserver_fidelity.py). The engine is told by the server's answer, never by a name.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
import sqlglot

from applier.articles import Article, Column, parse_type
from applier.dialects import DIALECTS, for_server
from applier.dialects.babelfish import BabelfishDialect
from applier.dialects.conflicts import Classified, ConflictClass
from applier.dialects.tsql import TsqlDialect
from applier.errors import UnsupportedError

B, T = BabelfishDialect(), TsqlDialect()


def _article(
    table: str = "t", cols: tuple[tuple[str, str], ...] = (("k", "int"), ("n s", "nvarchar(20)"))
) -> Article:
    return Article(
        "dbo",
        table,
        tuple(Column(n, parse_type(t), nullable=i > 0) for i, (n, t) in enumerate(cols)),
        (cols[0][0],),
    )


@pytest.mark.parametrize(
    ("ident", "bracketed", "babelfish"),
    [
        ("plain", "[plain]", "[plain]"),
        ("a]b", "[a]]b]", '"a]b"'),  # Babelfish reads no ]] inside brackets
        ("it's [id]", "[it's [id]]]", '"it\'s [id]"'),
        ('we"ird --', '[we"ird --]', '[we"ird --]'),  # a " is fine inside brackets
        ("名前 ü", "[名前 ü]", "[名前 ü]"),
    ],
)
def test_quote(ident: str, bracketed: str, babelfish: str) -> None:
    assert T.quote(ident) == bracketed
    assert B.quote(ident) == babelfish


def test_a_name_with_both_a_bracket_and_a_double_quote_is_refused_on_babelfish_only() -> None:
    assert T.quote('s"c]h') == '[s"c]]h]'
    with pytest.raises(UnsupportedError, match=r"both \] and"):
        B.quote('s"c]h')


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("k", "'$.\"k\"'"),
        ("n s", "'$.\"n\\u0020s\"'"),  # a space ends Babelfish's jsonpath text
        ("note's", "'$.\"note\\u0027s\"'"),
        ('k"1', "'$.\"k\\u00221\"'"),
        ("b key]", "'$.\"b\\u0020key\\u005d\"'"),
        ("名前", "'$.\"名前\"'"),  # letters of any script pass as they are
        ("😀", "'$.\"\\ud83d\\ude00\"'"),  # beyond the BMP: a surrogate pair
    ],
)
def test_json_paths_are_escaped_varchar_literals_on_babelfish(name: str, expected: str) -> None:
    assert B.json_path_literal(name) == expected
    assert json.loads(expected[3:-1]) == name  # the escapes are JSON's own: the path names the member
    assert T.json_path_literal(name).startswith("N'")  # SQL Server: a Unicode literal


def test_generated_procedure_names_holding_a_bracket_are_made_safe_on_babelfish_only() -> None:
    a = _article("Vendor ]'é")
    assert T.proc_name(a, "U") == (None, "sp_MSupd_dboVendor ]'é")
    _, name = B.proc_name(a, "U")
    assert "]" not in name and name.startswith("sp_MSupd_dboVendor _'é_")
    b = _article("Vendor _'é")  # the name a bracket becomes: still told apart by the hash
    assert B.proc_name(b, "U")[1] != name
    assert B.set_proc_name(a, "U")[1] != B.set_proc_name(b, "U")[1]


def test_the_set_procedures_differ_only_where_a_flag_says() -> None:
    a = _article(cols=(("k", "int"), ("n s", "nvarchar(20)"), ("b", "varbinary(8)")))
    sqlserver, babelfish = T.set_procedure_sql(a, "U") or "", B.set_procedure_sql(a, "U") or ""
    assert "output inserted.[k] into @found" in sqlserver and "output" not in babelfish
    assert "varbinary(max) N'$.\"b\"'" in sqlserver
    assert "cast(decode(v.[b], 'base64') as varbinary(max))" in babelfish
    assert "json_extract_path_text(cast(v.[_row] as json), N'n s')" in babelfish
    assert "[_row] nvarchar(max) '$' as json" in babelfish and "_row" not in sqlserver
    # both parse as T-SQL, batch by batch
    for text in (sqlserver, babelfish):
        for batch in T.split_script(text):
            sqlglot.parse(batch, read="tsql")


def test_schema_changes_differ_only_where_a_flag_says() -> None:
    a = _article()
    col = Column("n s", parse_type("nvarchar(40)"))
    assert T.alter_type_sql(a, col).endswith("nvarchar(40) NULL")
    assert B.alter_type_sql(a, col).endswith("nvarchar(40)")
    assert "sys.stats_columns" in T.drop_column_sql(a, "n s")
    assert B.drop_column_sql(a, "n s") == "ALTER TABLE [dbo].[t] DROP COLUMN [n s]"


def test_the_stand_in_raises_the_bare_number_on_babelfish() -> None:
    (sqlserver,), (babelfish,) = T.support_sql(), B.support_sql()
    assert "throw 120598" in sqlserver and "raiserror(" not in sqlserver
    assert "raiserror(20598, 16, 1)" in babelfish and "throw" not in babelfish


def test_hierarchyid_is_held_as_text_on_babelfish() -> None:
    assert T.type_sql(parse_type("hierarchyid")) == "hierarchyid"
    assert B.type_sql(parse_type("hierarchyid")) == "nvarchar(4000)"


def test_binary_nulls_bind_as_binary_on_tsql() -> None:
    import pyodbc

    assert T.null_param(parse_type("varbinary(8)")) is pyodbc.BinaryNull
    assert B.null_param(parse_type("image")) is pyodbc.BinaryNull
    assert T.null_param(parse_type("int")) is None
    assert DIALECTS["postgres"]().null_param(parse_type("varbinary(8)")) is None


@pytest.mark.parametrize(
    ("message", "constraint", "cls"),
    [
        # Babelfish: PostgreSQL's text, 2627 for every unique index, names in lower case
        (
            '[23000] [FreeTDS][SQL Server]duplicate key value violates unique constraint "pk_t" (2627) (SQLExecDirectW)',
            "pk_t",
            "duplicate_key",
        ),
        (
            '[23000] [FreeTDS][SQL Server]duplicate key value violates unique constraint "uq_t_0" (2627) (SQLExecDirectW)',
            "uq_t_0",
            "unique_index",
        ),
        (
            '[23000] [FreeTDS][SQL Server]duplicate key value violates unique constraint "pk_vendor ]\'é" (2627)',
            "pk_vendor ]'é",
            "duplicate_key",
        ),
    ],
)
def test_duplicates_name_their_constraint_in_babelfish_text(message: str, constraint: str, cls: str) -> None:
    c = B.classify(Exception("23000", message))
    assert c.constraint == constraint
    pk = {"PK_t", "PK_Vendor ]'É"}  # as applier names them; Babelfish stores them in lower case
    assert c.keyed(pk).cls.value == cls


def test_an_unnamed_driver_error_is_ambiguous_a_named_one_is_not() -> None:
    unknown = B.classify(
        Exception("HY000", "[HY000] [FreeTDS][SQL Server]Unknown error (0) (SQLExecDirectW)")
    )
    assert unknown.cls is ConflictClass.OTHER and not unknown.connection_lost
    assert B.ambiguous(unknown)
    lost = B.classify(Exception("08S01", "[08S01] [FreeTDS][SQL Server]Communication link failure (0)"))
    assert lost.connection_lost and not B.ambiguous(lost)
    lock = B.classify(Exception("42000", "[42000] canceling statement due to lock timeout (33557097)"))
    assert not B.ambiguous(lock)
    assert not DIALECTS["postgres"]().ambiguous(Classified(ConflictClass.OTHER, "HY000", False))


def test_postgresql_s_lock_timeout_is_read_as_1222_other_unmapped_errors_stay_other() -> None:
    lock = B.classify(
        Exception(
            "42000",
            "[42000] [FreeTDS][SQL Server]canceling statement due to lock timeout (33557097) (SQLExecDirectW)",
        )
    )
    assert (lock.cls, lock.code, lock.transient) == (ConflictClass.LOCK_TIMEOUT, "1222", True)
    assert "lock timeout" in lock.message
    other = B.classify(
        Exception("42000", "[42000] [FreeTDS][SQL Server]42 is not an active process ID (33557097)")
    )
    assert (other.cls, other.code, other.transient) == (ConflictClass.OTHER, "33557097", False)
    # the text alone, under another number, is not enough (a message quoting it is data)
    quoted = B.classify(Exception("42000", "[42000] value 'canceling statement due to lock timeout' (8152)"))
    assert quoted.cls is ConflictClass.OTHER
    # SQL Server's own dialect never reads the text
    assert (
        DIALECTS["tsql"]()
        .classify(Exception("42000", "[42000] canceling statement due to lock timeout (33557097)"))
        .cls
        is ConflictClass.OTHER
    )
    assert not DIALECTS["postgres"]().ambiguous(Classified(ConflictClass.OTHER, "HY000", False))


class _Cursor:
    """What a server answers to the engine probe (a stand-in for a cursor: no database)."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.seen: list[str] = []

    def execute(self, sql: str) -> _Cursor:
        self.seen.append(sql)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self

    def fetchall(self) -> list[tuple[Any]]:
        return [(self.answer,)]


def test_the_engine_is_the_servers_answer() -> None:
    assert isinstance(for_server(T, _Cursor("1")), BabelfishDialect)
    assert type(for_server(T, _Cursor(None))) is TsqlDialect  # SQL Server: an unknown property
    assert type(for_server(T, _Cursor(RuntimeError("no such function")))) is TsqlDialect
    pg = DIALECTS["postgres"]()
    probe = _Cursor("1")
    assert for_server(pg, probe) is pg and probe.seen == []  # another language is not asked


# -- finding a build ------------------------------------------------------------------------
def _fake_build(folder: Path) -> Path:
    """A .tar.gz holding babelfish-x/bin/postgres (an empty file: found, never run)."""
    tb = folder / "babelfish-x-test.tar.gz"
    with tarfile.open(tb, "w:gz") as tar:
        info = tarfile.TarInfo("babelfish-x/bin/postgres")
        info.size = 0
        tar.addfile(info, io.BytesIO(b""))
    return tb


def test_a_tarball_named_by_the_variable_is_unpacked_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from applier.targets import babelfish

    tb = _fake_build(tmp_path)
    monkeypatch.setenv("APPLIER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(babelfish.ENV, str(tb))
    tree = babelfish.find_build()
    assert (tree / "bin" / "postgres").is_file() and tree.name == "babelfish-x"
    assert tree.parent.parent == tmp_path / "cache" / "babelfish"
    (tree / "marker").write_text("kept")
    assert babelfish.find_build() == tree and (tree / "marker").exists()  # not unpacked again
    monkeypatch.setenv(babelfish.ENV, str(tmp_path))  # a folder holding the tarball
    assert babelfish.find_build() == tree
    monkeypatch.setenv(babelfish.ENV, str(tree))  # the tree itself
    assert babelfish.find_build() == tree


def test_no_build_is_an_error_naming_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from applier.targets import babelfish

    monkeypatch.setenv(babelfish.ENV, str(tmp_path / "nowhere"))
    with pytest.raises(babelfish.BabelfishMissing, match=r"\$APPLIER_BABELFISH=.*nowhere"):
        babelfish.find_build()
    ok, why = babelfish.available()
    assert not ok and "APPLIER_BABELFISH" in why


def test_a_datetimeoffset_binds_as_its_utc_instant_and_its_null_typed() -> None:
    """Babelfish refuses a datetimeoffset parameter bound as text or as a varchar NULL (22018,
    implicit casting): the instant binds in UTC, the NULL as a timestamp (setinputsizes)."""
    import datetime as dt

    from applier.articles import parse_type
    from applier.dialects.babelfish import BabelfishDialect
    from applier.dialects.base import TypedNull
    from applier.dialects.tsql import TsqlDialect

    t = parse_type("datetimeoffset(6)")
    b, s = BabelfishDialect(), TsqlDialect()
    assert b.to_param(t, "2024-03-10T01:59:59.999999-05:00") == dt.datetime(2024, 3, 10, 6, 59, 59, 999999)
    assert (
        s.to_param(t, "2024-03-10T06:59:59.999999+00:00") == "2024-03-10T06:59:59.999999+00:00"
    )  # SQL Server: text
    null = b.to_param(t, None)
    assert isinstance(null, TypedNull) and s.to_param(t, None) is None
    params, sizes = b.bind([1, null, "x"])
    assert params == [1, None, "x"] and sizes == [None, (93, 0, 6), None]
    assert b.bind([1, "x"]) == ([1, "x"], None) and s.bind([1, None]) == ([1, None], None)


def test_a_datetimeoffset_read_back_is_its_instant() -> None:
    """pyodbc cannot read SQL_SS_TIMESTAMPOFFSET (-155): the T-SQL dialects decode its struct."""
    import datetime as dt
    import struct

    from applier.dialects.tsql import datetimeoffset_of

    raw = struct.pack("<6hI2h", 2024, 3, 10, 1, 59, 59, 999999000, -5, -30)
    assert datetimeoffset_of(raw) == dt.datetime(2024, 3, 10, 7, 29, 59, 999999, dt.timezone.utc)
    assert datetimeoffset_of(raw).utcoffset() == -dt.timedelta(hours=5, minutes=30)
