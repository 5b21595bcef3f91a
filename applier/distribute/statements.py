"""Which subscriptions take an rs_sqldml statement as the statement, and which take its rows.

Seed 004 and DESIGN.md: at or above the threshold (default 50 rows) the statement is sent
instead of its rows where the subscriber may take it: category C1 anywhere, C2 only on a
full copy (warm standby / MSA), never on a filtered subscription. Below it, the rows. The
count check (subscriber row count against rs_rowcount, else roll back and apply the rows)
happens at apply time, not here.

One addition for filtered subscriptions: a C1 statement goes as the statement only when
every one of its rows reaches the subscription as the same operation. Otherwise the statement
would change rows the subscription does not hold the same way (an insert-select of rows
outside the filter, an update moving rows out of it: a delete there) with a row count that
can still equal rs_rowcount, and the subscriber would diverge; so the rows go.
"""

from __future__ import annotations

from dataclasses import dataclass

from applier.records.events import SqlStatement

ROWS, STATEMENT = "rows", "statement"


@dataclass(frozen=True)
class Decision:
    send: str  # ROWS or STATEMENT
    reason: str


def decide(
    stmt: SqlStatement, threshold: int, full_copy: bool, rows_routed: int, rows_migrated: int
) -> Decision:
    """``rows_routed``: the statement's rows this subscription receives; ``rows_migrated``: how
    many of them the filter turned into another operation."""
    if stmt.rowcount < threshold:
        return Decision(ROWS, f"{stmt.rowcount} rows, below the threshold of {threshold}")
    if stmt.category == "C2" and not full_copy:
        return Decision(ROWS, "C2 statements go as statements only to a full copy")
    if not full_copy and (rows_migrated or rows_routed != stmt.rowcount):
        kept = rows_routed - rows_migrated
        return Decision(
            ROWS, f"the row filter keeps {kept} of its {stmt.rowcount} rows as they are: the rows go instead"
        )
    return Decision(STATEMENT, f"{stmt.category}, {stmt.rowcount} rows (threshold {threshold})")
