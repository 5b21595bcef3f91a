CREATE TABLE "Person"."BusinessEntityAddress" (
    "BusinessEntityID" integer NOT NULL,
    "AddressID" integer NOT NULL,
    "AddressTypeID" integer NOT NULL,
    "rowguid" uuid NOT NULL,
    "ModifiedDate" timestamp(3) NOT NULL,
    CONSTRAINT "BusinessEntityAddress_pkey" PRIMARY KEY ("BusinessEntityID", "AddressID", "AddressTypeID")
);
-- INSERT procedure using CALL syntax: all columns in article order.
CREATE OR REPLACE PROCEDURE "sp_MSins_PersonBusinessEntityAddress"(c1 integer, c2 integer, c3 integer, c4 uuid, c5 timestamp(3))
LANGUAGE plpgsql AS $applier$
#variable_conflict use_variable
BEGIN
    INSERT INTO "Person"."BusinessEntityAddress" ("BusinessEntityID", "AddressID", "AddressTypeID", "rowguid", "ModifiedDate")
    VALUES (c1, c2, c3, c4, c5);
END
$applier$;
-- UPDATE procedure using MCALL syntax: all values, original key, bitmap
-- (column i is bit 2^((i-1)%8) of byte (i-1)/8+1, width 1 byte(s)).
CREATE OR REPLACE PROCEDURE "sp_MSupd_PersonBusinessEntityAddress"(c1 integer, c2 integer, c3 integer, c4 uuid, c5 timestamp(3), pkc1 integer, pkc2 integer, pkc3 integer, bitmap bytea)
LANGUAGE plpgsql AS $applier$
#variable_conflict use_variable
BEGIN
    IF (get_byte(bitmap, 0) & 1) = 1 OR (get_byte(bitmap, 0) & 2) = 2 OR (get_byte(bitmap, 0) & 4) = 4 THEN
        -- a key column changed: update every column, the key included
        UPDATE "Person"."BusinessEntityAddress" AS tgt SET
            "BusinessEntityID" = CASE WHEN (get_byte(bitmap, 0) & 1) = 1 THEN c1 ELSE tgt."BusinessEntityID" END,
            "AddressID" = CASE WHEN (get_byte(bitmap, 0) & 2) = 2 THEN c2 ELSE tgt."AddressID" END,
            "AddressTypeID" = CASE WHEN (get_byte(bitmap, 0) & 4) = 4 THEN c3 ELSE tgt."AddressTypeID" END,
            "rowguid" = CASE WHEN (get_byte(bitmap, 0) & 8) = 8 THEN c4 ELSE tgt."rowguid" END,
            "ModifiedDate" = CASE WHEN (get_byte(bitmap, 0) & 16) = 16 THEN c5 ELSE tgt."ModifiedDate" END
        WHERE tgt."BusinessEntityID" = pkc1 AND tgt."AddressID" = pkc2 AND tgt."AddressTypeID" = pkc3;
    ELSE
        UPDATE "Person"."BusinessEntityAddress" AS tgt SET
            "rowguid" = CASE WHEN (get_byte(bitmap, 0) & 8) = 8 THEN c4 ELSE tgt."rowguid" END,
            "ModifiedDate" = CASE WHEN (get_byte(bitmap, 0) & 16) = 16 THEN c5 ELSE tgt."ModifiedDate" END
        WHERE tgt."BusinessEntityID" = pkc1 AND tgt."AddressID" = pkc2 AND tgt."AddressTypeID" = pkc3;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'RP598',
            MESSAGE = format('The row was not found at the Subscriber when applying the replicated %s command for Table ''%s'' with Primary Key(s): %s',
                             'UPDATE', '[Person].[BusinessEntityAddress]',
                             concat_ws(', ', '[BusinessEntityID] = ' || coalesce((pkc1)::text, 'NULL'), '[AddressID] = ' || coalesce((pkc2)::text, 'NULL'), '[AddressTypeID] = ' || coalesce((pkc3)::text, 'NULL'))),
            DETAIL = '20598';
    END IF;
END
$applier$;
-- DELETE procedure using XCALL syntax: the before image of every column; only its key is matched
-- (LOB before images arrive NULL, seed 003).
CREATE OR REPLACE PROCEDURE "sp_MSdel_PersonBusinessEntityAddress"(c1 integer, c2 integer, c3 integer, c4 uuid, c5 timestamp(3))
LANGUAGE plpgsql AS $applier$
#variable_conflict use_variable
BEGIN
    DELETE FROM "Person"."BusinessEntityAddress" AS tgt
    WHERE tgt."BusinessEntityID" = c1 AND tgt."AddressID" = c2 AND tgt."AddressTypeID" = c3;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'RP598',
            MESSAGE = format('The row was not found at the Subscriber when applying the replicated %s command for Table ''%s'' with Primary Key(s): %s',
                             'DELETE', '[Person].[BusinessEntityAddress]',
                             concat_ws(', ', '[BusinessEntityID] = ' || coalesce((c1)::text, 'NULL'), '[AddressID] = ' || coalesce((c2)::text, 'NULL'), '[AddressTypeID] = ' || coalesce((c3)::text, 'NULL'))),
            DETAIL = '20598';
    END IF;
END
$applier$;
