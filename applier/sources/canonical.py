"""Validation of canonical change records (:mod:`applier.records.schema`).

``validate_record`` turns one record from any reader into a :class:`ChangeRow` or raises
InputError naming the place (file, line, lsn, column).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

from applier.articles import Article
from applier.errors import InputError
from applier.records.events import AppliedProcedure, SchemaChange, Schemas, SqlStatement, StreamEvent
from applier.records.schema import EVENT_OPS, ROW_OPS, ChangeRow, SnapshotRow
from applier.values import ValueError_, dumps_image, key_text, validate_encoded

# Each position field's range: the Spark type it travels as (lsn and xact_seqno bigint,
# command_id and schema_version int), positive where 0 would mean "nothing yet".
POSITION_RANGES = {
    "lsn": (1, 2**63 - 1),
    "xact_seqno": (1, 2**63 - 1),
    "command_id": (0, 2**31 - 1),
    "schema_version": (1, 2**31 - 1),
    "seq": (0, 2**31 - 1),  # a command's sub-position at its lsn (formats.canonical)
}


def position(rec: Mapping[str, Any], name: str, place: str, default: int | None = None) -> int:
    """A record's position field (lsn, xact_seqno, command_id, schema_version, seq): an integer
    in its range (:data:`POSITION_RANGES`), or ``default`` where it is missing or null;
    InputError naming ``place`` and the field otherwise."""
    v = rec.get(name)
    if v is None:
        if default is not None:
            return default
        raise InputError(f"{place}: missing field {name!r}")
    if isinstance(v, bool) or not isinstance(v, int):
        raise InputError(f"{place}: field {name!r} must be an integer, got {_shown(v)}")
    lo, hi = POSITION_RANGES[name]
    if not lo <= v <= hi:
        raise InputError(f"{place}: field {name!r} must be {lo}..{hi}, got {_shown(v)}")
    return v


def _shown(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _image(
    article: Article,
    raw: Any,
    where: str,
    *,
    full: bool,
    encoded: bool = False,
    absent: Collection[str] = (),
) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected an object of column values, got {type(raw).__name__}")
    cols = {c.name: c for c in article.replicated}
    unknown = [k for k in raw if k not in cols]
    if unknown:
        raise InputError(f"{where}: column {_shown(unknown[0])} is not a column of article {article.name}")
    out: dict[str, Any] = {}
    for k in article.key:
        if k not in raw or raw[k] is None:
            raise InputError(f"{where}: key column {k!r} is missing")
    for name, col in cols.items():
        if name not in raw:
            if name in absent:
                continue  # left out as unchanged: filled from the row's previous image later
            if full and not col.nullable:
                raise InputError(f"{where}: column {name!r} is missing (NOT NULL)")
            if not full:
                continue
            out[name] = None
            continue
        try:
            out[name] = raw[name] if encoded else validate_encoded(col, raw[name])
        except ValueError_ as e:
            raise InputError(f"{where}: {e}") from None
    return out


def _event(
    rec: Mapping[str, Any], op: str, name: str, lsn: int, where: str
) -> SchemaChange | AppliedProcedure | SqlStatement:
    """A DDL, SQL or PROC event's payload, decoded (where it is JSON text) and validated."""
    raw = rec.get({"DDL": "ddl", "SQL": "sqldml", "PROC": "procedure"}[op])
    if raw is None:
        raw = rec.get("after")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as e:
            raise InputError(f"{where}: {op} payload is not JSON: {e.msg}") from None
    if op == "DDL":
        version = rec.get("schema_version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 2:
            raise InputError(f"{where}: a DDL event needs the new schema_version (2 or more)")
        return SchemaChange.parse(name, lsn, version, raw, where)
    if op == "PROC":
        return AppliedProcedure.parse(raw, where)
    return SqlStatement.parse(raw, where)


def _head(
    rec: Any, articles: Mapping[str, Article], place: str
) -> tuple[int, int, int, int, str, Article, Any]:
    """A record's positions, its article and its op (not checked yet), or InputError."""
    if not isinstance(rec, Mapping):
        raise InputError(f"{place}: expected a JSON object, got {type(rec).__name__}")

    lsn = position(rec, "lsn", place)
    where = f"{place}: lsn {lsn}"
    xact = position(rec, "xact_seqno", place)
    cmd = position(rec, "command_id", place)
    version = position(rec, "schema_version", place, 1)
    name = rec.get("article")
    if not isinstance(name, str):
        got = "missing" if name is None else f"must be a string, got {_shown(name)}"
        raise InputError(f"{where}: field 'article' {got}")
    article = articles.get(name)
    if article is None:
        raise InputError(f"{where}: unknown article {_shown(name)} (known: {', '.join(sorted(articles))})")
    return lsn, xact, cmd, version, name, article, rec.get("op")


def validate_schema_change(rec: Any, articles: Mapping[str, Article], place: str) -> SchemaChange:
    """A DDL record -> its validated :class:`SchemaChange` (the checks and errors of
    :func:`validate_record`), its payload decoded once and not dumped to JSON text."""
    lsn, _, _, _, name, _, op = _head(rec, articles, place)
    if op != "DDL":
        raise InputError(f"{place}: lsn {lsn}: expected a DDL event, got op {_shown(op)}")
    change = _event(rec, op, name, lsn, f"{place}: lsn {lsn}")
    assert isinstance(change, SchemaChange)
    return change


def validate_event(
    rec: Any, articles: Mapping[str, Article], place: str, schemas: Schemas | None = None
) -> tuple[ChangeRow, StreamEvent]:
    """A DDL, SQL or PROC record -> its :class:`ChangeRow` (the payload as canonical JSON text)
    and its :class:`StreamEvent`, the payload decoded and parsed here once: the driver takes
    the event as it is (it is not decoded from the row again). A schema change that ``schemas``
    holds (the driver's scan parsed it) is that one, not parsed again."""
    lsn, xact, cmd, version, name, _, op = _head(rec, articles, place)
    where = f"{place}: lsn {lsn}"
    if op not in EVENT_OPS:
        raise InputError(f"{where}: expected a DDL, SQL or PROC event, got op {_shown(op)}")
    known = schemas.change(name, lsn) if op == "DDL" and schemas is not None else None
    payload = known if known is not None and known.version == version else _event(rec, op, name, lsn, where)
    text = json.dumps(payload.payload(), sort_keys=True, separators=(",", ":"))
    row = ChangeRow(lsn, xact, cmd, name, op, version, None, text, [], None, None)
    return row, StreamEvent(lsn, xact, name, op, version, payload)


def validate_record(
    rec: Any,
    articles: Mapping[str, Article],
    place: str,
    schemas: Schemas | None = None,
    encoded: bool = False,
    unchanged: Collection[str] = (),
) -> ChangeRow:
    """One decoded record -> its validated :class:`ChangeRow`, or InputError.

    With ``schemas``, a command of an article that has schema changes is validated against
    its ``schema_version``, which must be the version in effect at its lsn (seed 001).
    ``encoded``: the images' values were made by ``applier.values.encode`` against the article
    (a capture format's): their shape is checked, each value is not checked again.
    ``unchanged``: columns a capture left out of an update's after image as unchanged (not
    NULL: absent, and not changed); the capture's reader fills them in afterwards
    (:mod:`applier.sources.formats.unchanged`).
    """
    lsn, xact, cmd, version, name, article, op = _head(rec, articles, place)
    where = f"{place}: lsn {lsn}"
    if op in EVENT_OPS:
        return validate_event(rec, articles, place, schemas)[0]
    if op not in ROW_OPS:
        raise InputError(f"{where}: op must be I, U, D, DDL, SQL or PROC, got {_shown(op)}")
    if schemas is not None and schemas.has_changes(name):
        expected = schemas.version_at(name, lsn)
        if version != expected:
            raise InputError(
                f"{where}: {name} is at schema_version {expected} here (DDL events before lsn {lsn}), "
                f"the command says {version}"
            )
        at = schemas.at(name, version)
        assert at is not None
        article = at
    before = after = None
    if op in ("U", "D"):
        if rec.get("before") is None:
            raise InputError(f"{where}: op {op} needs a before image")
        before = _image(article, rec["before"], f"{where}: before", full=False, encoded=encoded)
    if op in ("I", "U"):
        if rec.get("after") is None:
            raise InputError(f"{where}: op {op} needs an after image")
        absent = unchanged if op == "U" else ()
        after = _image(article, rec["after"], f"{where}: after", full=True, encoded=encoded, absent=absent)
    changed: list[str] = []
    if op == "U":
        assert before is not None and after is not None
        raw_changed = rec.get("changed")
        if raw_changed is None:
            changed = [
                c
                for c in article.column_names
                if c not in unchanged and (c not in before or before[c] != after[c])
            ]
        else:
            if not isinstance(raw_changed, list) or not all(isinstance(c, str) for c in raw_changed):
                raise InputError(f"{where}: 'changed' must be a list of column names")
            bad = [c for c in raw_changed if c not in article.column_names]
            if bad:
                raise InputError(
                    f"{where}: changed column {_shown(bad[0])} is not a column of {article.name}"
                )
            changed = list(raw_changed)
        # A key column whose value differs is changed, whatever the record says.
        for k in article.key:
            if before[k] != after[k] and k not in changed:
                changed.append(k)
    elif op == "I":
        changed = list(article.column_names)
    return ChangeRow(
        lsn,
        xact,
        cmd,
        name,
        op,
        version,
        dumps_image(before) if before is not None else None,
        dumps_image(after) if after is not None else None,
        changed,
        key_text(article, before) if before is not None else None,
        key_text(article, after) if after is not None else None,
    )


def validate_snapshot_row(rec: Any, articles: Mapping[str, Article], place: str) -> SnapshotRow:
    if not isinstance(rec, Mapping):
        raise InputError(f"{place}: expected a JSON object, got {type(rec).__name__}")
    name = rec.get("article")
    article = articles.get(name) if isinstance(name, str) else None
    if article is None:
        raise InputError(f"{place}: unknown article {_shown(name)} (known: {', '.join(sorted(articles))})")
    image = _image(article, rec.get("image"), f"{place}: image", full=True)
    return SnapshotRow(article.name, key_text(article, image), dumps_image(image))
