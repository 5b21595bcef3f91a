"""What a schema says about its tables, and the articles applier makes of them.

Readers (``ddl``: a script, ``target``: a live catalog) describe tables as :class:`RawTable`
(columns with their types already read, or the reason a type cannot be carried; keys, unique
constraints and indexes, foreign keys). :func:`build_catalog` turns them into articles, as a
replication engineer publishing those tables would:

- a column whose type applier cannot carry is **left out of the article** (as a vertical
  filter leaves a column out of a publication), with a message naming the table, the column,
  its type and why; unless it is a key column: then the **table is skipped** (a row could not
  be found again at the subscriber without its key);
- a table without a primary key takes its first unique constraint or unique index whose
  columns are all NOT NULL and carried as the key (a note says so); without one it is skipped
  (transactional replication publishes only tables with a primary key);
- computed columns stay in the article, marked computed (never replicated: the subscriber
  computes them); their type is a placeholder;
- unique constraints and foreign keys that name a column left out, or a computed column, are
  dropped with a note; a foreign key keeps its parent even when the parent is not published
  (the subscriber then does not create it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from applier.articles import Article, Column, SqlType, parse_type
from applier.errors import ConfigError, did_you_mean

# The type a computed column is given in the article: it is never replicated or created.
COMPUTED_TYPE = parse_type("nvarchar(max)")


@dataclass
class RawColumn:
    name: str
    type_text: str  # as the schema writes it
    type: SqlType | None  # None: cannot be carried (why says so)
    why: str = ""
    nullable: bool = True
    identity: bool = False
    computed: bool = False
    line: int | None = None
    note: str = ""  # carried, with a change worth saying (typed xml, rowversion...)


@dataclass
class RawForeignKey:
    columns: tuple[str, ...]
    parent_schema: str
    parent_table: str
    parent_columns: tuple[str, ...] | None  # None: the parent's primary key
    name: str = ""


@dataclass
class RawTable:
    schema: str
    name: str
    columns: list[RawColumn] = field(default_factory=list)
    primary: tuple[str, ...] | None = None
    # (columns, what declares them: 'constraint X' / 'index X')
    uniques: list[tuple[tuple[str, ...], str]] = field(default_factory=list)
    foreign: list[RawForeignKey] = field(default_factory=list)
    line: int | None = None

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"

    def column(self, name: str, fold: bool = False) -> RawColumn | None:
        for c in self.columns:
            if c.name == name or (fold and c.name.lower() == name.lower()):
                return c
        return None


@dataclass(frozen=True)
class Catalog:
    """The articles a schema gives, and what could not be carried, one message a line."""

    articles: tuple[Article, ...]
    problems: tuple[str, ...] = ()  # left out: columns, tables, statements that could not be read
    notes: tuple[str, ...] = ()  # carried with a change (a key from a unique index, typed xml...)

    def article(self, name: str) -> Article:
        for a in self.articles:
            if a.name == name:
                return a
        raise KeyError(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.articles)


def select_tables(
    tables: Sequence[RawTable], wanted: Sequence[str] | None, problems: list[str], source: str
) -> list[RawTable]:
    """The tables named ``schema.table`` (exact, else ignoring case), in the order asked;
    every table when ``wanted`` is None. A name not found is a problem."""
    if wanted is None:
        return list(tables)
    out: list[RawTable] = []
    for name in wanted:
        exact = [t for t in tables if t.qualified == name]
        found = exact or [t for t in tables if t.qualified.lower() == name.lower()]
        if not found:
            names = [t.qualified for t in tables]
            hint = did_you_mean(name, names, n=3, quote=False) or f"{len(names)} table(s) in the schema"
            problems.append(f"{source}: no table {name} ({hint})")
        elif found[0] not in out:
            out.append(found[0])
    return out


def _at(source: str, line: int | None) -> str:
    return f"{source}:{line}" if line else source


def _key(t: RawTable, where: str, notes: list[str]) -> tuple[str, ...] | None:
    if t.primary:
        return t.primary
    for cols, what in t.uniques:
        cs = [t.column(c) for c in cols]
        if all(c is not None and c.type is not None and not c.nullable and not c.computed for c in cs):
            notes.append(f"{where}: {t.qualified}: no primary key; {what} ({', '.join(cols)}) is the key")
            return cols
    return None


def _article(t: RawTable, source: str, problems: list[str], notes: list[str]) -> Article | None:
    where = _at(source, t.line)
    key = _key(t, where, notes)
    if key is None:
        problems.append(
            f"{where}: {t.qualified}: no primary key and no unique constraint or index on NOT NULL "
            "columns: table skipped (replication needs a key to find a row again)"
        )
        return None
    missing = [k for k in key if t.column(k) is None]
    if missing:
        problems.append(f"{where}: {t.qualified}: key column {missing[0]} is not a column: table skipped")
        return None
    uncarried = [c for c in t.columns if c.type is None and not c.computed]
    bad_keys = [c for c in uncarried if c.name in key]
    if bad_keys:
        for c in bad_keys:
            problems.append(
                f"{_at(source, c.line or t.line)}: {t.qualified}: key column {c.name} ({c.type_text}): "
                f"{c.why}: table skipped (a key column cannot be left out)"
            )
        return None
    for c in uncarried:
        problems.append(
            f"{_at(source, c.line or t.line)}: {t.qualified}: column {c.name} ({c.type_text}): {c.why}; "
            "left out of the article"
            + (" (NOT NULL: the subscriber's table must give it a default)" if not c.nullable else "")
        )
    for c in t.columns:
        if c.note and c.type is not None and not c.computed:
            notes.append(f"{_at(source, c.line or t.line)}: {t.qualified}: column {c.name}: {c.note}")
    gone = {c.name for c in uncarried}
    computed = {c.name for c in t.columns if c.computed}
    columns: list[Column] = []
    for c in t.columns:
        if c.computed:
            columns.append(Column(c.name, COMPUTED_TYPE, True, False, True))
        elif c.type is not None:
            columns.append(Column(c.name, c.type, c.nullable and c.name not in key, c.identity))
    unique: list[tuple[str, ...]] = []
    for cols, what in t.uniques:
        if tuple(cols) == tuple(key) or set(cols) == set(key) or cols in unique:
            continue
        left = [c for c in cols if c in gone or c in computed or t.column(c) is None]
        if left:
            notes.append(
                f"{where}: {t.qualified}: {what} ({', '.join(cols)}) not carried: "
                f"column {left[0]} is {'computed' if left[0] in computed else 'left out'}"
            )
            continue
        unique.append(tuple(cols))
    refs: list[tuple[tuple[str, ...], str, tuple[str, ...]]] = []
    for fk in t.foreign:
        left = [c for c in fk.columns if c in gone or c in computed or t.column(c) is None]
        parent = f"{fk.parent_schema}.{fk.parent_table}"
        if left:
            notes.append(
                f"{where}: {t.qualified}: foreign key ({', '.join(fk.columns)}) -> {parent} not carried: "
                f"column {left[0]} is left out"
            )
            continue
        refs.append((fk.columns, parent, fk.parent_columns or ()))
    try:
        return Article(
            t.schema, t.name, tuple(columns), tuple(key), unique=tuple(unique), references=tuple(refs)
        )
    except ConfigError as e:
        problems.append(f"{where}: {t.qualified}: {e}: table skipped")
        return None


def build_catalog(
    tables: Sequence[RawTable],
    source: str,
    wanted: Sequence[str] | None = None,
    problems: Sequence[str] = (),
    notes: Sequence[str] = (),
    fold: bool = False,
) -> Catalog:
    """The articles of ``tables`` (those ``wanted``, by schema.table) as the module says.
    ``fold``: names compare ignoring case (SQL Server's default collation)."""
    probs, nts = list(problems), list(notes)
    chosen = select_tables(tables, wanted, probs, source)
    built = [(t, _article(t, source, probs, nts)) for t in chosen]
    every = {t.qualified.lower() if fold else t.qualified: t for t in tables}
    out: list[Article] = []
    for t, a in built:
        if a is None:
            continue
        refs = []
        for cols, parent, pcols in a.references:
            p: RawTable | None = every.get(parent.lower() if fold else parent)
            name = p.qualified if p is not None else parent
            if not pcols:
                if p is None or not p.primary:
                    nts.append(
                        f"{_at(source, t.line)}: {a.name}: foreign key ({', '.join(cols)}) -> {parent} "
                        "not carried: the parent's key is not in the schema"
                    )
                    continue
                pcols = p.primary
            elif p is not None:
                pcols = tuple(getattr(p.column(c, fold), "name", c) for c in pcols)
            refs.append((cols, name, pcols))
        out.append(_replace_refs(a, tuple(refs)))
    by_name = {a.name: a for a in out}
    final: list[Article] = []
    for a in out:  # a parent that is published must have those columns as its key or a unique key
        keep = []
        for cols, parent, pcols in a.references:
            pa = by_name.get(parent)
            if pa is not None and not any(set(pcols) == set(k) for k in (pa.key, *pa.unique)):
                nts.append(
                    f"{source}: {a.name}: foreign key ({', '.join(cols)}) -> {parent} ({', '.join(pcols)}) "
                    f"not carried: those columns are neither the key nor a unique key of the {parent} article"
                )
                continue
            keep.append((cols, parent, pcols))
        final.append(_replace_refs(a, tuple(keep)))
    return Catalog(tuple(final), tuple(probs), tuple(nts))


def _replace_refs(a: Article, refs: tuple[tuple[tuple[str, ...], str, tuple[str, ...]], ...]) -> Article:
    return a if refs == a.references else dataclasses.replace(a, references=refs)
