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
-- UPDATE procedure using CALL syntax: all new values, then the original key (pkc).
CREATE OR REPLACE PROCEDURE "sp_MSupd_PurchasingVendor"(c1 integer, c2 varchar(15), c3 varchar(50), c4 smallint, c5 boolean, c6 boolean, c7 varchar(1024), c8 timestamp(3), pkc1 integer)
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
    WHERE tgt."VendorID" = pkc1;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'RP598',
            MESSAGE = format('The row was not found at the Subscriber when applying the replicated %s command for Table ''%s'' with Primary Key(s): %s',
                             'UPDATE', '[Purchasing].[Vendor]',
                             concat_ws(', ', '[VendorID] = ' || coalesce((pkc1)::text, 'NULL'))),
            DETAIL = '20598';
    END IF;
END
$applier$;
-- DELETE procedure using CALL syntax: the key columns.
CREATE OR REPLACE PROCEDURE "sp_MSdel_PurchasingVendor"(pkc1 integer)
LANGUAGE plpgsql AS $applier$
#variable_conflict use_variable
BEGIN
    DELETE FROM "Purchasing"."Vendor" AS tgt
    WHERE tgt."VendorID" = pkc1;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'RP598',
            MESSAGE = format('The row was not found at the Subscriber when applying the replicated %s command for Table ''%s'' with Primary Key(s): %s',
                             'DELETE', '[Purchasing].[Vendor]',
                             concat_ws(', ', '[VendorID] = ' || coalesce((pkc1)::text, 'NULL'))),
            DETAIL = '20598';
    END IF;
END
$applier$;
