"""Articles from a live database's catalog, through ODBC: ``applier articles --from-target``.

The dialect comes from the connection string's driver (:func:`applier.targets.preflight`).
PostgreSQL is read from ``pg_catalog`` (columns with ``format_type()``, domains resolved to
the type under them, through domains over domains; enums carried as their label text,
composite and range types refused with their kind; serial and identity columns, generated columns, primary / unique / foreign
key constraints, unique indexes without predicate or expression); SQL Server from the ``sys``
catalog views (``sys.columns``, ``sys.types``: alias types resolved to their system type,
``sys.indexes``: primary keys, unique constraints and unique indexes without filter,
``sys.foreign_keys``). The same rules as for a DDL script then make the articles
(:mod:`applier.catalog.model`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from applier.articles import SqlType
from applier.catalog.model import Catalog, RawColumn, RawForeignKey, RawTable, build_catalog
from applier.catalog.pgtypes import ENUM_LABEL_TYPE, enum_note, is_serial
from applier.catalog.pgtypes import sql_type as pg_sql_type
from applier.catalog.tsqltypes import sql_type as tsql_type
from applier.errors import ConfigError

_PG_SYSTEM = "('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'"

# A column's type, and for a domain the type under it: a domain over a domain is followed down
# to the first type that is not one (``d.base``, with the typmod the innermost domain gives it;
# NOT NULL when any domain of the chain says so). ``typtype``: b base, e enum, c composite,
# r range, m multirange, d domain, p pseudo (https://www.postgresql.org/docs/15/catalog-pg-type.html).
PG_COLUMNS = f"""
SELECT n.nspname, c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
       a.attidentity <> '' OR pg_get_serial_sequence(format('%I.%I', n.nspname, c.relname), a.attname) IS NOT NULL,
       a.attgenerated <> '', t.typtype, format_type(d.base, d.typmod), d.not_null, bt.typtype
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN LATERAL (
    WITH RECURSIVE chain(base, typmod, not_null, depth) AS (
        SELECT t.typbasetype, t.typtypmod, t.typnotnull, 1 WHERE t.typtype = 'd'
        UNION ALL
        SELECT u.typbasetype, u.typtypmod, chain.not_null OR u.typnotnull, chain.depth + 1
        FROM chain JOIN pg_type u ON u.oid = chain.base AND u.typtype = 'd'
    )
    SELECT base, typmod, not_null FROM chain ORDER BY depth DESC LIMIT 1
) d ON true
LEFT JOIN pg_type bt ON bt.oid = d.base
WHERE c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped AND NOT c.relispartition
  AND n.nspname NOT IN {_PG_SYSTEM}
ORDER BY n.nspname, c.relname, a.attnum
"""

PG_CONSTRAINTS = f"""
SELECT n.nspname, c.relname, con.conname, con.contype, k.i, a.attname, fn.nspname, fc.relname, fa.attname
FROM pg_constraint con
JOIN pg_class c ON c.oid = con.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
CROSS JOIN LATERAL unnest(con.conkey) WITH ORDINALITY AS k(attnum, i)
JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum
LEFT JOIN pg_class fc ON fc.oid = con.confrelid
LEFT JOIN pg_namespace fn ON fn.oid = fc.relnamespace
LEFT JOIN pg_attribute fa ON fa.attrelid = con.confrelid AND fa.attnum = con.confkey[k.i]
WHERE con.contype IN ('p', 'u', 'f') AND n.nspname NOT IN {_PG_SYSTEM}
ORDER BY n.nspname, c.relname, con.contype, con.conname, k.i
"""

PG_UNIQUE_INDEXES = f"""
SELECT n.nspname, c.relname, ic.relname, k.i, a.attname
FROM pg_index x
JOIN pg_class c ON c.oid = x.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_class ic ON ic.oid = x.indexrelid
CROSS JOIN LATERAL unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, i)
JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum
WHERE x.indisunique AND NOT x.indisprimary AND x.indpred IS NULL AND x.indexprs IS NULL
  AND k.i <= x.indnkeyatts AND n.nspname NOT IN {_PG_SYSTEM}
  AND NOT EXISTS (SELECT 1 FROM pg_constraint con WHERE con.conindid = x.indexrelid)
