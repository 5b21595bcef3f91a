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
-- INSERT procedure using CALL syntax: all columns in article order.
CREATE OR REPLACE PROCEDURE "sp_MSins_PurchasingVendor"(c1 integer, c2 varchar(15), c3 varchar(50), c4 smallint, c5 boolean, c6 boolean, c7 varchar(1024), c8 timestamp(3))
LANGUAGE plpgsql AS $applier$
#variable_conflict use_variable
BEGIN
    INSERT INTO "Purchasing"."Vendor" ("VendorID", "AccountNumber", "Name", "CreditRating", "PreferredVendorStatus", "ActiveFlag", "PurchasingWebServiceURL", "ModifiedDate")
    VALUES (c1, c2, c3, c4, c5, c6, c7, c8);
END
$applier$;
-- UPDATE procedure using XCALL syntax: the before image (c1_old..), then the after image.
-- LOB before images arrive NULL (seed 003) and are never matched on.
CREATE OR REPLACE PROCEDURE "sp_MSupd_PurchasingVendor"(c1_old integer, c2_old varchar(15), c3_old varchar(50), c4_old smallint, c5_old boolean, c6_old boolean, c7_old varchar(1024), c8_old timestamp(3), c1 integer, c2 varchar(15), c3 varchar(50), c4 smallint, c5 boolean, c6 boolean, c7 varchar(1024), c8 timestamp(3))
LANGUAGE plpgsql AS $applier$
#variable_conflict use_variable
BEGIN
    UPDATE "Purchasing"."Vendor" AS tgt SET
        "VendorID" = c1,
        "AccountNumber" = c2,
        "Name" = c3,
        "CreditRating" = c4,
        "PreferredVendorStatus" = c5,
        "ActiveFlag" = c6,
        "PurchasingWebServiceURL" = c7,
        "ModifiedDate" = c8
    WHERE tgt."VendorID" = c1_old;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'RP598',
            MESSAGE = format('The row was not found at the Subscriber when applying the replicated %s command for Table ''%s'' with Primary Key(s): %s',
                             'UPDATE', '[Purchasing].[Vendor]',
                             concat_ws(', ', '[VendorID] = ' || coalesce((c1_old)::text, 'NULL'))),
            DETAIL = '20598';
    END IF;
END
$applier$;
-- DELETE procedure using XCALL syntax: the before image of every column; only its key is matched
-- (LOB before images arrive NULL, seed 003).
CREATE OR REPLACE PROCEDURE "sp_MSdel_PurchasingVendor"(c1 integer, c2 varchar(15), c3 varchar(50), c4 smallint, c5 boolean, c6 boolean, c7 varchar(1024), c8 timestamp(3))
LANGUAGE plpgsql AS $applier$
#variable_conflict use_variable
BEGIN
    DELETE FROM "Purchasing"."Vendor" AS tgt
    WHERE tgt."VendorID" = c1;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'RP598',
            MESSAGE = format('The row was not found at the Subscriber when applying the replicated %s command for Table ''%s'' with Primary Key(s): %s',
                             'DELETE', '[Purchasing].[Vendor]',
                             concat_ws(', ', '[VendorID] = ' || coalesce((c1)::text, 'NULL'))),
            DETAIL = '20598';
    END IF;
END
$applier$;
