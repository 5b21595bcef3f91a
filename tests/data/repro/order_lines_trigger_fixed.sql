-- The fix of seeded bug 2: the trigger refuses the line with a foreign-key violation (23503)
-- instead of dropping it, so the applier sees a conflict and applies the transaction again
-- later, in commit order, when its order is there.
CREATE OR REPLACE FUNCTION dbo.order_lines_need_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM dbo.orders AS o WHERE o.id = NEW.order_id) THEN
        RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation',
            MESSAGE = format('order %s of order line %s is not there', NEW.order_id, NEW.id);
    END IF;
    RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS order_lines_need_order ON dbo.order_lines;
CREATE TRIGGER order_lines_need_order BEFORE INSERT ON dbo.order_lines
    FOR EACH ROW EXECUTE FUNCTION dbo.order_lines_need_order();
