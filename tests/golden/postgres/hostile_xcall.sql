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
-- UPDATE procedure using XCALL syntax: the before image (c1_old..), then the after image.
-- LOB before images arrive NULL (seed 003) and are never matched on.
CREATE OR REPLACE PROCEDURE "sp_MSupd_we ird]Order]Details; --"(c1_old integer, c2_old varchar(10), c3_old integer, c4_old varchar(20), c5_old date, c1 integer, c2 varchar(10), c3 integer, c4 varchar(20), c5 date)
LANGUAGE plpgsql AS $applier$
#variable_conflict use_variable
BEGIN
    UPDATE "we ird]"."Order]Details; --" AS tgt SET
        "it's" = c1,
        "a b" = c2,
        "[x]" = c3,
        "名前" = c4,
        "--c" = c5
    WHERE tgt."it's" = c1_old AND tgt."[x]" = c3_old;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'RP598',
            MESSAGE = format('The row was not found at the Subscriber when applying the replicated %s command for Table ''%s'' with Primary Key(s): %s',
                             'UPDATE', '[we ird]]].[Order]]Details; --]',
                             concat_ws(', ', '[it''s] = ' || coalesce((c1_old)::text, 'NULL'), '[[x]]] = ' || coalesce((c3_old)::text, 'NULL'))),
            DETAIL = '20598';
    END IF;
END
$applier$;
-- DELETE procedure using XCALL syntax: the before image of every column; only its key is matched
-- (LOB before images arrive NULL, seed 003).
CREATE OR REPLACE PROCEDURE "sp_MSdel_we ird]Order]Details; --"(c1 integer, c2 varchar(10), c3 integer, c4 varchar(20), c5 date)
LANGUAGE plpgsql AS $applier$
#variable_conflict use_variable
BEGIN
    DELETE FROM "we ird]"."Order]Details; --" AS tgt
    WHERE tgt."it's" = c1 AND tgt."[x]" = c3;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'RP598',
            MESSAGE = format('The row was not found at the Subscriber when applying the replicated %s command for Table ''%s'' with Primary Key(s): %s',
                             'DELETE', '[we ird]]].[Order]]Details; --]',
                             concat_ws(', ', '[it''s] = ' || coalesce((c1)::text, 'NULL'), '[[x]]] = ' || coalesce((c3)::text, 'NULL'))),
            DETAIL = '20598';
    END IF;
END
$applier$;
