CREATE TABLE "Purchasing"."Vendor" (
    "VendorID" integer NOT NULL,
    "AccountNumber" varchar(15) NOT NULL,
    "Name" varchar(50) NOT NULL,
    "CreditRating" smallint NOT NULL,
    "PreferredVendorStatus" boolean NOT NULL,
    "ActiveFlag" boolean NOT NULL,
    "PurchasingWebServiceURL" varchar(1024),
    "ModifiedDate" timestamp(3) NOT NULL,
    CONSTRAINT "Vendor_pkey" PRIMARY KEY ("VendorID")
);
-- I statement
INSERT INTO "Purchasing"."Vendor" ("VendorID", "AccountNumber", "Name", "CreditRating", "PreferredVendorStatus", "ActiveFlag", "PurchasingWebServiceURL", "ModifiedDate") VALUES (CAST(? AS integer), CAST(? AS varchar(15)), CAST(? AS varchar(50)), CAST(? AS smallint), CAST(? AS boolean), CAST(? AS boolean), CAST(? AS varchar(1024)), CAST(? AS timestamp(3)));
-- U statement
WITH p AS (SELECT CAST(? AS integer) AS c1, CAST(? AS varchar(15)) AS c2, CAST(? AS varchar(50)) AS c3, CAST(? AS smallint) AS c4, CAST(? AS boolean) AS c5, CAST(? AS boolean) AS c6, CAST(? AS varchar(1024)) AS c7, CAST(? AS timestamp(3)) AS c8, CAST(? AS integer) AS pkc1),
u AS (UPDATE "Purchasing"."Vendor" AS tgt SET "VendorID" = p.c1, "AccountNumber" = p.c2, "Name" = p.c3, "CreditRating" = p.c4, "PreferredVendorStatus" = p.c5, "ActiveFlag" = p.c6, "PurchasingWebServiceURL" = p.c7, "ModifiedDate" = p.c8 FROM p WHERE tgt."VendorID" = p.pkc1 RETURNING 1)
SELECT applier.require_rows((SELECT count(*) FROM u), 'UPDATE', '[Purchasing].[Vendor]', (SELECT concat_ws(', ', '[VendorID] = ' || coalesce(p.pkc1::text, 'NULL')) FROM p));
-- D statement
WITH p AS (SELECT CAST(? AS integer) AS pkc1),
u AS (DELETE FROM "Purchasing"."Vendor" AS tgt USING p WHERE tgt."VendorID" = p.pkc1 RETURNING 1)
SELECT applier.require_rows((SELECT count(*) FROM u), 'DELETE', '[Purchasing].[Vendor]', (SELECT concat_ws(', ', '[VendorID] = ' || coalesce(p.pkc1::text, 'NULL')) FROM p));