ORDER BY n.nspname, c.relname, ic.relname, k.i
"""

# SQL Server: sys catalog views (https://learn.microsoft.com/sql/relational-databases/system-catalog-views/).
# An alias type's system type is the sys.types row whose user_type_id is the column's
# system_type_id; a CLR type (hierarchyid, geography, user assemblies) keeps its own name.
MSSQL_COLUMNS = """
SELECT s.name, t.name, c.name,
       CASE WHEN ty.is_assembly_type = 1 OR bt.name IS NULL THEN ty.name ELSE bt.name END,
       c.max_length, c.precision, c.scale, c.is_nullable, c.is_identity, c.is_computed,
       ty.is_user_defined, ty.is_assembly_type, xsc.name
FROM sys.tables t
JOIN sys.schemas s ON s.schema_id = t.schema_id
JOIN sys.columns c ON c.object_id = t.object_id
JOIN sys.types ty ON ty.user_type_id = c.user_type_id
LEFT JOIN sys.types bt ON bt.user_type_id = c.system_type_id AND ty.is_user_defined = 1
LEFT JOIN sys.xml_schema_collections xsc ON xsc.xml_collection_id = c.xml_collection_id
     AND c.xml_collection_id <> 0
WHERE t.is_ms_shipped = 0
ORDER BY s.name, t.name, c.column_id
"""

MSSQL_UNIQUE = """
SELECT s.name, t.name, i.name, i.is_primary_key, i.is_unique_constraint, ic.key_ordinal, c.name
FROM sys.indexes i
JOIN sys.tables t ON t.object_id = i.object_id
JOIN sys.schemas s ON s.schema_id = t.schema_id
JOIN sys.index_columns ic ON ic.object_id = i.object_id AND ic.index_id = i.index_id
JOIN sys.columns c ON c.object_id = i.object_id AND c.column_id = ic.column_id
WHERE i.is_unique = 1 AND i.has_filter = 0 AND ic.key_ordinal > 0 AND t.is_ms_shipped = 0
ORDER BY s.name, t.name, i.is_primary_key DESC, i.index_id, ic.key_ordinal
"""

MSSQL_FOREIGN = """
SELECT s.name, t.name, fk.name, fkc.constraint_column_id, c.name, ps.name, pt.name, pc.name
FROM sys.foreign_keys fk
JOIN sys.tables t ON t.object_id = fk.parent_object_id
JOIN sys.schemas s ON s.schema_id = t.schema_id
JOIN sys.foreign_key_columns fkc ON fkc.constraint_object_id = fk.object_id
JOIN sys.columns c ON c.object_id = fkc.parent_object_id AND c.column_id = fkc.parent_column_id
JOIN sys.tables pt ON pt.object_id = fk.referenced_object_id
JOIN sys.schemas ps ON ps.schema_id = pt.schema_id
JOIN sys.columns pc ON pc.object_id = fkc.referenced_object_id AND pc.column_id = fkc.referenced_column_id
WHERE t.is_ms_shipped = 0
ORDER BY s.name, t.name, fk.name, fkc.constraint_column_id
"""


def _table(tables: dict[tuple[str, str], RawTable], schema: str, name: str) -> RawTable:
    key = (schema, name)
    if key not in tables:
        tables[key] = RawTable(schema, name)
    return tables[key]


def _groups(rows: Sequence[Sequence[Any]], n: int) -> dict[tuple[Any, ...], list[Sequence[Any]]]:
    """Rows grouped by their first n values, in order."""
    out: dict[tuple[Any, ...], list[Sequence[Any]]] = {}
    for r in rows:
        out.setdefault(tuple(r[:n]), []).append(r)
    return out


# What a user-defined type that is not a domain or an enum is, for its refusal.
_PG_NOT_CARRIED = {
    "c": "a composite type: applier carries no composite values (no SQL Server column type holds one)",
    "r": "a range type: range types cannot be carried (no SQL Server column type holds one)",
    "m": "a multirange type: range types cannot be carried (no SQL Server column type holds one)",
    "p": "a pseudo-type: it holds no stored value",
}


def _pg_scalar(type_text: str, typtype: str) -> tuple[SqlType, str]:
    """(the applier type, a note) of a type that is not a domain, or ConfigError saying why."""
    if typtype == "e":
        return ENUM_LABEL_TYPE, enum_note(type_text)
    if typtype in _PG_NOT_CARRIED:
        raise ConfigError(f"PostgreSQL type {type_text!r} is {_PG_NOT_CARRIED[typtype]}")
    return pg_sql_type(type_text), ""


def postgres_tables(cursor: Any) -> list[RawTable]:
    tables: dict[tuple[str, str], RawTable] = {}
    for (
        schema,
        table,
        col,
        type_text,
        notnull,
        ident,
        generated,
        typtype,
        base,
        base_notnull,
        base_typtype,
    ) in cursor.execute(PG_COLUMNS).fetchall():
        t = _table(tables, schema, table)
        c = RawColumn(
            col, type_text, None, nullable=not notnull, identity=bool(ident), computed=bool(generated)
        )
        if not c.computed:
            try:
                if typtype == "d":  # a domain: the type under it, its NOT NULL
                    try:
                        c.type, note = _pg_scalar(base, base_typtype)
                    except ConfigError as e:
                        raise ConfigError(f"domain {type_text} over {base}: {e}") from None
                    c.nullable = c.nullable and not base_notnull
                    c.note = note or f"domain {type_text}: carried as its base type {base}"
                    if note:
                        c.note = f"domain {type_text} over {note}"
                else:
                    c.type, c.note = _pg_scalar(type_text, typtype)
                    c.identity = c.identity or is_serial(type_text)
            except ConfigError as e:
                c.why = str(e)
        t.columns.append(c)
    for (schema, table, name, kind), rows in _groups(cursor.execute(PG_CONSTRAINTS).fetchall(), 4).items():
        u = tables.get((schema, table))
        if u is None:
            continue
        cols = tuple(r[5] for r in rows)
        if kind == "p":
            u.primary = cols
        elif kind == "u":
            u.uniques.append((cols, f"unique constraint {name}"))
        else:
            u.foreign.append(RawForeignKey(cols, rows[0][6], rows[0][7], tuple(r[8] for r in rows), name))
    for (schema, table, name), rows in _groups(cursor.execute(PG_UNIQUE_INDEXES).fetchall(), 3).items():
        u = tables.get((schema, table))
        if u is not None:
            u.uniques.append((tuple(r[4] for r in rows), f"unique index {name}"))
    return list(tables.values())


def mssql_type_text(
    name: str, max_length: int, precision: int, scale: int, xml_collection: str | None
) -> str:
    """The type as a script writes it, from sys.columns / sys.types."""
    n = name.lower()
    if n in ("nvarchar", "nchar"):
        return f"{n}({'max' if max_length == -1 else max_length // 2})"
    if n in ("varchar", "char", "varbinary", "binary"):
        return f"{n}({'max' if max_length == -1 else max_length})"
    if n in ("decimal", "numeric"):
        return f"{n}({precision},{scale})"
    if n in ("datetime2", "time", "datetimeoffset"):
        return f"{n}({scale})"
    if n == "float":
        return "float" if precision > 24 else "real"
    if n == "xml" and xml_collection:
        return f"xml({xml_collection})"
    return n


def mssql_tables(cursor: Any, declared_names_sql: str | None = None) -> list[RawTable]:
    """The tables of the sys views; ``declared_names_sql`` (the dialect's
    ``CATALOG_DECLARED_NAMES_SQL``): where the views do not name tables and columns as declared,
    the query that gives the declared names (:func:`_declared_names`)."""
    tables: dict[tuple[str, str], RawTable] = {}
    for row in cursor.execute(MSSQL_COLUMNS).fetchall():
        schema, table, col, base, max_length, precision, scale, nullable, ident, computed = row[:10]
        user_defined, assembly, xml_collection = row[10:13]
        t = _table(tables, schema, table)
        text = mssql_type_text(base, max_length, precision, scale, xml_collection)
        c = RawColumn(col, text, None, nullable=bool(nullable), identity=bool(ident), computed=bool(computed))
        if not c.computed:
            try:
                if assembly and base.lower() != "hierarchyid":
                    raise ConfigError(f"{base} is a CLR type: applier carries no CLR values")
                c.type, c.note, _ = tsql_type(text)
            except ConfigError as e:
                c.why = str(e)
        t.columns.append(c)
    for (schema, table, name), rows in _groups(cursor.execute(MSSQL_UNIQUE).fetchall(), 3).items():
        u = tables.get((schema, table))
        if u is None:
            continue
        cols = tuple(r[6] for r in rows)
        if rows[0][3]:
            u.primary = cols
        else:
            what = "unique constraint" if rows[0][4] else "unique index"
            u.uniques.append((cols, f"{what} {name}"))
    for (schema, table, name), rows in _groups(cursor.execute(MSSQL_FOREIGN).fetchall(), 3).items():
        u = tables.get((schema, table))
        if u is not None:
            cols, pcols = tuple(r[4] for r in rows), tuple(r[7] for r in rows)
            u.foreign.append(RawForeignKey(cols, rows[0][5], rows[0][6], pcols, name))
    if declared_names_sql:
        _declared_names(tables, cursor.execute(declared_names_sql).fetchall())
    return list(tables.values())


def _declared_names(tables: dict[tuple[str, str], RawTable], rows: Sequence[Sequence[Any]]) -> None:
    """Tables, columns, keys and references renamed by rows of (schema, table, column, declared
    table, declared column), the first three as the sys views name them."""
    table_names: dict[tuple[str, str], str] = {}
    column_names: dict[tuple[str, str], dict[str, str]] = {}
    for schema, table, col, declared_table, declared_col in rows:
        table_names[(schema, table)] = declared_table
        column_names.setdefault((schema, table), {})[col] = declared_col

    def cols(key: tuple[str, str], names: tuple[str, ...]) -> tuple[str, ...]:
        found = column_names.get(key, {})
        return tuple(found.get(n, n) for n in names)

    for key, t in tables.items():
        for c in t.columns:
            c.name = column_names.get(key, {}).get(c.name, c.name)
        if t.primary is not None:
            t.primary = cols(key, t.primary)
        t.uniques = [(cols(key, u), what) for u, what in t.uniques]
        for fk in t.foreign:
            parent = (fk.parent_schema, fk.parent_table)
            fk.columns = cols(key, fk.columns)
            if fk.parent_columns is not None:
                fk.parent_columns = cols(parent, fk.parent_columns)
            fk.parent_table = table_names.get(parent, fk.parent_table)
    for key, t in tables.items():
        t.name = table_names.get(key, t.name)


def read_connection(
    conn: Any,
    dialect: str,
    source: str,
    tables: Sequence[str] | None = None,
    declared_names_sql: str | None = None,
) -> Catalog:
    """The articles of the database an open pyodbc connection reaches (``declared_names_sql``:
    see :func:`mssql_tables`)."""
    cursor = conn.cursor()
    raw = postgres_tables(cursor) if dialect == "postgres" else mssql_tables(cursor, declared_names_sql)
    return build_catalog(raw, source, tables, fold=dialect == "tsql")


def read_target(spec: str, tables: Sequence[str] | None = None) -> Catalog:
    """The articles of the database a connection string (or a target name) reaches."""
    import pyodbc

    from applier.targets import Target

    with Target.parse(spec) as target:
        endpoint = target.endpoint()
        conn = pyodbc.connect(endpoint.connection_string, autocommit=True)
        try:
            d = endpoint.dialect
            names_sql = getattr(d, "CATALOG_DECLARED_NAMES_SQL", None)
            return read_connection(conn, d.language, endpoint.redacted, tables, names_sql)
        finally:
            conn.close()
