-- Seeded bug 2: a subscriber's BEFORE INSERT trigger that drops, without a word, an order line
-- whose order is not there. In commit order the order always comes first; applied on another
-- stream that has not committed it yet, the line is lost.
CREATE OR REPLACE FUNCTION dbo.order_lines_need_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM dbo.orders AS o WHERE o.id = NEW.order_id) THEN
        RETURN NULL;  -- the line is dropped: its order is not there (yet)
    END IF;
    RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS order_lines_need_order ON dbo.order_lines;
CREATE TRIGGER order_lines_need_order BEFORE INSERT ON dbo.order_lines
    FOR EACH ROW EXECUTE FUNCTION dbo.order_lines_need_order();
