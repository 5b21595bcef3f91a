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

    # -- the progress table (applier.targets.progress) ----------------------------------
    PROGRESS_SCHEMA: ClassVar[str] = "applier"

    def progress_table(self) -> str:
        return self.qualified(self.PROGRESS_SCHEMA, "progress")

    def _progress(self, template: str) -> str:
        return self.render(template, table=self.progress_table()).strip()

    def run_table(self) -> str:
        return self.qualified(self.PROGRESS_SCHEMA, "runs")

    def progress_ddl(self) -> list[str]:
        """Create the progress and runs tables (and the objects generated statements rely on)."""
        return [
            self.create_schema_sql(self.PROGRESS_SCHEMA),
            self._progress("progress_create.sql.j2"),
            self.render("run_create.sql.j2", table=self.run_table()).strip(),
            *self.support_sql(),
        ]

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
        return self.render("drop_column.sql.j2", table=self.table(article), col=self.quote(name)).strip()

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

    # -- scripts (applier procs) ------------------------------------------------------
    SCRIPT_SEPARATOR: ClassVar[str] = "\n"  # between the statements of a script file
    STATEMENT_END: ClassVar[str] = ";"  # after each statement of a script file

    def script(self, parts: Sequence[tuple[str, bool]]) -> str:
        """(text, is a statement) pieces as one script file a DBA runs with the usual client:
        statements ended as the dialect ends them, comments as they are."""
        sep = self.SCRIPT_SEPARATOR
        return sep.join(t.rstrip() + self.STATEMENT_END if stmt else t for t, stmt in parts) + sep
