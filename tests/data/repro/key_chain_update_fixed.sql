-- The fix of seeded bug 1: the same procedure with the zero-row check SQL Server's generated
-- procedures have (error 20598, RP598 here): the agent rolls the round back and applies it
-- again on one connection in commit order.
CREATE OR REPLACE PROCEDURE dbo.kc_upd(c1 integer, c2 varchar(40), c3 integer, pkc1 integer, bitmap bytea)
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE dbo.kc_rows AS t SET
        id = CASE WHEN (get_byte(bitmap, 0) & 1) = 1 THEN c1 ELSE t.id END,
        v  = CASE WHEN (get_byte(bitmap, 0) & 2) = 2 THEN c2 ELSE t.v END,
        n  = CASE WHEN (get_byte(bitmap, 0) & 4) = 4 THEN c3 ELSE t.n END
    WHERE t.id = pkc1;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'RP598', MESSAGE = format('row not found: dbo.kc_rows id %s', pkc1),
            DETAIL = '20598';
    END IF;
END $$;
