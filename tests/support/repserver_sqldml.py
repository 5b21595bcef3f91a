"""Seed 004_ed0e90fd88e67f92.txt (Replication Server rs_sqldml): SQL statements on ``dbo.st`` at
threshold 50, each followed by the rows it changed. Applied on PostgreSQL
(tests/integration/test_repserver_sqldml.py) and Babelfish (tests/tsql/test_repserver.py), whose
docstrings give the cases."""

from __future__ import annotations

ART = "dbo.st"
GROUPS = {
    "a": range(1, 50),
    "b": range(101, 151),
    "c": range(201, 252),
    "d": range(301, 351),
    "e": range(401, 452),
}


def image(i: int, grp: str, n: int) -> dict:
    """A row of ``dbo.st``."""
    return {"id": i, "grp": grp, "n": n}


def stream() -> list[dict]:
    """The seed's stream: six statements (groups a to f) each followed by its rows; the
    subscribers start from every row of :data:`GROUPS` (``image(i, grp, i)``)."""
    out: list[dict] = []

    def stmt(xact: int, payload: dict, rows_: list[dict]) -> None:
        out.append(
            {
                "lsn": xact << 20 | 1,
                "xact_seqno": xact,
                "command_id": 1,
                "article": ART,
                "op": "SQL",
                "sqldml": payload,
            }
        )
        for j, r in enumerate(rows_, 2):
            out.append({"lsn": xact << 20 | j, "xact_seqno": xact, "command_id": j, "article": ART, **r})

    def upd(grp: str, ids) -> list[dict]:  # type: ignore[no-untyped-def]
        return [{"op": "U", "before": image(i, grp, i), "after": image(i, grp, i + 1)} for i in ids]

    plus_one = {"operator": "U", "set": "n = n + 1"}
    stmt(1, {**plus_one, "category": "C1", "where": "grp = 'a'", "rowcount": 49}, upd("a", GROUPS["a"]))
    stmt(2, {**plus_one, "category": "C1", "where": "grp = 'b'", "rowcount": 50}, upd("b", GROUPS["b"]))
    stmt(
        3,
        {"operator": "D", "category": "C1", "where": "grp = 'c'", "rowcount": 51},
        [{"op": "D", "before": image(i, "c", i)} for i in GROUPS["c"]],
    )
    stmt(4, {**plus_one, "category": "C2", "where": "grp = 'd'", "rowcount": 50}, upd("d", GROUPS["d"]))
    # The publisher updated 50 rows of group e; the subscribers also hold id 451 in group e.
    stmt(5, {**plus_one, "category": "C1", "where": "grp = 'e'", "rowcount": 50}, upd("e", range(401, 451)))
    stmt(
        6,
        {
            "operator": "I",
            "category": "C1",
            "insert_column": "id, grp, n",
            "select": "id + 1000, 'f', n",
            "from": "dbo.st",
            "where": "grp = 'b'",
            "rowcount": 50,
        },
        [{"op": "I", "after": image(i + 1000, "f", i + 1)} for i in GROUPS["b"]],
    )
    return out
