"""Seed 001_97ed57accf070cd8.txt (Replication Server): schema changes mid-stream on ``dbo.sc``.
Old rows, add column, new rows (with values for the new column), drop column, more rows, a type
change (int -> decimal(12,2)), more rows. Applied on PostgreSQL
(tests/integration/test_repserver_schema.py), Babelfish (tests/tsql/test_repserver.py) and through
the public API (tests/integration/test_api_run.py)."""

from __future__ import annotations

ART = "dbo.sc"


def stream() -> list[dict]:
    """The seed's stream: 4 schema versions of ``dbo.sc`` (id, qty, note, old), rows between the
    changes; the snapshot it starts from holds ids 1 to 4 (version 1)."""
    out: list[dict] = []
    xact = 0

    def add(op: str, version: int, before: dict | None = None, after: dict | None = None, **extra) -> None:
        nonlocal xact
        xact += 1
        rec = {"lsn": xact << 20 | 1, "xact_seqno": xact, "command_id": 1, "article": ART, "op": op}
        rec["schema_version"] = version
        if before is not None:
            rec["before"] = before
        if after is not None:
            rec["after"] = after
        rec.update(extra)
        out.append(rec)

    # version 1: id, qty, note, old
    for i in range(5, 9):
        add("I", 1, after={"id": i, "qty": i, "note": f"n{i}", "old": "o"})
    add(
        "U",
        1,
        before={"id": 1, "qty": 1, "note": "n1", "old": "o"},
        after={"id": 1, "qty": 10, "note": "n1", "old": "o"},
    )
    add("DDL", 2, ddl={"action": "add_column", "column": {"name": "extra", "type": "nvarchar(20)"}})
    # version 2: + extra
    for i in range(9, 13):
        add("I", 2, after={"id": i, "qty": i, "note": f"n{i}", "old": "o", "extra": f"x{i}"})
    add(
        "U",
        2,
        before={"id": 2, "qty": 2, "note": "n2", "old": "o", "extra": None},
        after={"id": 2, "qty": 2, "note": "n2", "old": "o", "extra": "x2"},
    )
    add("D", 2, before={"id": 3, "qty": 3, "note": "n3", "old": "o", "extra": None})
    add("DDL", 3, ddl={"action": "drop_column", "column": "old"})
    # version 3: id, qty, note, extra
    for i in range(13, 16):
        add("I", 3, after={"id": i, "qty": i, "note": f"n{i}", "extra": f"x{i}"})
    add(
        "U",
        3,
        before={"id": 9, "qty": 9, "note": "n9", "extra": "x9"},
        after={"id": 9, "qty": 99, "note": "n9", "extra": "x9b"},
    )
    add("DDL", 4, ddl={"action": "alter_column_type", "column": "qty", "type": "decimal(12,2)"})
    # version 4: qty is decimal(12,2)
    add("I", 4, after={"id": 16, "qty": "16.50", "note": "n16", "extra": "x16"})
    add(
        "U",
        4,
        before={"id": 13, "qty": "13.00", "note": "n13", "extra": "x13"},
        after={"id": 13, "qty": "13.25", "note": "n13", "extra": "x13"},
    )
    return out
