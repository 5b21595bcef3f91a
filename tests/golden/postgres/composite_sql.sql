CREATE TABLE "Person"."BusinessEntityAddress" (
    "BusinessEntityID" integer NOT NULL,
    "AddressID" integer NOT NULL,
    "AddressTypeID" integer NOT NULL,
    "rowguid" uuid NOT NULL,
    "ModifiedDate" timestamp(3) NOT NULL,
    CONSTRAINT "BusinessEntityAddress_pkey" PRIMARY KEY ("BusinessEntityID", "AddressID", "AddressTypeID")
);
-- I statement
INSERT INTO "Person"."BusinessEntityAddress" ("BusinessEntityID", "AddressID", "AddressTypeID", "rowguid", "ModifiedDate") VALUES (CAST(? AS integer), CAST(? AS integer), CAST(? AS integer), CAST(? AS uuid), CAST(? AS timestamp(3)));
-- U statement
WITH p AS (SELECT CAST(? AS integer) AS c1, CAST(? AS integer) AS c2, CAST(? AS integer) AS c3, CAST(? AS uuid) AS c4, CAST(? AS timestamp(3)) AS c5, CAST(? AS integer) AS pkc1, CAST(? AS integer) AS pkc2, CAST(? AS integer) AS pkc3),
u AS (UPDATE "Person"."BusinessEntityAddress" AS tgt SET "BusinessEntityID" = p.c1, "AddressID" = p.c2, "AddressTypeID" = p.c3, "rowguid" = p.c4, "ModifiedDate" = p.c5 FROM p WHERE tgt."BusinessEntityID" = p.pkc1 AND tgt."AddressID" = p.pkc2 AND tgt."AddressTypeID" = p.pkc3 RETURNING 1)
SELECT applier.require_rows((SELECT count(*) FROM u), 'UPDATE', '[Person].[BusinessEntityAddress]', (SELECT concat_ws(', ', '[BusinessEntityID] = ' || coalesce(p.pkc1::text, 'NULL'), '[AddressID] = ' || coalesce(p.pkc2::text, 'NULL'), '[AddressTypeID] = ' || coalesce(p.pkc3::text, 'NULL')) FROM p));
-- D statement
WITH p AS (SELECT CAST(? AS integer) AS pkc1, CAST(? AS integer) AS pkc2, CAST(? AS integer) AS pkc3),
u AS (DELETE FROM "Person"."BusinessEntityAddress" AS tgt USING p WHERE tgt."BusinessEntityID" = p.pkc1 AND tgt."AddressID" = p.pkc2 AND tgt."AddressTypeID" = p.pkc3 RETURNING 1)
SELECT applier.require_rows((SELECT count(*) FROM u), 'DELETE', '[Person].[BusinessEntityAddress]', (SELECT concat_ws(', ', '[BusinessEntityID] = ' || coalesce(p.pkc1::text, 'NULL'), '[AddressID] = ' || coalesce(p.pkc2::text, 'NULL'), '[AddressTypeID] = ' || coalesce(p.pkc3::text, 'NULL')) FROM p));
