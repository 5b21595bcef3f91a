"""Distribute: route the stream to one subscription (Replication Server semantics, seed 000).

For every row command of a subscribed article, the subscription's where clause is evaluated
in Spark over the before image and over the after image (``from_json`` into the article's
columns at the command's schema version, then ``F.expr(where)``):

- both match -> the update (unchanged);
- only the before image -> a delete (rs_delete) of the before image;
- only the after image -> an insert (rs_insert) of the after image;
- neither -> nothing is sent.

Inserts go when their after image matches, deletes when their before image does. Images are
then cut to the subscription's column list (``changed`` too). Events (DDL, SQL) of
subscribed articles pass through; the rows of a SQL statement get its lsn in ``statement``.

A before image may omit columns (change files allow it): for an update, a column that is
not in ``changed`` has the after image's value; any other missing column is NULL, and a
where clause over NULL does not match.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import pyarrow as pa
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from applier.articles import Article, Column
from applier.config import ArticleSubscription, Subscription
from applier.errors import ConfigError
from applier.records.events import Schemas, convert_value
from applier.records.schema import ARROW_CHANGE, CHANGE_FIELDS, CHANGE_SCHEMA
from applier.values import dumps_image

ROUTED_SCHEMA = CHANGE_SCHEMA + ", statement long, source_op string"
_ARROW_ROUTED = pa.schema([*ARROW_CHANGE, ("statement", pa.int64()), ("source_op", pa.string())])
_P = "__applier_"  # prefix that keeps the record's own columns apart from article columns


def subscribed_article(article: Article, sub: ArticleSubscription) -> Article:
    """The article as this subscriber holds it: only the listed columns (in article order).

    Columns added by a later schema change are in the subscriber's shape only without a
    column list, or when the list names them.
    """
    if sub.columns is None:
        return article
    cols = tuple(c for c in article.columns if c.name in sub.columns or c.name in article.key)
    return replace(article, columns=cols)


@dataclass(frozen=True)
class Shapes:
    """Per article and version, the subscriber's column names; None: article not subscribed."""

    columns: dict[tuple[str, int], tuple[str, ...]]

    @staticmethod
    def of(schemas: Schemas, sub: Subscription) -> Shapes:
        out: dict[tuple[str, int], tuple[str, ...]] = {}
        for name, versions in schemas.versions.items():
            asub = sub.of(name)
            if asub is None:
                continue
            for v, art in enumerate(versions, 1):
                out[(name, v)] = subscribed_article(art, asub).column_names
        return Shapes(out)


def spark_type(c: Column) -> str:
    """The Spark SQL type a where clause sees a column as."""
    t = c.type
    kind = t.kind
    if kind == "int":
        return "bigint"
    if kind == "bool":
        return "boolean"
    if kind == "decimal":
        return f"decimal({t.precision or 18},{t.scale or 0})"
    if kind == "float":
        return "double"
    if kind == "date":
        return "date"
    if kind == "datetime":
        return "timestamp"
    return "string"


def _image_struct(image: SparkColumn, article: Article) -> SparkColumn:
    schema = T.StructType([T.StructField(c, T.StringType()) for c in article.column_names])
    return F.from_json(image, schema)


