"""Small seeded streams cut into segments by barrier events, and the row changes they must make.

For the kill -9 tests of streams with a schema change, an rs_sqldml statement, an applied
procedure, or a filtered subscription (``tests/faults/test_barrier_resume.py``,
``tests/tsql/test_faults.py``). One article ``dbo.<name>(id int key, grp nvarchar(4), n int)``,
version 2 adding ``extra nvarchar(20)``. The traffic is non-idempotent at the subscriber's
audit: every update increments ``n`` (a row's (operation, key) is counted once per command
that changed it), inserts take fresh keys in group ``a`` and deletes take rows of group ``a``,
so group ``b`` keeps its rows for the statement and the procedure (each ``n = n + delta`` at the
subscriber: applied twice, the rows' values show it too).

:meth:`Stream.expected` is the (operation, key) multiset an audit trigger must hold after the
stream, snapshot included, for a subscription whose where clause is ``where`` (a Python
predicate over an image mirroring it): routed by before and after image as seed 000 says.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import applier
from applier.report.json import subscription_report
from tests.support.killing import audited, once_each
from tests.support.subscriber import rows

Image = dict[str, Any]
Where = Callable[[Image], bool]

B_ROWS = 60  # group b: over the rs_sqldml threshold (50)

# PostgreSQL: the audit trigger (every row change that committed, with its key) and the applied
# procedure (adds delta to n of the rows whose id is in [lo, hi]: not idempotent).
PG_CUSTOM = """
DROP TABLE IF EXISTS "dbo"."audit_{name}";
CREATE TABLE "dbo"."audit_{name}" (op char(1) NOT NULL, id integer NOT NULL);
CREATE OR REPLACE FUNCTION "dbo"."audit_{name}"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO "dbo"."audit_{name}" VALUES ('D', OLD.id);
        RETURN OLD;
    END IF;
    INSERT INTO "dbo"."audit_{name}" VALUES (left(TG_OP, 1), NEW.id);
    RETURN NEW;
END
$$;
CREATE TRIGGER "audit_{name}" AFTER INSERT OR UPDATE OR DELETE ON "dbo"."{name}"
    FOR EACH ROW EXECUTE FUNCTION "dbo"."audit_{name}"();
CREATE OR REPLACE PROCEDURE "dbo"."bump_{name}"(lo integer, hi integer, delta integer)
LANGUAGE sql AS $$ UPDATE "dbo"."{name}" SET n = n + delta WHERE id BETWEEN lo AND hi $$;
"""

# T-SQL: triggers fire once per statement (rows in inserted / deleted).
TSQL_CUSTOM = """
DROP TABLE IF EXISTS [dbo].[audit_{name}];
GO
CREATE TABLE [dbo].[audit_{name}] (op char(1) NOT NULL, id int NOT NULL);
GO
CREATE TRIGGER [dbo].[audit_{name}_trg] ON [dbo].[{name}] AFTER INSERT, UPDATE, DELETE AS
BEGIN
    SET NOCOUNT ON;
    IF EXISTS (SELECT * FROM inserted) AND EXISTS (SELECT * FROM deleted)
        INSERT INTO [dbo].[audit_{name}] (op, id) SELECT 'U', id FROM inserted;
    ELSE
    BEGIN
        INSERT INTO [dbo].[audit_{name}] (op, id) SELECT 'I', id FROM inserted;
        INSERT INTO [dbo].[audit_{name}] (op, id) SELECT 'D', id FROM deleted;
    END
END
GO
CREATE PROCEDURE [dbo].[bump_{name}] @lo int, @hi int, @delta int AS
BEGIN
    SET NOCOUNT ON;
    UPDATE [dbo].[{name}] SET n = n + @delta WHERE id BETWEEN @lo AND @hi;
END
"""

CONFIG = """
[run]
subscription = "{name}"
streams = {streams}
commit_batch_size = {batch}

