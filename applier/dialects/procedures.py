"""The procedures a dialect generates and the calls that apply through them: their names,
their parameters (seed 003's order, the same in every dialect), the context every procedure
template gets, the set-based procedures (``run.set_apply``) and SQL statement delivery.

:class:`ProcedureText` is a base of :class:`applier.dialects.base.Dialect`, as
:class:`applier.dialects.schema.SchemaStatements` is: each dialect renders its own templates
(``sql/<dialect>/``) and overrides what it writes otherwise. The few Dialect methods these
need are declared below and implemented there.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from applier.articles import Article, SqlType, Syntax

OPS = {"I": "insert", "U": "update", "D": "delete"}
_PREFIX = {"I": "sp_MSins_", "U": "sp_MSupd_", "D": "sp_MSdel_"}
_SET_SYNTAXES = {
    "I": (Syntax.CALL,),
    "U": (Syntax.CALL, Syntax.SCALL, Syntax.MCALL),
    "D": (Syntax.CALL, Syntax.XCALL),
}


@dataclass(frozen=True)
class ProcParam:
    """One procedure parameter: name without sigil, and its type (None = the bitmap)."""

    name: str
    type: SqlType | None
    default_null: bool = False


def key_param(op: str, syntax: Syntax, index1: int, key_index1: int) -> str:
    """Name of the parameter that carries a key column's original value.

    XCALL passes whole before images (old-c1..old-cn for updates, c1..cn for deletes);
    every other syntax passes the original key as pkc1..pkck (seed 003).
    """
    if syntax == Syntax.XCALL and op == "U":
        return f"c{index1}_old"
    if syntax == Syntax.XCALL and op == "D":
        return f"c{index1}"
    return f"pkc{key_index1}"


def bracketed(name: str) -> str:
    """A name as QUOTENAME writes it: [name] with ] doubled. SQL Server's 20598 message names
    the table and key columns so; both dialects' messages use it for the same text."""
    return "[" + name.replace("]", "]]") + "]"


def bitmap_width(ncols: int) -> int:
    """SCALL/MCALL bitmap bytes: binary(ceil(n/8)) as SQL Server generates it."""
    return max(1, math.ceil(ncols / 8))


def bit_of(index1: int) -> tuple[int, int]:
    """Column i (1-based) -> (byte number 1-based, bit value 2^((i-1)%8))."""
    return (index1 - 1) // 8 + 1, 1 << ((index1 - 1) % 8)