def match(
    df: DataFrame,
    image: str,
    out: str,
    article: Article,
    where: str | None,
    fill_from: str | None = None,
) -> DataFrame:
    """``df`` plus a boolean column ``out``: does the image (JSON) match ``where``?

    Article columns are exposed under their own names for ``F.expr(where)``; the record's
    columns are kept under a prefix meanwhile, so an article column named ``op`` or ``lsn``
    does not collide. With ``fill_from`` (an after image), an update's before image takes the
    after value of every column not in ``changed``.
    """
    if where is None:
        return df.withColumn(out, F.lit(True))
    own = df.columns
    if any(c.startswith(_P) for c in own + list(article.column_names)):
        raise ConfigError(f"column names starting with {_P!r} are reserved")
    img = _image_struct(F.col(image), article)
    fill = _image_struct(F.col(fill_from), article) if fill_from else None
    extra = [fill.alias(_P + "fill")] if fill is not None else []
    base = df.select(*[F.col(f"`{c}`").alias(_P + c) for c in own], img.alias(_P + "img"), *extra)
    raw, exposed = [], []
    for i, c in enumerate(article.replicated):
        v = F.col(_P + "img")[c.name]
        if fill is not None:
            unchanged = (F.col(_P + "op") == "U") & ~F.array_contains(F.col(_P + "changed"), c.name)
            v = F.when(unchanged, F.col(_P + "fill")[c.name]).otherwise(v)
        raw.append(v.alias(f"{_P}v{i}"))
        # try_cast: a value Spark cannot read as the column type evaluates as NULL (no match).
        # SQL's try_cast, not Column.try_cast: that one is Spark 4's, this is also 3.5's.
        exposed.append(F.expr(f"try_cast(`{_P}v{i}` AS {spark_type(c)})").alias(c.name))
    try:
        cond = F.coalesce(F.expr(where), F.lit(False))
        evaluated = (
            base.select(*[F.col(_P + c) for c in own], *raw)
            .select(*[F.col(_P + c) for c in own], *exposed)
            .select(*[F.col(_P + c).alias(c) for c in own], cond.alias(out))
        )
    except Exception as e:  # noqa: BLE001 - Spark's analysis errors, reported with the clause
        why = str(e).split("\n", 1)[0][:300]
        raise ConfigError(f"where clause {where!r} of {article.name} cannot be evaluated: {why}") from None
    return evaluated


GROUP_OPS = ("SQL", "PROC")  # events whose row operations follow them in their transaction


def statement_of_rows(changes: DataFrame) -> DataFrame:
    """``changes`` plus ``statement``: for a row command, the lsn of the SQL statement or
    applied procedure event it belongs to (the ``rowcount`` row commands that follow the
    event in its transaction), else NULL."""
    by_xact = Window.partitionBy("xact_seqno").orderBy("lsn")
    sql_lsn = F.when(F.col("op").isin(*GROUP_OPS), F.col("lsn"))
    sql_n = F.when(F.col("op").isin(*GROUP_OPS), F.get_json_object("after", "$.rowcount").cast("long"))
    df = changes.withColumn("_s", F.last(sql_lsn, ignorenulls=True).over(by_xact)).withColumn(
        "_n", F.last(sql_n, ignorenulls=True).over(by_xact)
    )
    nth = Window.partitionBy("xact_seqno", "_s").orderBy("lsn")
    df = df.withColumn("_i", F.sum(F.when(F.col("op").isin("I", "U", "D"), 1).otherwise(0)).over(nth))
    belongs = F.col("op").isin("I", "U", "D") & F.col("_s").isNotNull() & (F.col("_i") <= F.col("_n"))
    return df.withColumn("statement", F.when(belongs, F.col("_s"))).drop("_s", "_n", "_i")


def route(changes: DataFrame, schemas: Schemas, sub: Subscription, statements: bool = True) -> DataFrame:
    """The stream as this subscription receives it (ROUTED_SCHEMA), in no particular order.

    ``statements=False`` (the stream has no SQL or PROC events) skips attributing rows to them.

    Applied procedures (seed 000): the procedure's first row operation, routed as above,
    decides. An update matching both images: the procedure is delivered (the PROC event
    stays, its rows go); an insert or a delete first, or an update that becomes one: that
    one operation is sent instead; nothing matches: nothing is sent.
    """
    if statements:
        with_stmt = statement_of_rows(changes)
    else:
        with_stmt = changes.withColumn("statement", F.lit(None).cast("long"))
    parts: list[DataFrame] = []
    for name, versions in schemas.versions.items():
        asub = sub.of(name)
        if asub is None:
            continue
        of_article = with_stmt.where(F.col("article") == name)
        events = of_article.where(F.col("op").isin("DDL", *GROUP_OPS)).withColumn("bm", F.lit(True))
        parts.append(events.withColumn("am", F.lit(True)))
        for v, art in enumerate(versions, 1):
            rows = of_article.where(F.col("op").isin("I", "U", "D"))
            if len(versions) > 1:
                rows = rows.where(F.col("schema_version") == v)
            m = match(rows, "before", "bm", art, asub.where, fill_from="after")
            parts.append(match(m, "after", "am", art, asub.where))
    if not parts:
        return changes.sparkSession.createDataFrame([], ROUTED_SCHEMA)
    df = parts[0]
    for p in parts[1:]:
        df = df.unionByName(p)
    if statements:
        df = _first_rows(df)
    return df.mapInArrow(route_batches(Shapes.of(schemas, sub), schemas), ROUTED_SCHEMA)