[[articles]]
name = "dbo.{name}"
columns = [
  {{ name = "id", type = "int", key = true }},
  {{ name = "grp", type = "nvarchar(4)" }},
  {{ name = "n", type = "int" }},
]
"""

# A [[subscriptions]] entry: the subscription filtered by ``where`` in the database ``target`` (a
# TOML string: JSON's quoting).
FILTERED = """
[[subscriptions]]
name = "{name}"
target = {target}
[[subscriptions.articles]]
name = "dbo.{name}"
where = "{where}"
"""


def everything(_: Image) -> bool:
    return True


@dataclass
class Stream:
    """A stream being written: the subscriber's rows as the publisher has them, and the records."""

    name: str
    seed: int
    rows: int = 100
    snapshot: list[Image] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    state: dict[int, Image] = field(default_factory=dict)
    version: int = 1
    xact: int = 0
    fresh: int = 1000

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.fresh = max(self.fresh, self.rows)  # inserted keys follow every snapshot key
        for i in range(1, self.rows + 1):
            image = {"id": i, "grp": "b" if i <= B_ROWS else "a", "n": i}
            self.snapshot.append(dict(image))
            self.state[i] = image
        # the keys in order (fresh keys are the largest, so the state's order is the sorted one),
        # all and group a's, kept as rows come and go: a stream of 50,000 commands over 5,000 rows
        # draws its keys in O(1)
        self._keys = list(self.state)
        self._a_keys = [k for k, v in self.state.items() if v["grp"] == "a"]

    @property
    def article(self) -> str:
        return f"dbo.{self.name}"

    # -- records ----------------------------------------------------------------------------
    def _add(self, ops: list[dict[str, Any]]) -> None:
        """One transaction of ``ops`` (each its op and images, or an event's payload)."""
        self.xact += 1
        for cid, op in enumerate(ops, 1):
            rec = {"lsn": self.xact << 20 | cid, "xact_seqno": self.xact, "command_id": cid}
            rec.update(article=self.article, schema_version=self.version, **op)
            self.records.append(rec)

    def _increment(self, key: int, delta: int = 1) -> dict[str, Any]:
        before = self.state[key]
        after = {**before, "n": before["n"] + delta}
        if self.version > 1 and self.rng.random() < 0.5:
            after["extra"] = f"x{self.xact}"  # the added column, used
        self.state[key] = after
        return {"op": "U", "before": dict(before), "after": dict(after)}

    def traffic(self, transactions: int) -> None:
        """Transactions of one to three commands: increments (mostly), inserts and deletes in
        group a."""
        for _ in range(transactions):
            ops: list[dict[str, Any]] = []
            for _ in range(self.rng.randint(1, 3)):
                r = self.rng.random()
                if r < 0.15 or not self._a_keys:
                    self.fresh += 1
                    image: Image = {"id": self.fresh, "grp": "a", "n": 0}
                    if self.version > 1:
                        image["extra"] = f"new{self.fresh}"
                    self.state[self.fresh] = image
                    self._keys.append(self.fresh)
                    self._a_keys.append(self.fresh)
                    ops.append({"op": "I", "after": dict(image)})
                elif r < 0.25:
                    key = self.rng.choice(self._a_keys)
                    self._a_keys.remove(key)
                    self._keys.remove(key)
                    ops.append({"op": "D", "before": dict(self.state.pop(key))})
                else:
                    ops.append(self._increment(self.rng.choice(self._keys)))
            self._add(ops)

    def add_column(self) -> None:
        """A schema change: ``extra nvarchar(20)`` added (version 2); later rows use it."""
        self.version += 1
        for image in self.state.values():
            image["extra"] = None
        self._add(
            [
                {
                    "op": "DDL",
                    "ddl": {"action": "add_column", "column": {"name": "extra", "type": "nvarchar(20)"}},
                }
            ]
        )

    def statement(self) -> None:
        """rs_sqldml ``UPDATE ... SET n = n + 1 WHERE grp = 'b'`` (C1, over the threshold), with
        its rows."""
        keys = sorted(k for k, v in self.state.items() if v["grp"] == "b")
        event = {
            "operator": "U",
            "category": "C1",
            "set": "n = n + 1",
            "where": "grp = 'b'",
            "rowcount": len(keys),
        }
        rows = []
        for k in keys:
            before = self.state[k]
            self.state[k] = {**before, "n": before["n"] + 1}
            rows.append({"op": "U", "before": dict(before), "after": dict(self.state[k])})
        self._add([{"op": "SQL", "sqldml": event}, *rows])

    def procedure(self, lo: int, hi: int, delta: int) -> None:
        """The applied procedure ``bump_<name>(lo, hi, delta)``, with its rows."""
        keys = sorted(k for k in self.state if lo <= k <= hi)
        event = {"procedure": f"dbo.bump_{self.name}", "params": [lo, hi, delta], "rowcount": len(keys)}
        rows = []
        for k in keys:
            before = self.state[k]
            self.state[k] = {**before, "n": before["n"] + delta}
            rows.append({"op": "U", "before": dict(before), "after": dict(self.state[k])})
        self._add([{"op": "PROC", "procedure": event}, *rows])

    # -- files and figures --------------------------------------------------------------------
    def write(self, folder: Path) -> tuple[Path, Path]:
        """The change and snapshot files (JSON Lines)."""
        changes, snap = folder / f"{self.name}-changes.jsonl", folder / f"{self.name}-snapshot.jsonl"
        changes.write_text("".join(json.dumps(r) + "\n" for r in self.records), encoding="utf-8")
        snap.write_text(
            "".join(json.dumps({"article": self.article, "image": i}) + "\n" for i in self.snapshot),
            encoding="utf-8",
        )
        return changes, snap

    def transactions_before(self) -> int:
        """Row transactions before the first event (the first segment's)."""
        first = next(r["xact_seqno"] for r in self.records if r["op"] in ("DDL", "SQL", "PROC"))
        return int(first) - 1

    def expected(self, where: Where = everything) -> Counter[tuple[str, int]]:
        """The (operation, key) of every row change the subscriber's audit must hold: the
        snapshot's rows in the filter inserted, then each command as the subscription receives
        it (a statement and a procedure change their rows as their row commands say)."""
        out: Counter[tuple[str, int]] = Counter(("I", i["id"]) for i in self.snapshot if where(i))
        for r in self.records:
            op = r["op"]
            if op == "I" and where(r["after"]):
                out["I", r["after"]["id"]] += 1
            elif op == "D" and where(r["before"]):
                out["D", r["before"]["id"]] += 1
            elif op == "U":
                bm, am = where(r["before"]), where(r["after"])
                if bm and am:
                    out["U", r["after"]["id"]] += 1
                elif bm:
                    out["D", r["before"]["id"]] += 1
                elif am:
                    out["I", r["after"]["id"]] += 1
        return out

    def final(self, where: Where = everything) -> dict[int, Image]:
        """The rows the subscriber must hold at the end."""
        return {k: v for k, v in self.state.items() if where(v)}


