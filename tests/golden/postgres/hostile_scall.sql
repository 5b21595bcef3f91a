CREATE TABLE "we ird]"."Order]Details; --" (
    "it's" integer NOT NULL,
    "a b" varchar(10),
    "[x]" integer NOT NULL,
    "名前" varchar(20),
    "--c" date,
    CONSTRAINT "Order]Details; --_pkey" PRIMARY KEY ("it's", "[x]")
);
-- INSERT procedure using CALL syntax: all columns in article order.
CREATE OR REPLACE PROCEDURE "sp_MSins_we ird]Order]Details; --"(c1 integer, c2 varchar(10), c3 integer, c4 varchar(20), c5 date)
LANGUAGE plpgsql AS $applier$
#variable_conflict use_variable
BEGIN
    INSERT INTO "we ird]"."Order]Details; --" ("it's", "a b", "[x]", "名前", "--c")
    VALUES (c1, c2, c3, c4, c5);
END
$applier$;
-- UPDATE procedure using SCALL syntax: changed values (others NULL), original key, bitmap
-- (column i is bit 2^((i-1)%8) of byte (i-1)/8+1, width 1 byte(s)).
CREATE OR REPLACE PROCEDURE "sp_MSupd_we ird]Order]Details; --"(c1 integer DEFAULT NULL, c2 varchar(10) DEFAULT NULL, c3 integer DEFAULT NULL, c4 varchar(20) DEFAULT NULL, c5 date DEFAULT NULL, pkc1 integer DEFAULT NULL, pkc2 integer DEFAULT NULL, bitmap bytea DEFAULT NULL)
LANGUAGE plpgsql AS $applier$
#variable_conflict use_variable
BEGIN
    IF (get_byte(bitmap, 0) & 1) = 1 OR (get_byte(bitmap, 0) & 4) = 4 THEN
        -- a key column changed: update every column, the key included
        UPDATE "we ird]"."Order]Details; --" AS tgt SET
            "it's" = CASE WHEN (get_byte(bitmap, 0) & 1) = 1 THEN c1 ELSE tgt."it's" END,
            "a b" = CASE WHEN (get_byte(bitmap, 0) & 2) = 2 THEN c2 ELSE tgt."a b" END,
            "[x]" = CASE WHEN (get_byte(bitmap, 0) & 4) = 4 THEN c3 ELSE tgt."[x]" END,
            "名前" = CASE WHEN (get_byte(bitmap, 0) & 8) = 8 THEN c4 ELSE tgt."名前" END,
            "--c" = CASE WHEN (get_byte(bitmap, 0) & 16) = 16 THEN c5 ELSE tgt."--c" END
        WHERE tgt."it's" = pkc1 AND tgt."[x]" = pkc2;
    ELSE
        UPDATE "we ird]"."Order]Details; --" AS tgt SET
            "a b" = CASE WHEN (get_byte(bitmap, 0) & 2) = 2 THEN c2 ELSE tgt."a b" END,
            "名前" = CASE WHEN (get_byte(bitmap, 0) & 8) = 8 THEN c4 ELSE tgt."名前" END,
            "--c" = CASE WHEN (get_byte(bitmap, 0) & 16) = 16 THEN c5 ELSE tgt."--c" END
        WHERE tgt."it's" = pkc1 AND tgt."[x]" = pkc2;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'RP598',
            MESSAGE = format('The row was not found at the Subscriber when applying the replicated %s command for Table ''%s'' with Primary Key(s): %s',
                             'UPDATE', '[we ird]]].[Order]]Details; --]',
                             concat_ws(', ', '[it''s] = ' || coalesce((pkc1)::text, 'NULL'), '[[x]]] = ' || coalesce((pkc2)::text, 'NULL'))),
            DETAIL = '20598';
    END IF;
END
$applier$;
-- DELETE procedure using CALL syntax: the key columns.
CREATE OR REPLACE PROCEDURE "sp_MSdel_we ird]Order]Details; --"(pkc1 integer, pkc2 integer)
LANGUAGE plpgsql AS $applier$
#variable_conflict use_variable
BEGIN
    DELETE FROM "we ird]"."Order]Details; --" AS tgt
    WHERE tgt."it's" = pkc1 AND tgt."[x]" = pkc2;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'RP598',
            MESSAGE = format('The row was not found at the Subscriber when applying the replicated %s command for Table ''%s'' with Primary Key(s): %s',
                             'DELETE', '[we ird]]].[Order]]Details; --]',
                             concat_ws(', ', '[it''s] = ' || coalesce((pkc1)::text, 'NULL'), '[[x]]] = ' || coalesce((pkc2)::text, 'NULL'))),
            DETAIL = '20598';
    END IF;
END
$applier$;