def _first_rows(df: DataFrame) -> DataFrame:
    """Rows of an applied procedure (and the PROC event itself) get ``_proc`` and ``_first``,
    the procedure's first row operation with its matches; other rows get NULLs."""
    group = F.when(F.col("op") == "PROC", F.col("lsn")).otherwise(F.col("statement"))
    df = df.withColumn("_g", group)
    w = (
        Window.partitionBy("_g")
        .orderBy("lsn")
        .rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    )
    row = F.struct(
        F.col("lsn").alias("l"), F.col("op").alias("op"), F.col("bm").alias("bm"), F.col("am").alias("am")
    )
    grouped = (
        df.where(F.col("_g").isNotNull())
        .withColumn("_proc", F.coalesce(F.max(F.col("op") == "PROC").over(w), F.lit(False)))
        .withColumn("_first", F.first(F.when(F.col("op").isin("I", "U", "D"), row), ignorenulls=True).over(w))
    )
    rest = (
        df.where(F.col("_g").isNull())
        .withColumn("_proc", F.lit(False))
        .withColumn("_first", F.lit(None).cast("struct<l:bigint,op:string,bm:boolean,am:boolean>"))
    )
    return grouped.unionByName(rest).drop("_g")


def routed_op(op: str, before_matches: bool, after_matches: bool) -> str | None:
    """Seed 000: the operation a subscription receives for a command, None for nothing."""
    if op == "I":
        return "I" if after_matches else None
    if op == "D":
        return "D" if before_matches else None
    if before_matches and after_matches:
        return "U"
    if before_matches:
        return "D"
    if after_matches:
        return "I"
    return None


