"""A change table read from its source database over ODBC (``--source``), in slices of
``__$seqval`` read by as many Spark tasks as the session has slots."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from applier.articles import Article
from applier.errors import InputError
from applier.sources.formats import Change, Format
from applier.sources.formats.mssql_cdc.rows import (
    OPERATION,
    SEQVAL,
    START_LSN,
    Layout,
    change,
    instance_article,
    layout,
    no_article,
)

_SLICE_SQL = {
    # a small non-negative integer per row, spread over the rows: the last byte of __$seqval
    "postgres": "get_byte({seqval}, 9)",
    "tsql": "CAST(SUBSTRING({seqval}, 10, 1) AS int)",
}
_FETCH = 1000


def read_source(fmt: Format, spark: Any) -> Any:
    from applier.targets.connstr import dialect_for, redact

    cs = fmt.options.source
    ci = fmt.options.capture_instance
    assert cs is not None
    if not ci:
        raise InputError("mssql-cdc: --source needs --capture-instance (the change table cdc.<name>_CT)")
    dialect = dialect_for(cs)
    table = dialect.qualified("cdc", f"{ci}_CT")
    shown = f"cdc.{ci}_CT"
    conn = _connect(cs, shown)
    try:
        cur = conn.cursor()
        article = source_article(fmt.articles, cur, dialect.language, ci, shown)
        try:
            cur.execute(f"SELECT * FROM {table} WHERE 1 = 0")
        except Exception as e:  # noqa: BLE001 - the driver's error, said with the table
            raise InputError(f"{shown}: cannot read the change table: {_first_line(e)}") from None
        names = [d[0] for d in cur.description]
    finally:
        conn.close()
    lay = layout(names, article, shown, shown)
    sql, slices = select_sql(dialect, ci, names, lay, int(spark.sparkContext.defaultParallelism))
    redacted = redact(cs)

    def task(n: int) -> Iterator[tuple[str | None, Change | None]]:
        try:
            c = _connect(cs, shown)
        except InputError as e:
            yield (str(e).replace(cs, redacted), None)
            return
        try:
            cur = c.cursor()
            cur.execute(sql, n) if slices > 1 else cur.execute(sql)
            while True:
                rows = cur.fetchmany(_FETCH)
                if not rows:
                    break
                for row in rows:
                    values = list(row)
                    place = _odbc_place(shown, lay, values)
                    try:
                        yield (None, change(lay, values, place, text=False))
                    except InputError as e:
                        yield (str(e), None)
        except Exception as e:  # noqa: BLE001 - a lost connection: refused, not a Java stack
            yield (f"{shown}: cannot read the change table: {_first_line(e)}", None)
        finally:
            c.close()

    return spark.sparkContext.parallelize(range(slices), slices).flatMap(task)


def source_article(articles: Mapping[str, Article], cur: Any, dialect: str, ci: str, place: str) -> Article:
    tried = [ci]
    if dialect == "tsql":
        try:
            found = cur.execute(
                "SELECT OBJECT_SCHEMA_NAME(source_object_id), OBJECT_NAME(source_object_id) "
                "FROM cdc.change_tables WHERE capture_instance = ?",
                ci,
            ).fetchone()
        except Exception:  # noqa: BLE001 - no cdc.change_tables: the default naming
            found = None
        if found is not None and found[1] is not None:
            a = articles.get(f"{found[0]}.{found[1]}")
            if a is None:
                a = next(
                    (x for x in articles.values() if x.name.lower() == f"{found[0]}.{found[1]}".lower()),
                    None,
                )
            if a is not None:
                return a
            raise InputError(
                f"{place}: capture instance {ci!r} captures {found[0]}.{found[1]}, which is not an article "
                f"(known: {', '.join(sorted(articles))})"
            )
    a = instance_article(articles, ci, place)
    if a is None:
        raise no_article(articles, tried, place)
    return a


def select_sql(
    dialect: Any, instance: str, names: Sequence[str], lay: Layout, slices: int
) -> tuple[str, int]:
    """The SELECT of one slice of ``cdc.<instance>_CT`` (the slice number its one parameter) and
    the number of slices (1, no parameter, when the dialect has no slicing expression)."""
    cols = ", ".join(dialect.quote(n) for n in names)
    sql = f"SELECT {cols} FROM {dialect.qualified('cdc', f'{instance}_CT')}"
    expr = _SLICE_SQL.get(dialect.name)
    if expr is None or slices <= 1:
        return sql, 1
    seqval = dialect.quote(names[lay.meta[SEQVAL]])
    return f"{sql} WHERE {expr.format(seqval=seqval)} % {int(slices)} = ?", int(slices)


def _odbc_place(table: str, lay: Layout, values: Sequence[Any]) -> str:
    parts = []
    for name in (START_LSN, SEQVAL, OPERATION):
        v = values[lay.meta[name]]
        parts.append(
            f"{name} {('0x' + bytes(v).hex()) if isinstance(v, (bytes, bytearray, memoryview)) else v}"
        )
    return f"{table}: " + ", ".join(parts)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return (text.splitlines()[0] if text else type(e).__name__)[:300]


def _connect(cs: str, shown: str) -> Any:
    import pyodbc

    from applier.targets.connstr import ensure_odbc_env, redact

    ensure_odbc_env()
    try:
        return pyodbc.connect(cs, autocommit=True, timeout=30)
    except pyodbc.Error as e:
        raise InputError(f"{shown}: cannot connect to the source ({redact(cs)}): {_first_line(e)}") from None
