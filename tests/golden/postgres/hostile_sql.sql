CREATE TABLE "we ird]"."Order]Details; --" (
    "it's" integer NOT NULL,
    "a b" varchar(10),
    "[x]" integer NOT NULL,
    "名前" varchar(20),
    "--c" date,
    CONSTRAINT "Order]Details; --_pkey" PRIMARY KEY ("it's", "[x]")
);
-- I statement
INSERT INTO "we ird]"."Order]Details; --" ("it's", "a b", "[x]", "名前", "--c") VALUES (CAST(? AS integer), CAST(? AS varchar(10)), CAST(? AS integer), CAST(? AS varchar(20)), CAST(? AS date));
-- U statement
WITH p AS (SELECT CAST(? AS integer) AS c1, CAST(? AS varchar(10)) AS c2, CAST(? AS integer) AS c3, CAST(? AS varchar(20)) AS c4, CAST(? AS date) AS c5, CAST(? AS integer) AS pkc1, CAST(? AS integer) AS pkc2),
u AS (UPDATE "we ird]"."Order]Details; --" AS tgt SET "it's" = p.c1, "a b" = p.c2, "[x]" = p.c3, "名前" = p.c4, "--c" = p.c5 FROM p WHERE tgt."it's" = p.pkc1 AND tgt."[x]" = p.pkc2 RETURNING 1)
SELECT applier.require_rows((SELECT count(*) FROM u), 'UPDATE', '[we ird]]].[Order]]Details; --]', (SELECT concat_ws(', ', '[it''s] = ' || coalesce(p.pkc1::text, 'NULL'), '[[x]]] = ' || coalesce(p.pkc2::text, 'NULL')) FROM p));
-- D statement
WITH p AS (SELECT CAST(? AS integer) AS pkc1, CAST(? AS integer) AS pkc2),
u AS (DELETE FROM "we ird]"."Order]Details; --" AS tgt USING p WHERE tgt."it's" = p.pkc1 AND tgt."[x]" = p.pkc2 RETURNING 1)
SELECT applier.require_rows((SELECT count(*) FROM u), 'DELETE', '[we ird]]].[Order]]Details; --]', (SELECT concat_ws(', ', '[it''s] = ' || coalesce(p.pkc1::text, 'NULL'), '[[x]]] = ' || coalesce(p.pkc2::text, 'NULL')) FROM p));