def route_batches(
    shapes: Shapes, schemas: Schemas
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Executor side: new op per seed 000, images cut to the subscriber's columns."""
    names = list(CHANGE_FIELDS)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        out: list[list[object]] = [[] for _ in _ARROW_ROUTED]
        for b in batches:
            for r in b.to_pylist():
                op = r["op"]
                first = r.get("_first") if r.get("_proc") else None
                deliver = first is not None and first["op"] == "U" and bool(first["bm"]) and bool(first["am"])
                if op == "PROC" and not deliver:
                    continue  # its first row operation goes instead (or nothing)
                if op in ("DDL", "SQL", "PROC"):
                    row = [r[f] for f in names] + [None, op]
                else:
                    if r.get("_proc") and (deliver or first is None or r["lsn"] != first["l"]):
                        continue  # the procedure does it, or only its first row operation goes
                    new = routed_op(op, bool(r["bm"]), bool(r["am"]))
                    if new is None:
                        continue
                    n_versions = len(schemas.versions[r["article"]])
                    cols = shapes.columns[(r["article"], r["schema_version"] if n_versions > 1 else 1)]
                    keep = set(cols)

                    def cut(image: str | None, keep: set[str] = keep) -> str | None:
                        if image is None:
                            return None
                        return dumps_image({k: v for k, v in json.loads(image).items() if k in keep})

                    before = cut(r["before"]) if new in ("U", "D") else None
                    after = cut(r["after"]) if new in ("U", "I") else None
                    if new == "U":
                        changed = [c for c in (r["changed"] or []) if c in keep]
                    elif new == "I":
                        changed = list(cols)
                    else:
                        changed = []
                    row = [
                        r["lsn"],
                        r["xact_seqno"],
                        r["command_id"],
                        r["article"],
                        new,
                        r["schema_version"],
                        before,
                        after,
                        changed,
                        r["key_before"] if new in ("U", "D") else None,
                        r["key_after"] if new in ("U", "I") else None,
                    ] + [r["statement"], op]
                for i, v in enumerate(row):
                    out[i].append(v)
        if out[0]:
            yield pa.RecordBatch.from_arrays(
                [pa.array(c, type=f.type) for c, f in zip(out, _ARROW_ROUTED, strict=True)],
                schema=_ARROW_ROUTED,
            )

    return run


# -- the same filter and cut for whole rows (snapshot, oracle) ---------------------------
def filter_rows(rows: DataFrame, schemas: Schemas, sub: Subscription, final: bool = True) -> DataFrame:
    """(article, key, image, schema_version) rows -> (article, key, image) as the subscriber
    must hold them: rows matching the where clause at their own version, converted to the
    article's final version (``final``) and cut to the subscriber's columns."""
    shapes = Shapes.of(schemas, sub)
    parts: list[DataFrame] = []
    for name, versions in schemas.versions.items():
        asub = sub.of(name)
        if asub is None:
            continue
        for v, art in enumerate(versions, 1):
            part = rows.where(F.col("article") == name)
            if len(versions) > 1:
                part = part.where(F.col("schema_version") == v)
            parts.append(match(part, "image", "_m", art, asub.where).where("_m").drop("_m"))
    schema = "article string, key string, image string"
    if not parts:
        return rows.sparkSession.createDataFrame([], schema)
    df = parts[0]
    for p in parts[1:]:
        df = df.unionByName(p)

    def upgrade(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            arts, keys, images = [], [], []
            for r in b.to_pylist():
                name = r["article"]
                v = int(r["schema_version"]) if len(schemas.versions[name]) > 1 else 1
                img = json.loads(r["image"])
                if final:
                    img = upgrade_image(schemas, name, v, img)
                    v = len(schemas.versions[name])
                keep = set(shapes.columns[(name, v)])
                arts.append(name)
                keys.append(r["key"])
                images.append(dumps_image({k: x for k, x in img.items() if k in keep}))
            yield pa.RecordBatch.from_pydict(
                {"article": arts, "key": keys, "image": images},
                schema=pa.schema([("article", pa.string()), ("key", pa.string()), ("image", pa.string())]),
            )

    return df.mapInArrow(upgrade, schema)


def upgrade_image(schemas: Schemas, name: str, version: int, image: dict[str, object]) -> dict[str, object]:
    """An image of ``version`` as the row reads after every later schema change: dropped
    columns gone, added columns NULL (the row had no value), retyped values converted."""
    versions = schemas.versions[name]
    img = dict(image)
    for old, new in zip(versions[version - 1 : -1], versions[version:], strict=True):
        old_cols = {c.name: c for c in old.replicated}
        new_cols = {c.name: c for c in new.replicated}
        img = {
            k: (convert_value(old_cols[k], new_cols[k], img.get(k)) if k in old_cols else None)
            for k in new_cols
        }
    return img


def sub_articles(schemas: Schemas, sub: Subscription, versions: dict[str, int]) -> tuple[Article, ...]:
    """The subscriber's articles at the given versions (default 1), in configuration order."""
    out = []
    for name, vs in schemas.versions.items():
        asub = sub.of(name)
        if asub is None:
            continue
        a = subscribed_article(vs[versions.get(name, 1) - 1], asub)
        out.append(replace(a, proc_schema=sub.proc_schema) if sub.proc_schema else a)
    return tuple(out)
