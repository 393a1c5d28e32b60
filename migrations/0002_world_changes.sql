-- What a session changed in the world, row by row: for each row written since the world was
-- fresh, the row as it was (null: the session inserted it) and as it is (null: deleted). The
-- harness reads it after the session (`verifier.changed_tables`, `unchanged = ["*"]`). The
-- triggers that fill it are created on each template after its seeding (`backend::world`,
-- `change_log_triggers`), and it is emptied after a task's own seed rows, so a fresh world lists
-- nothing. No API route reads or writes it.

CREATE TABLE world_changes (
    tbl    TEXT   NOT NULL,
    id     BIGINT NOT NULL,
    before JSONB,
    after  JSONB,
    PRIMARY KEY (tbl, id)
);

-- Row-level: the first write of a row keeps its `before`, every later one moves its `after`, so a
-- row written back as it was, or inserted and deleted again, nets out to no change.
CREATE FUNCTION note_world_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO world_changes VALUES (TG_TABLE_NAME, NEW.id, NULL, to_jsonb(NEW))
            ON CONFLICT (tbl, id) DO UPDATE SET after = EXCLUDED.after;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO world_changes VALUES (TG_TABLE_NAME, NEW.id, to_jsonb(OLD), to_jsonb(NEW))
            ON CONFLICT (tbl, id) DO UPDATE SET after = EXCLUDED.after;
    ELSE
        INSERT INTO world_changes VALUES (TG_TABLE_NAME, OLD.id, to_jsonb(OLD), NULL)
            ON CONFLICT (tbl, id) DO UPDATE SET after = NULL;
    END IF;
    RETURN NULL;
END
$$;
