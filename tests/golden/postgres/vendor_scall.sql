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
-- UPDATE procedure using SCALL syntax: changed values (others NULL), original key, bitmap
-- (column i is bit 2^((i-1)%8) of byte (i-1)/8+1, width 1 byte(s)).
CREATE OR REPLACE PROCEDURE "sp_MSupd_PurchasingVendor"(c1 integer DEFAULT NULL, c2 varchar(15) DEFAULT NULL, c3 varchar(50) DEFAULT NULL, c4 smallint DEFAULT NULL, c5 boolean DEFAULT NULL, c6 boolean DEFAULT NULL, c7 varchar(1024) DEFAULT NULL, c8 timestamp(3) DEFAULT NULL, pkc1 integer DEFAULT NULL, bitmap bytea DEFAULT NULL)
LANGUAGE plpgsql AS $applier$
#variable_conflict use_variable
BEGIN
    IF (get_byte(bitmap, 0) & 1) = 1 THEN
        -- a key column changed: update every column, the key included
        UPDATE "Purchasing"."Vendor" AS tgt SET
            "VendorID" = CASE WHEN (get_byte(bitmap, 0) & 1) = 1 THEN c1 ELSE tgt."VendorID" END,
            "AccountNumber" = CASE WHEN (get_byte(bitmap, 0) & 2) = 2 THEN c2 ELSE tgt."AccountNumber" END,
            "Name" = CASE WHEN (get_byte(bitmap, 0) & 4) = 4 THEN c3 ELSE tgt."Name" END,
            "CreditRating" = CASE WHEN (get_byte(bitmap, 0) & 8) = 8 THEN c4 ELSE tgt."CreditRating" END,
            "PreferredVendorStatus" = CASE WHEN (get_byte(bitmap, 0) & 16) = 16 THEN c5 ELSE tgt."PreferredVendorStatus" END,
            "ActiveFlag" = CASE WHEN (get_byte(bitmap, 0) & 32) = 32 THEN c6 ELSE tgt."ActiveFlag" END,
            "PurchasingWebServiceURL" = CASE WHEN (get_byte(bitmap, 0) & 64) = 64 THEN c7 ELSE tgt."PurchasingWebServiceURL" END,
            "ModifiedDate" = CASE WHEN (get_byte(bitmap, 0) & 128) = 128 THEN c8 ELSE tgt."ModifiedDate" END
        WHERE tgt."VendorID" = pkc1;
    ELSE
        UPDATE "Purchasing"."Vendor" AS tgt SET
            "AccountNumber" = CASE WHEN (get_byte(bitmap, 0) & 2) = 2 THEN c2 ELSE tgt."AccountNumber" END,
            "Name" = CASE WHEN (get_byte(bitmap, 0) & 4) = 4 THEN c3 ELSE tgt."Name" END,
            "CreditRating" = CASE WHEN (get_byte(bitmap, 0) & 8) = 8 THEN c4 ELSE tgt."CreditRating" END,
            "PreferredVendorStatus" = CASE WHEN (get_byte(bitmap, 0) & 16) = 16 THEN c5 ELSE tgt."PreferredVendorStatus" END,
            "ActiveFlag" = CASE WHEN (get_byte(bitmap, 0) & 32) = 32 THEN c6 ELSE tgt."ActiveFlag" END,
            "PurchasingWebServiceURL" = CASE WHEN (get_byte(bitmap, 0) & 64) = 64 THEN c7 ELSE tgt."PurchasingWebServiceURL" END,
            "ModifiedDate" = CASE WHEN (get_byte(bitmap, 0) & 128) = 128 THEN c8 ELSE tgt."ModifiedDate" END
        WHERE tgt."VendorID" = pkc1;
    END IF;
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
