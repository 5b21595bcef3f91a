-- The custom update procedure of dbo.kc_rows (SCALL syntax: the new values, the old key,
-- the bitmap of the columns that changed), for PostgreSQL (PL/pgSQL).
-- BROKEN ON PURPOSE: it lacks the zero-row check. When it updates no row it should raise
-- 20598 (SQLSTATE RP598 here), as SQL Server's generated procedures do with
-- IF @@ROWCOUNT = 0; this one returns quietly and the change is lost.
CREATE OR REPLACE PROCEDURE dbo.kc_upd(c1 integer, c2 varchar(40), c3 integer, pkc1 integer, bitmap bytea)
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE dbo.kc_rows AS t SET
        id = CASE WHEN (get_byte(bitmap, 0) & 1) = 1 THEN c1 ELSE t.id END,
        v  = CASE WHEN (get_byte(bitmap, 0) & 2) = 2 THEN c2 ELSE t.v END,
        n  = CASE WHEN (get_byte(bitmap, 0) & 4) = 4 THEN c3 ELSE t.n END
    WHERE t.id = pkc1;
    -- missing: IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = 'RP598', MESSAGE = 'row not found'; END IF;
END $$;
