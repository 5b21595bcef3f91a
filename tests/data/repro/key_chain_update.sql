-- Seeded bug 1: the custom update procedure of dbo.kc_rows (SCALL syntax) without the zero-row
-- check. When a key chain's second link (2 -> 3) runs before the first (1 -> 2) is committed,
-- it updates nothing and says nothing: the chain's row stays at key 2, key 3 is never written.
CREATE OR REPLACE PROCEDURE dbo.kc_upd(c1 integer, c2 varchar(40), c3 integer, pkc1 integer, bitmap bytea)
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE dbo.kc_rows AS t SET
        id = CASE WHEN (get_byte(bitmap, 0) & 1) = 1 THEN c1 ELSE t.id END,
        v  = CASE WHEN (get_byte(bitmap, 0) & 2) = 2 THEN c2 ELSE t.v END,
        n  = CASE WHEN (get_byte(bitmap, 0) & 4) = 4 THEN c3 ELSE t.n END
    WHERE t.id = pkc1;
END $$;
