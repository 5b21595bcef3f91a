"""Type fidelity against a real publisher (issue 31): every PostgreSQL type that ``applier
articles --from-target`` maps, written at an embedded publisher (tests/support/publisher.py),
captured through wal2json in format versions 1 and 2, applied at N = 4 with the articles read
from the publisher's catalog, verified, and compared with the publisher's tables row for row
(every column as text, read in UTC sessions).

One table per type family (tests/support/pgvalues.py holds the values: the extremes of each
type, NULL, text of every Unicode plane), each changed by inserts, an update that moves every
row's values to another row, a row deleted and inserted again under another key, and a key
change; a table keyed by a uuid, a text, an enum, a timestamptz, a date and a numeric has its
key moved too. Both captures are applied into one database, the second run reusing the tables
the first installed (emptied): a run's fixed cost once. The time zones differ on purpose, as in
test_publisher_wal2json.py: publisher America/St_Johns, version 1 decoded in Asia/Kolkata,
subscriber Pacific/Chatham. Every code point PostgreSQL's UTF8 accepts (about 4.4 MB of text)
round-trips under the e2e marker.

Columns are compared as the same text expression on both sides: ``::text``, or where the text
cast and the type's output function differ (which is what wal2json writes), the output function
(``xml_out``, ``inet_out``); a number of another scale at the subscriber (money, an
unconstrained numeric) through ``trim_scale``.

What the publisher's own decoding does not carry is asserted as such: wal2json 2.5 (the one
installed here; 2.6 has ``numeric-data-types-as-string``) writes a numeric NaN and a float NaN or
±Infinity as JSON null (wal2json.c: "not valid JSON values"), so those cells arrive NULL: the
row-for-row comparison reports exactly those rows as different from the publisher's, a NOT NULL
column holding one is refused when the capture is read, and ``applier capture`` says so, naming
the columns (its ``--snapshot`` refuses the rows, naming table, key and column).
Values a mapped type cannot hold at a subscriber (timestamps beyond 0001..9999 or infinite,
24:00:00, money beyond SQL Server's, a numeric with more digits than its decimal) are refused
when the capture is read, naming the line, the field and the column, and nothing is applied.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyodbc
import pytest

import applier
from applier.catalog.ddl import read_ddl
from applier.catalog.files import articles_toml
from applier.catalog.target import read_target
from applier.cli import main
from applier.config import load_config, with_overrides
from applier.errors import InputError
from applier.sources.formats.wal2json import Wal2json, Wal2json2
from tests.support import pgvalues as V
from tests.support.publisher import Publisher, differences, start_publisher

pytestmark = pytest.mark.integration


def as_text(connection_string: str, family: V.Family) -> list[tuple[Any, ...]]:
    """A family's rows, every column as text (the family's expression), read in a UTC session,
    sorted as text (an enum sorts by its declared order at the publisher, as text at a
    subscriber)."""
    conn = pyodbc.connect(connection_string, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute("SET TimeZone = 'UTC'")
        got = [tuple(r) for r in cur.execute(family.select_text()).fetchall()]
    finally:
        conn.close()
    return _sorted(got)


def _sorted(rows: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(rows, key=lambda r: [(v is None, v) for v in r])


def _write(pub: Publisher, families: list[V.Family]) -> None:
    for f in families:
        for tx in f.insert_transactions():
            pub.transaction(*tx)
    for f in families:
        for tx in f.changes():
            pub.transaction(*tx)


def _published(pub: Publisher, folder: Path, name: str, families: list[V.Family]) -> dict[str, Any]:
    """The families created and written at the publisher, captured in both formats (version 1
    decoded in Asia/Kolkata, 2 in the server's America/St_Johns), their articles from the
    publisher's catalog, and each family's rows as text once everything committed."""
    pub.execute(*(f.ddl() for f in families))
    for v in (1, 2):
        pub.create_slot(f"{name}{v}")
    _write(pub, families)
    out: dict[str, Any] = {"families": families}
    for v, zone in ((1, "Asia/Kolkata"), (2, None)):
        out[f"v{v}"] = pub.capture(f"{name}{v}", folder / f"{name}.v{v}.jsonl", v, timezone=zone)
        pub.execute(("SELECT pg_drop_replication_slot(?)", f"{name}{v}"))
    out["catalog"] = catalog = read_target(pub.connection_string, [f.table for f in families])
    out["articles"] = folder / f"{name}.toml"
    out["articles"].write_text(articles_toml(catalog, "the publisher"), encoding="utf-8")
    out["expected"] = {f.table: as_text(pub.connection_string, f) for f in families}
    return out


@pytest.fixture(scope="module")
def publisher() -> Iterator[Publisher]:
    with start_publisher(timezone="America/St_Johns") as pub:
        pub.execute(*V.TYPES)
        yield pub


@pytest.fixture(scope="module")
def published(publisher: Publisher, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The families' captures and articles; the captures of the refused values; the articles
    of the tables whose types applier cannot carry."""
    folder = tmp_path_factory.mktemp("types")
    out = _published(publisher, folder, "types", V.FAMILIES)
    out["refused"] = _published(publisher, folder, "refused", V.REFUSED_VALUES)
    publisher.execute(*V.NOT_CARRIED_DDL)
    out["not_carried"] = read_target(publisher.connection_string, list(V.NOT_CARRIED))
    return out


def test_every_family_is_an_article_with_its_mapped_types(published: dict[str, Any]) -> None:
    catalog = published["catalog"]
    assert catalog.problems == ()
    assert catalog.names == tuple(f.table for f in V.FAMILIES)
    for f in V.FAMILIES:
        a = catalog.article(f.table)
        assert {c.name: str(c.type) for c in a.columns} == f.mapped(), f.table
    notes = "\n".join(catalog.notes)
    assert "column e: enum mood: carried as its label text (nvarchar(63))" in notes
    # a domain over a domain over numeric(10,2), NOT NULL from the inner domain
    domains = catalog.article("public.t_domain")
    assert str(domains.column("deep").type) == "decimal(10,2)" and not domains.column("deep").nullable
    assert "column dm: domain mood_d over enum mood: carried as its label text" in notes


def _round_trip(spark: Any, pg: Any, published: dict[str, Any], database: str) -> None:
    """Each capture applied at N = 4 into one database (the second run reuses the tables the
    first installed, emptied): CONVERGED, and every table equal to the publisher's."""
    target = pg.subscriber(database)
    conn = pyodbc.connect(target.connection_string, autocommit=True)
    conn.execute(f"ALTER DATABASE {database} SET TimeZone = 'Pacific/Chatham'")  # nobody's zone
    conn.close()
    config = with_overrides(load_config(published["articles"]), run={"streams": 4})
    expected = published["expected"]
    for version in (1, 2):
        endpoint = pg.endpoint(database)
        result = applier.run(
            config,
            dataclasses.replace(endpoint, reuse_tables=version > 1),
            spark=spark,
            changes=published[f"v{version}"],
            changes_format="wal2json" if version == 1 else "wal2json2",
        )
        (sub,) = result.subscriptions
        assert sub.verdict is applier.Verdict.CONVERGED, (version, sub.check.reason or sub.check.to_json())
        assert sub.check.rows_found == sum(len(rows) for rows in expected.values()), version
        for f in published["families"]:
            # Every table equals the publisher's, but for the rows holding a NaN or ±Infinity
            # (wal2json writes null): those, and only those, differ, holding NULL in those cells.
            lost = [r for r in expected[f.table] if f.lost & set(r)]
            assert bool(lost) is bool(f.lost), f.table
            missing, extra = differences(expected[f.table], as_text(target.connection_string, f))
            nulled = [tuple(None if v in f.lost else v for v in r) for r in lost]
            assert _sorted(missing) == _sorted(lost), (version, f.table)
            assert _sorted(extra) == _sorted(nulled), (version, f.table)


def test_every_family_round_trips_in_both_formats_at_four_streams(
    spark: Any, pg: Any, published: dict[str, Any]
) -> None:
    _round_trip(spark, pg, published, "types31")


@pytest.mark.e2e
def test_every_code_point_round_trips(
    spark: Any, pg: Any, publisher: Publisher, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Every code point PostgreSQL's UTF8 accepts (1,112,062: all but NUL and the surrogates),
    a plane a row, in both formats."""
    every = _published(publisher, tmp_path_factory.mktemp("every"), "every", [V.EVERY_CODE_POINT])
    assert sum(len(v or "") for v in V.EVERY_CODE_POINT.cols[0].values) == 0x110000 - 0x800 - 1
    _round_trip(spark, pg, every, "types31_every")


def test_wal2json_writes_nan_and_infinities_as_null(published: dict[str, Any]) -> None:
    """The publisher holds them (the family's rows as text), the capture holds null: nothing
    in it tells them from a NULL, so they arrive NULL (the one loss of the round trip)."""
    (special,) = [f for f in V.FAMILIES if f.lost]
    held = {v for r in published["expected"][special.table] for v in r}
    assert special.lost <= held
    for version in (1, 2):
        lines = Path(published[f"v{version}"]).read_text(encoding="utf-8").splitlines()
        special_lines = [ln for ln in lines if '"t_special"' in ln]
        assert special_lines and not any("NaN" in ln or "Infinity" in ln for ln in special_lines)


def test_applier_capture_says_what_becomes_of_nan_and_infinities(
    publisher: Publisher, published: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the user is told about that loss. ``applier capture --snapshot`` refuses a row
    holding a NaN or ±Infinity, naming the table, key, column and value (which the publisher's
    row holds), and drops the slot it made. Without ``--snapshot``, where wal2json does not take
    numeric-data-types-as-string (2.5, here), one warning names the columns it can hit, on
    stderr and in ``FILE.meta``; and what it says is what the capture then holds: null where the
    publisher holds NaN or ±Infinity (with 2.6, their texts)."""
    (special,) = [f for f in V.FAMILIES if f.lost]
    out = tmp_path / "special.jsonl"
    args = ["capture", "--source", publisher.connection_string, "--slot", "told31", "--format", "wal2json2",
            "--tables", special.table, "--out", str(out)]  # fmt: skip
    snapshot = tmp_path / "snap.jsonl"
    assert main([*args, "--create-slot", "--snapshot", str(snapshot)]) == 2
    err = capsys.readouterr().err.strip()
    m = re.fullmatch(
        r"applier capture: --snapshot: public\.t_special key \(id=(\d+)\): column '(\w+)' \([\w(),]+\): "
        r"'([-\w]+)' has no equivalent at a SQL Server subscriber's decimal/float "
        r"\(slot told31 dropped again: nothing was captured\)",
        err,
    )
    assert m, err
    key, column, value = m.groups()
    assert value in special.lost
    assert publisher.rows(f"SELECT {column}::text FROM {special.table} WHERE id = ?", int(key)) == [(value,)]
    assert publisher.rows("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'told31'") == [(0,)]
    assert not snapshot.exists() and not snapshot.with_name("snap.jsonl.tmp").exists()

    assert main([*args, "--create-slot"]) == 0
    warnings = [
        ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("applier capture: warning:")
    ]
    try:
        takes = publisher.takes_numbers_as_strings("told31")
        (meta,) = [json.loads(x) for x in Path(f"{out}.meta").read_text(encoding="utf-8").splitlines()]
        assert meta["numeric-data-types-as-string"] is takes
        if takes:
            assert warnings == [] and meta["warning"] is None
        else:
            columns = ["public.t_special.r (real)", "public.t_special.f (double precision)",
                       "public.t_special.n (numeric)"]  # fmt: skip
            assert meta["nan_as_null_columns"] == columns
            assert warnings == [f"applier capture: warning: {meta['warning']}"]
            assert f"in {', '.join(columns)} arrives as NULL" in warnings[0]
            assert "wal2json 2.6 or later" in warnings[0]
        # every row rewritten as it is: the capture holds what the warning said
        publisher.execute(f"UPDATE {special.table} SET r = r, f = f, n = n")
        assert main(args) == 0
    finally:
        publisher.execute("SELECT pg_drop_replication_slot('told31')")
    captured = {}
    for line in out.read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        if doc["action"] == "U":
            values = {c["name"]: c["value"] for c in doc["columns"]}
            captured[values["id"]] = values
    held = publisher.rows(f"SELECT id, r::text, f::text, n::text FROM {special.table}")
    assert len(captured) == len(held) == special.rows
    for id_, *texts in held:
        for name, text in zip(("r", "f", "n"), texts, strict=True):
            got = captured[id_][name]
            if text in special.lost:
                assert got == (text if takes else None), (id_, name)
            else:
                assert got == (None if text is None else (text if takes else int(text))), (id_, name)


def _parse_each(fmt: type[Wal2json] | type[Wal2json2], articles_file: Path, capture: Path) -> list[str]:
    """Every line of a capture read alone: the error of each line that is refused."""
    config = load_config(articles_file)
    reader = fmt({a.name: a for a in config.articles})
    errors = []
    for i, line in enumerate(capture.read_text(encoding="utf-8").splitlines(), 1):
        try:
            list(reader.parse(line, f"{capture.name}:{i}"))
        except InputError as e:
            errors.append(str(e))
    return errors


@pytest.mark.parametrize("version", [1, 2])
def test_values_a_subscriber_cannot_hold_are_refused_when_read(
    published: dict[str, Any], version: int
) -> None:
    """Each refused value's line says, on one line, the line, the field, the column and why."""
    refused = published["refused"]
    fmt = Wal2json if version == 1 else Wal2json2
    errors = _parse_each(fmt, refused["articles"], refused[f"v{version}"])
    wanted = [m for f in V.REFUSED_VALUES for m in f.refusals]
    assert len(errors) == len(wanted), "\n".join(errors)
    for error, message in zip(errors, wanted, strict=True):
        assert "\n" not in error and f"refused.v{version}.jsonl:" in error
        assert message in error, error


def test_a_capture_with_a_refused_value_applies_nothing(
    spark: Any, pg: Any, published: dict[str, Any]
) -> None:
    refused = published["refused"]
    target = pg.subscriber("types31_refused")
    config = with_overrides(load_config(refused["articles"]), run={"streams": 4})
    with pytest.raises(InputError) as e:
        applier.run(config, target, spark=spark, changes=refused["v2"], changes_format="wal2json2")
    message = str(e.value)
    assert "nothing applied" in message
    assert (
        "refused.v2.jsonl:2: columns[1].value: column 'ts' (datetime2(6)): 'infinity' has no equivalent"
        in message
    )
    conn = pyodbc.connect(target.connection_string, autocommit=True)
    try:
        tables = (
            conn.cursor().execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'r\\_%'").fetchone()[0]
        )
    finally:
        conn.close()
    assert tables == 0


@pytest.mark.parametrize("source", ["catalog", "ddl"])
def test_types_applier_cannot_carry_are_refused_when_the_articles_are_made(
    published: dict[str, Any], source: str
) -> None:
    """``articles --from-target`` (the publisher's catalog) and ``--from-ddl --dialect postgres``
    (the same statements as a script) leave each such column out, or skip the table whose key
    it is, with one line naming the table, the column, its type and why."""
    if source == "catalog":
        catalog = published["not_carried"]
    else:
        script = ";\n".join(V.NOT_CARRIED_DDL) + ";\n"
        catalog = read_ddl(script, "postgres", "types.sql", list(V.NOT_CARRIED))
    assert catalog.names == ("public.nc_types",)
    assert catalog.article("public.nc_types").column_names == ("id",)
    by_column = {re.search(r": (?:key )?column (\w+) \(", p)[1]: p for p in catalog.problems}  # type: ignore[index]
    assert set(by_column) == set(V.NOT_CARRIED_WHY), catalog.problems
    for column, why in V.NOT_CARRIED_WHY.items():
        p = by_column[column]
        assert "\n" not in p and why in p and "public.nc_" in p, p