class ProcedureText:
    """A dialect's procedures and calls (see the module's docstring)."""

    # -- what the procedures need from the dialect (implemented by Dialect) ------------
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

    # -- names -----------------------------------------------------------------------
    def proc_name(self, article: Article, op: str) -> tuple[str | None, str]:
        """(schema, name) of the procedure that applies op; custom names as written."""
        d = article.delivery(op)
        if d.procedure:
            if "." in d.procedure:
                s, n = d.procedure.split(".", 1)
                return s, n
            return article.proc_schema, d.procedure
        return article.proc_schema, self.safe_proc_name(f"{_PREFIX[op]}{article.schema}{article.table}")

    # Characters the engine cannot hold in a procedure's name, however quoted (Babelfish: ]).
    PROC_NAME_UNSAFE: ClassVar[str] = ""

    def safe_proc_name(self, name: str) -> str:
        """A generated procedure's name as the engine can hold it: unchanged where it can (SQL
        Server, PostgreSQL); else each unsafe character as _, and a hash of the full name kept
        so that two names never meet."""
        if not any(ch in self.PROC_NAME_UNSAFE for ch in name):
            return name
        digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:8]
        return "".join("_" if ch in self.PROC_NAME_UNSAFE else ch for ch in name) + "_" + digest

    def proc_ref(self, article: Article, op: str) -> str:
        s, n = self.proc_name(article, op)
        return self.qualified(s, n)

    # -- procedure parameters (seed 003 orders; the same for every dialect) ----------
    @staticmethod
    def proc_params(article: Article, op: str) -> list[ProcParam]:
        cols = article.replicated
        keys = article.key_columns
        syntax = article.delivery(op).syntax
        if op == "I":
            return [ProcParam(f"c{i}", c.type) for i, c in enumerate(cols, 1)]
        if op == "D":
            if syntax == Syntax.XCALL:
                return [ProcParam(f"c{i}", c.type) for i, c in enumerate(cols, 1)]
            return [ProcParam(f"pkc{i}", c.type) for i, c in enumerate(keys, 1)]
        # update
        if syntax == Syntax.XCALL:
            old = [ProcParam(f"c{i}_old", c.type) for i, c in enumerate(cols, 1)]
            return old + [ProcParam(f"c{i}", c.type) for i, c in enumerate(cols, 1)]
        # SCALL passes only the changed values: every value and key parameter defaults to NULL
        # (SQL Server 2016+ writes "@pkc1 int = NULL" too; the bitmap has no default).
        dflt = syntax == Syntax.SCALL
        params = [ProcParam(f"c{i}", c.type, default_null=dflt) for i, c in enumerate(cols, 1)]
        params += [ProcParam(f"pkc{i}", c.type, default_null=dflt) for i, c in enumerate(keys, 1)]
        if syntax in (Syntax.SCALL, Syntax.MCALL):
            params.append(ProcParam("bitmap", None))
        return params

    def template_context(self, article: Article, op: str) -> dict[str, Any]:
        """What every procedure template gets: columns with their parameter and bit."""
        cols = []
        for i, c in enumerate(article.replicated, 1):
            byte, bit = bit_of(i)
            cols.append(
                {
                    "name": c.name,
                    "q": self.quote(c.name),
                    "i": i,
                    "byte": byte,
                    "bit": bit,
                    "type": self.type_sql(c.type),
                    "is_key": c.name in article.key,
                    "identity": c.identity,
                    "lob": c.type.is_lob,
                    "col": c,
                }
            )
        syntax = article.delivery(op).syntax
        keys = []
        for j, k in enumerate(article.key_columns, 1):
            i = article.column_names.index(k.name) + 1
            keys.append(
                {
                    "name": k.name,
                    "q": self.quote(k.name),
                    "text": bracketed(k.name),  # as the 20598 message names it
                    "pk": j,
                    "i": i,
                    "type": self.type_sql(k.type),
                    "col": k,
                    # the parameter holding the key's original value (where-clause, key text)
                    "param": key_param(op, syntax, i, j),
                    "identity": k.identity,
                }
            )
        branch_keys = [k for k in keys if not k["identity"]]
        return {
            "article": article,
            "table": self.table(article),
            # the table as SQL Server's 20598 message names it (QUOTENAME's brackets, in
            # every dialect, so both name a table the same way)
            "table_text": f"{bracketed(article.schema)}.{bracketed(article.table)}",
            "proc": self.proc_ref(article, op),
            "cols": cols,
            "keys": keys,
            "nonkey": [c for c in cols if not c["is_key"] and not c["identity"]],
            "settable": [c for c in cols if not c["identity"]],
            # DESIGN "Procedure generation facts": a key that is not an identity column gets
            # the key-changed branch; an identity column is never in SET, so only the other
            # key columns can change (a composite key of an order id and an identity line id).
            "key_branch": bool(branch_keys),
            "branch_keys": branch_keys,
            "params": self.proc_params(article, op),
            "width": bitmap_width(len(cols)),
            "syntax": syntax.value,
        }

    def procedure_sql(self, article: Article, op: str) -> str | None:
        """Text creating the default procedure of op, or None when op is not a procedure."""
        d = article.delivery(op)
        if d.syntax in (Syntax.SQL, Syntax.NONE) or d.procedure:
            return None
        template = f"{OPS[op]}_{d.syntax.value.lower()}.sql.j2"
        return self.render(template, **self.template_context(article, op))

    def overloads_sql(self) -> str | None:
        """A query, schema and name bound (a NULL schema: the session's), of every procedure of
        that name there, each as the text ``DROP PROCEDURE`` takes; None where a name holds one
        procedure (SQL Server: ``CREATE OR ALTER`` replaces it). PostgreSQL resolves procedures
        by signature: a procedure created with other parameters (an earlier run's, after a
        schema change) stays beside the new one, and the next ``DROP PROCEDURE name`` fails."""
        return None

    # -- set-based apply (run.set_apply) ---------------------------------------------
    SET_APPLY: ClassVar[bool] = False  # the dialect has set_apply.sql.j2

    def set_eligible(self, article: Article, op: str) -> bool:
        """Whether op of article may be applied set-based: generated procedures whose effect
        per row is known (insert CALL; update CALL/SCALL/MCALL; delete CALL/XCALL, both by key).
        A custom procedure is the user's logic and is always called row by row."""
        d = article.delivery(op)
        return self.SET_APPLY and not d.procedure and d.syntax in _SET_SYNTAXES[op]

    def set_proc_name(self, article: Article, op: str) -> tuple[str, str]:
        """(schema, name) of the set-based procedure: in schema ``applier``, named after the
        article, cut to fit identifier limits with a hash of the full name kept."""
        base = f"{OPS[op]}_set_{article.schema}_{article.table}"
        if len(base.encode("utf-8")) > 60:
            digest = hashlib.sha1(base.encode("utf-8")).hexdigest()[:10]
            cut = base.encode("utf-8")[:48].decode("utf-8", "ignore")
            base = f"{cut}_{digest}"
        return "applier", self.safe_proc_name(base)

    def set_mask_name(self, article: Article) -> str:
        """JSON member carrying an update's changed-column mask: a name no column has."""
        name = "_m"
        while name in article.column_names:
            name = "_" + name
        return name

    def set_procedure_sql(self, article: Article, op: str) -> str | None:
        """Text creating the set-based procedure of op, or None when op is not eligible."""
        if not self.set_eligible(article, op):
            return None
        ctx = self.template_context(article, op)
        ctx.update(
            op=op,
            command=OPS[op].upper(),
            set_proc=self.qualified(*self.set_proc_name(article, op)),
            mask=self.set_mask_name(article),
        )
        return self.render("set_apply.sql.j2", **ctx)

    def bulk_insert_sql(self, article: Article) -> str | None:
        """One statement inserting many rows bound as one JSON text (the snapshot load), or
        None when the dialect has no such statement."""
        if not self.SET_APPLY:
            return None
        return self.render("bulk_insert.sql.j2", **self.template_context(article, "I")).strip()

    def set_call_sql(self, article: Article, op: str) -> str:
        """The call of the set-based procedure; one parameter: the rows as JSON text."""
        raise NotImplementedError

    def statement_sql(self, article: Article, op: str, set_cols: Sequence[str] = ()) -> str:
        """SQL statement delivery (seed 002: "one row Transact-SQL statement"): one self-contained
        statement list for op, with the generated procedures' zero-row check for updates and
        deletes. Markers bind, in order: inserts c1..cn; updates the values of ``set_cols``
        (article order) then pkc1..pkck; deletes pkc1..pkck
        (:func:`applier.plan.calls.statement_params`).
        """
        ctx = self.template_context(article, op)
        by_name = {c["name"]: c for c in ctx["cols"]}
        ctx["set_cols"] = [by_name[n] for n in set_cols]
        ctx.update(self.statement_context(ctx))
        return self.render(f"{OPS[op]}_sql.sql.j2", **ctx).strip()

    def statement_context(self, ctx: dict[str, Any]) -> dict[str, Any]:
        """Dialect-specific additions to a statement template's context."""
        return {}

    def procedure_exists_sql(self) -> str:
        """Parameters: schema, name. One row, one column: how many procedures are so named."""
        raise NotImplementedError

    # -- calls -----------------------------------------------------------------------
    def call_sql(self, article: Article, op: str) -> str:
        raise NotImplementedError
