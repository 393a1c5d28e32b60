-- Which tables of the world a session wrote: every statement that inserts, updates or deletes at
-- least one row notes its table here, and the harness reads the list after the session
-- (`verifier.changed_tables`, and `unchanged = ["*"]`). Emptied after the seeding and after a
-- task's own seed rows, so a fresh world lists nothing. No API route reads or writes it.

CREATE TABLE world_changes (tbl TEXT PRIMARY KEY);

-- Statement-level, with the statement's rows as `changed`: a statement that touched no row notes
-- nothing, and a bulk write costs one note, not one per row.
CREATE FUNCTION note_world_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM changed) THEN
        INSERT INTO world_changes VALUES (TG_TABLE_NAME) ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION note_world_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO world_changes VALUES (TG_TABLE_NAME) ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

DO $$
DECLARE
    t TEXT;
BEGIN
    FOREACH t IN ARRAY ARRAY['customers', 'users', 'tickets', 'notifications', 'repos', 'services', 'change_requests', 'reviews',
                             'review_comments', 'runbooks', 'deploys'] LOOP
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %I REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION note_world_change()', t || '_inserted', t);
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION note_world_change()', t || '_updated', t);
        EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %I REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION note_world_change()', t || '_deleted', t);
        EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %I FOR EACH STATEMENT EXECUTE FUNCTION note_world_truncate()', t || '_truncated', t);
    END LOOP;
END
$$;