@dataclass
class Case:
    """One stream's files, its subscriber and the command line of its run."""

    kind: str
    name: str
    stream: Stream
    target: Any  # the subscriber's database (an Endpoint)
    cfg_file: Path
    changes: Path
    snapshot: Path
    custom: Path
    args: list[str]
    filter: Where = everything  # the filtered subscription's where clause, mirrored

    @property
    def where(self) -> Where:
        return self.filter if self.kind == "filtered" else everything

    def run(self, spark: Any, pg: Any, resume: bool) -> Any:
        """The run in this process; its one subscription's result."""
        result = applier.run(
            applier.load_config(self.cfg_file),
            pg if self.kind == "filtered" else self.target,
            spark=spark,
            changes=self.changes,
            snapshot=self.snapshot,
            custom_sql=[self.custom],
            resume=resume,
        )
        sub = result.subscriptions[0]
        return sub, subscription_report(sub, result.settings)

    def check(self, sub: Any, report: dict[str, Any]) -> None:
        """Converged, each of the stream's row changes in the audit once, and the statement's and
        the procedure's increments once."""
        assert report["verdict"] == "converged", (report["reason"], report.get("divergent", [])[:3])
        if self.kind == "sqldml":
            assert [s["sent_as"] for s in sub.statements] == ["statement"], sub.statements
        if self.kind == "proc":
            assert [p["sent_as"] for p in sub.procedures] == ["procedure"], sub.procedures
        wrong = once_each(
            self.stream.expected(self.where), audited(self.target, f'"dbo"."audit_{self.name}"')
        )
        assert wrong is None, wrong
        if self.kind == "filtered":  # rows did migrate both ways
            assert sub.routing.get("U>D", 0) > 0 and sub.routing.get("U>I", 0) > 0, sub.routing
        else:
            got = dict(rows(self.target, f'SELECT id, n FROM "dbo"."{self.name}" WHERE id <= 60'))
            assert got == {k: v["n"] for k, v in self.stream.final().items() if k <= 60}


def make_case(
    pg: Any, tmp: Path, kind: str, name: str, stream: Stream, streams: int, batch: int, even: Where
) -> Case:
    """The files of ``stream`` (of kind ddl, sqldml, proc or filtered: the last subscribed where
    ``n % 2 = 0``, which ``even`` mirrors), its subscriber in ``pg`` and its command line."""
    changes, snapshot = stream.write(tmp)
    custom = tmp / f"{name}.sql"
    custom.write_text(PG_CUSTOM.format(name=name), encoding="utf-8")
    cfg_text = CONFIG.format(name=name, streams=streams, batch=batch)
    target = pg.endpoint()
    if kind == "filtered":
        target = pg.subscriber(name)
        cfg_text += FILTERED.format(name=name, target=json.dumps(target.connection_string), where="n % 2 = 0")
    cfg_file = tmp / f"{name}.toml"
    cfg_file.write_text(cfg_text, encoding="utf-8")
    args = ["--config", str(cfg_file), "--changes", str(changes), "--snapshot", str(snapshot)]
    args += ["--custom-sql", str(custom), "--target", pg.connection_string()]
    return Case(kind, name, stream, target, cfg_file, changes, snapshot, custom, args, even)
