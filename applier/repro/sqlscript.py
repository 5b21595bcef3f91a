"""SQL a DBA runs by hand: set-up scripts and the N sessions' statements interleaved.

:func:`interleaved` turns a recorded schedule (``schedule.jsonl``) and the commands it ran into
one script in schedule order: each statement under a comment naming its session (stream),
step, round and command, its values rendered as literals; a ``BEGIN`` where a session starts
a transaction, ``COMMIT`` / ``ROLLBACK`` where the schedule has them. applier's own progress
rows are left out (comments say where they were written). Run it with one client session per
stream, pasting each statement into the session the comment names, in order.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from applier.articles import Article
from applier.dialects.base import Dialect
from applier.plan.calls import Planner


def literal(dialect: Dialect, value: Any) -> str:
    """A bound value as a SQL literal of the dialect."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return dialect.bool_literal(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
            return dialect.literal(text)
        return repr(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, bytes | bytearray | memoryview):
        return dialect.bytes_literal(bytes(value))
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return dialect.literal(value.isoformat())
    return dialect.literal(str(value))


def inline(dialect: Dialect, sql: str, params: Sequence[Any]) -> str:
    """``sql`` with each ``?`` marker (outside quotes) replaced by its value as a literal."""
    out: list[str] = []
    it = iter(params)
    quote: str | None = None
    for ch in sql:
        if quote is not None:
            out.append(ch)
            if ch == quote:
                quote = None
        elif ch in ("'", '"'):
            quote = ch
            out.append(ch)
        elif ch == "?":
            try:
                out.append(literal(dialect, next(it)))
            except StopIteration:
                raise ValueError(f"more markers than values in {sql!r}") from None
        else:
            out.append(ch)
    if next(it, _END) is not _END:
        raise ValueError(f"more values than markers in {sql!r}")
    return "".join(out)


_END = object()


def canonical_row(article: Article, rec: Mapping[str, Any]) -> dict[str, Any]:
    """A change record (images as objects) as the planner reads a command: validated and
    completed as a change file's records are (``changed`` derived where the record has none)."""
    from applier.sources.canonical import validate_record

    row = validate_record(rec, {article.name: article}, f"lsn {rec.get('lsn')}")
    return row._asdict()


def statement(dialect: Dialect, planner: Planner, article: Article, rec: Mapping[str, Any]) -> str | None:
    """The statement that applies one command, values inlined (None: not replicated)."""
    if rec["op"] not in ("I", "U", "D"):
        return None
    call = planner.call(canonical_row(article, rec))
    return None if call is None else inline(dialect, call.sql, call.params)


def setup_script(
    dialect: Dialect,
    articles: Sequence[Article],
    snapshot: Sequence[Mapping[str, Any]],
    between: Sequence[str] = (),
) -> str:
    """Schemas and tables, then ``between`` (procedure and custom SQL scripts, as they are),
    then the snapshot's rows as INSERTs, then the subscriber's constraints."""
    from applier.values import to_param

    tables: list[tuple[str, bool]] = [(f"-- {dialect.name}: the subscriber's tables", False)]
    tables += [(dialect.create_schema_sql(s), True) for s in sorted({a.schema for a in articles})]
    tables += [(dialect.create_table_sql(a), True) for a in articles]
    rows: list[tuple[str, bool]] = [(f"-- the initial snapshot: {len(snapshot)} row(s)", False)]
    by_name = {a.name: a for a in articles}
    for r in snapshot:
        a = by_name[r["article"]]
        values = [to_param(c.type, r["image"].get(c.name)) for c in a.replicated]
        cols = ", ".join(dialect.quote(c.name) for c in a.replicated)
        row = ", ".join(literal(dialect, v) for v in values)
        rows.append((f"INSERT INTO {dialect.table(a)} ({cols}) VALUES ({row})", True))
    rows += [(s, True) for s in dialect.constraint_sql(articles)]
    return "\n".join([dialect.script(tables), *between, dialect.script(rows)])


def interleaved(
    dialect: Dialect,
    articles: Sequence[Article],
    changes: Sequence[Mapping[str, Any]],
    schedule: Sequence[Mapping[str, Any]],
    title: str = "",
) -> str:
    """The sessions' statements in schedule order (see the module's doc)."""
    by_lsn = {int(r["lsn"]): r for r in changes}
    by_name = {a.name: a for a in articles}
    planner = Planner(dialect, articles)
    streams = sorted({int(s["stream"]) for s in schedule if s.get("stream") is not None})
    lines = [
        f"-- {title}".rstrip(),
        f"-- {len(streams)} sessions ({', '.join(f'session {s + 1} = stream {s}' for s in streams)}), "
        f"{len(schedule)} steps in schedule order.",
        "-- Run setup.sql (tables, procedures, snapshot) first; then open one client session per",
        "-- stream and run each statement below in the session its comment names, in this order.",
        "-- applier's progress rows are not needed and left out.",
        "",
    ]
    begin = dialect.BEGIN_SQL
    end = dialect.STATEMENT_END
    open_tx: set[int] = set()
    for st in schedule:
        s = int(st["stream"])
        kind = st.get("kind")
        head = f"-- session {s + 1} (stream {s}), step {st.get('step')}, round {st.get('round')}"
        result = st.get("result", "ok")
        note = "" if result in ("ok", None) else f"  -- failed here: {_failure(result)}"
        if kind == "exec":
            lsns = [int(x) for x in st.get("lsns") or ()]
            if not lsns:
                lines.append(f"{head}: applier's progress row{note}")
                continue
            for x in lsns:
                rec = by_lsn.get(x)
                if rec is None:
                    lines.append(f"{head}: lsn {x} (not in the change file)")
                    continue
                sql = statement(dialect, planner, by_name[rec["article"]], rec)
                if sql is None:
                    lines.append(f"{head}: lsn {x} {rec['op']} {rec['article']} (not replicated)")
                    continue
                if s not in open_tx:
                    lines += [f"{head}: starts a transaction", begin + end]
                    open_tx.add(s)
                lines += [
                    f"{head}: lsn {x} xact {rec['xact_seqno']} {rec['op']} {rec['article']}{note}",
                    sql + end,
                ]
        elif kind in ("commit", "rollback"):
            word = "COMMIT" if kind == "commit" else "ROLLBACK"
            if s in open_tx:
                lines += [f"{head}: {kind}{note}", word + end]
                open_tx.discard(s)
            else:
                lines.append(f"{head}: {word} (nothing of the stream's own open){note}")
        else:
            lines.append(f"{head}: {kind}{note}")
        lines.append("")
    for s in sorted(open_tx):
        lines.append(f"-- session {s + 1} (stream {s}) still has a transaction open at the end")
    return "\n".join(lines).rstrip() + "\n"


def _failure(result: Any) -> str:
    if isinstance(result, Mapping):
        return f"{result.get('class')} {result.get('code')}: {' '.join(str(result.get('message') or '').split())[:200]}"
    return json.dumps(result)
