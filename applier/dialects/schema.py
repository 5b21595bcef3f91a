"""Statements every dialect writes from templates: the progress table, schema changes (seed
001), the subscriber's constraints, rs_sqldml statements (seed 004), applied procedure calls,
and install scripts.

:class:`SchemaStatements` is a base of :class:`applier.dialects.base.Dialect`: each method
renders the dialect's template (``sql/<dialect>/``), or the one both dialects share
(``sql/common/``) where they write the same text; the dialects differ in their templates, never
in a branch here. The few Dialect methods these need are declared below and implemented there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from applier.articles import Article, Column, SqlType
from applier.records.events import SqlStatement


class SchemaStatements:
    """Templated statements of a dialect (see the module's docstring)."""

    # -- what the statements need from the dialect (implemented by Dialect) ------------
    def render(self, template: str, **ctx: Any) -> str:
        raise NotImplementedError

    def quote(self, ident: str) -> str:
        raise NotImplementedError

    def qualified(self, schema: str | None, name: str) -> str:
        raise NotImplementedError

    def table(self, article: Article) -> str:
        raise NotImplementedError

    def type_sql(self, t: SqlType) -> str:
        raise NotImplementedError

    def proc_ref(self, article: Article, op: str) -> str:
        raise NotImplementedError

    def create_schema_sql(self, schema: str) -> str:
        raise NotImplementedError

    def support_sql(self) -> list[str]:
        raise NotImplementedError

    def drop_table_sql(self, article: Article) -> list[str]:
        raise NotImplementedError

    # -- the progress table (applier.targets.progress) ----------------------------------
    PROGRESS_SCHEMA: ClassVar[str] = "applier"
    OWN_TABLES: ClassVar[tuple[str, ...]] = (
        "progress",
        "runs",
        "baselines",
        "ranges",
        "applied_commands",
    )  # in PROGRESS_SCHEMA
    RANGE_TABLE: ClassVar[str] = "ranges"  # the snapshot load's watermark (one of OWN_TABLES)
    APPLIED_TABLE: ClassVar[str] = "applied_commands"  # [run] audit_commands (one of OWN_TABLES)

    def progress_table(self) -> str:
        return self.qualified(self.PROGRESS_SCHEMA, self.OWN_TABLES[0])

    def _progress(self, template: str) -> str:
        return self.render(template, table=self.progress_table()).strip()

    def run_table(self) -> str:
        return self.qualified(self.PROGRESS_SCHEMA, self.OWN_TABLES[1])

    def baseline_table(self) -> str:
        return self.qualified(self.PROGRESS_SCHEMA, self.OWN_TABLES[2])

    def range_table(self) -> str:
        return self.qualified(self.PROGRESS_SCHEMA, self.RANGE_TABLE)

    def progress_ddl(self) -> list[str]:
        """Create the progress, runs, baselines and ranges tables (and the objects generated
        statements rely on)."""
        return [
            self.create_schema_sql(self.PROGRESS_SCHEMA),
            self._progress("progress_create.sql.j2"),
            self.render("run_create.sql.j2", table=self.run_table()).strip(),
            self.render("baseline_create.sql.j2", table=self.baseline_table()).strip(),
            self.render("range_create.sql.j2", table=self.range_table()).strip(),
            self.render("applied_create.sql.j2", table=self.applied_table()).strip(),
            *self.support_sql(),
        ]

    def applied_table(self) -> str:
        return self.qualified(self.PROGRESS_SCHEMA, self.APPLIED_TABLE)

    def applied_insert_sql(self) -> str:
        """Parameters: subscription, stream, round, lsns (the commit's command lsns, comma
        separated): the audit of ``[run] audit_commands``, committed with the commands."""
        return self.render("applied_insert.sql.j2", table=self.applied_table()).strip()

    def applied_clear_sql(self) -> str:
        """Parameter: subscription."""
        return f"DELETE FROM {self.applied_table()} WHERE {self.quote('subscription')} = ?"

    def range_insert_sql(self) -> str:
        """Parameters: subscription, range_no, row_count, layout."""
        return self.render("range_insert.sql.j2", table=self.range_table()).strip()

    def range_select_sql(self) -> str:
        """Parameter: subscription. Rows: range_no, row_count, layout."""
        return self.render("range_select.sql.j2", table=self.range_table()).strip()

    def range_clear_sql(self) -> str:
        """Parameter: subscription."""
        return self.render("progress_clear.sql.j2", table=self.range_table()).strip()

    def baseline_insert_sql(self) -> str:
        """Parameters: subscription, article, touched_keys, rest_rows, rest_digest."""
        return self.render("baseline_insert.sql.j2", table=self.baseline_table()).strip()

    def baseline_select_sql(self) -> str:
        """Parameter: subscription. Rows: article, touched_keys, rest_rows, rest_digest."""
        return self.render("baseline_select.sql.j2", table=self.baseline_table()).strip()

    def baseline_clear_sql(self) -> str:
        """Parameter: subscription."""
        return self.render("progress_clear.sql.j2", table=self.baseline_table()).strip()

    def run_upsert_sql(self) -> str:
        """Parameters: subscription, fingerprint, settings, phase, snapshot_rows."""
        return self.render("run_upsert.sql.j2", table=self.run_table()).strip()

    def run_select_sql(self) -> str:
        """Parameter: subscription. At most one row: fingerprint, settings, phase, snapshot_rows."""
        return self.render("run_select.sql.j2", table=self.run_table()).strip()

    def progress_upsert_sql(self) -> str:
        """Parameters: subscription, stream, last_lsn, last_round."""
        return self._progress("progress_upsert.sql.j2")

    def progress_select_sql(self) -> str:
        """Parameter: subscription. Rows: stream, last_lsn, last_round."""
        return self._progress("progress_select.sql.j2")

    def progress_clear_sql(self) -> str:
        """Parameter: subscription."""
        return self._progress("progress_clear.sql.j2")

    def progress_max_round_sql(self) -> str:
        """Parameter: subscription. One value: the last round committed, NULL for none."""
        return self._progress("progress_max_round.sql.j2")

    # -- schema changes, constraints, statements (seed 001, seed 004) ------------------
    def add_column_sql(self, article: Article, col: Column) -> str:
        return self.render(
            "add_column.sql.j2",
            table=self.table(article),
            col=self.quote(col.name),
            type=self.type_sql(col.type),
        ).strip()

    def drop_column_sql(self, article: Article, name: str) -> str:
        """Drop a column. ``name`` is also given unquoted: T-SQL first drops, by the catalog, the
        objects on the table that depend on the column (PostgreSQL drops those itself)."""
        return self.render(
            "drop_column.sql.j2", table=self.table(article), col=self.quote(name), name=name
        ).strip()

    def alter_type_sql(self, article: Article, col: Column) -> str:
        """Change a column's type; the stored values are converted by the subscriber's cast."""
        return self.render(
            "alter_column_type.sql.j2",
            table=self.table(article),
            col=self.quote(col.name),
            type=self.type_sql(col.type),
            nullable=col.nullable and col.name not in article.key,
        ).strip()

    def alter_sql(self, old: Article, new: Article) -> list[str]:
        """The statements that take the subscriber's table from shape ``old`` to ``new``."""
        before = {c.name: c for c in old.replicated}
        after = {c.name: c for c in new.replicated}
        out = [self.drop_column_sql(old, n) for n in before if n not in after]
        out += [
            self.alter_type_sql(new, c) for n, c in after.items() if n in before and before[n].type != c.type
        ]
        out += [self.add_column_sql(new, c) for n, c in after.items() if n not in before]
        return out

    def drop_procedure_sql(self, article: Article, op: str) -> str:
        """Drop the default procedure of op (its parameter list changes with the columns)."""
        return self.render("drop_procedure.sql.j2", proc=self.proc_ref(article, op)).strip()

    def rs_sqldml_sql(self, article: Article, stmt: SqlStatement) -> str:
        """rs_sqldml as one statement against the subscriber's table (the publisher's clauses)."""
        return self.render("rs_sqldml.sql.j2", table=self.table(article), s=stmt).strip()

    def call_procedure_sql(self, name: str, n_params: int) -> str:
        """Call an applied procedure by its replicated name (``schema.proc`` or ``proc``) with
        ``n_params`` bound parameters."""
        schema, _, proc = name.rpartition(".")
        marks = ", ".join("?" for _ in range(n_params))
        return self.render(
            "call_procedure.sql.j2", proc=self.qualified(schema or None, proc), marks=marks
        ).strip()

    def constraint_sql(self, articles: Sequence[Article]) -> list[str]:
        """Unique and foreign keys the subscriber has besides the primary key (run after the
        snapshot load: a snapshot may arrive in any order). A reference to an article this
        subscriber does not hold is left out."""
        by_name = {a.name: a for a in articles}
        out = []
        for a in articles:
            for i, cols in enumerate(a.unique):
                out.append(
                    self.render(
                        "add_unique.sql.j2",
                        table=self.table(a),
                        name=self.quote(f"uq_{a.table}_{i}"),
                        cols=[self.quote(c) for c in cols],
                    ).strip()
                )
            for i, (cols, parent, pcols) in enumerate(a.references):
                p = by_name.get(parent)
                if p is None:
                    continue
                out.append(
                    self.render(
                        "add_foreign_key.sql.j2",
                        table=self.table(a),
                        name=self.quote(f"fk_{a.table}_{i}"),
                        cols=[self.quote(c) for c in cols],
                        parent=self.table(p),
                        parent_cols=[self.quote(c) for c in pcols],
                    ).strip()
                )
        return out

    # -- dropping the subscriber's tables (install with recreate_tables) -----------------
    def drop_table_script(self, article: Article) -> list[str]:
        """Drop the article's table: first the foreign keys that reference it where the dialect
        must (drop_references.sql.j2: T-SQL has no CASCADE, error 3726), then the table. Callers
        take the tables in :func:`drop_order`."""
        refs = self.render("drop_references.sql.j2", table=self.table(article)).strip()
        return ([refs] if refs else []) + self.drop_table_sql(article)

    def clear_tables_sql(self, articles: Sequence[Article]) -> list[str]:
        """Empty the articles' tables, kept as they are (a warm reuse of an installed
        subscriber): DELETE, children first (T-SQL cannot TRUNCATE a referenced table)."""
        return [f"DELETE FROM {self.table(a)}" for a in drop_order(articles)]

    # -- scripts (applier procs) ------------------------------------------------------
    SCRIPT_SEPARATOR: ClassVar[str] = "\n"  # between the statements of a script file
    STATEMENT_END: ClassVar[str] = ";"  # after each statement of a script file

    def script(self, parts: Sequence[tuple[str, bool]]) -> str:
        """(text, is a statement) pieces as one script file a DBA runs with the usual client:
        statements ended as the dialect ends them, comments as they are."""
        sep = self.SCRIPT_SEPARATOR
        return sep.join(t.rstrip() + self.STATEMENT_END if stmt else t for t, stmt in parts) + sep


def drop_order(articles: Sequence[Article]) -> list[Article]:
    """The articles in the order their tables can be dropped: every article that references
    another (``references``) before the one it references, children before parents; otherwise
    as given. A reference to an article not in ``articles``, to itself, or round a cycle does
    not order (dropping the referencing foreign keys first is then what makes a drop work)."""
    names = {a.name for a in articles}
    # parent name -> how many of its children (other articles here) are still to be dropped
    pending = {a.name: 0 for a in articles}
    parents = {a.name: {p for _, p, _ in a.references if p in names and p != a.name} for a in articles}
    for ps in parents.values():
        for p in ps:
            pending[p] += 1
    out: list[Article] = []
    left = list(articles)
    while left:
        ready = [a for a in left if pending[a.name] == 0] or left[:1]  # a cycle: take the first
        a = ready[0]
        left.remove(a)
        out.append(a)
        for p in parents[a.name]:
            pending[p] -= 1
    return out
