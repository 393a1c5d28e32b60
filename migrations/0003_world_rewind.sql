-- Rewinding a world in place to the state it was cloned in (`backend::world`, `World::reset`):
-- instead of cloning a fresh copy of the template for every session and dropping the old one,
-- a reset puts back the rows that writes since the clone touched, as they were, and the
-- sequences as they were. The same triggers that fill `world_changes` fill `world_undo`, which,
-- unlike `world_changes`, a task's own seed rows do not empty: it holds every row written since
-- the clone, seed and session alike. No API route reads or writes these tables.

-- For each row written since the clone, the row as it was then (null: it did not exist).
CREATE TABLE world_undo (
    tbl    TEXT   NOT NULL,
    id     BIGINT NOT NULL,
    before JSONB,
    PRIMARY KEY (tbl, id)
);

-- Each table's id sequence as the seeding left it; filled when the template is built.
CREATE TABLE world_sequences (
    seq        TEXT    PRIMARY KEY,
    last_value BIGINT  NOT NULL,
    is_called  BOOLEAN NOT NULL
);

-- Why this copy cannot be rewound, if anything made it so (a TRUNCATE, a schema change): a reset
-- then clones a fresh copy instead. Filled by triggers the template build adds where it may.
CREATE TABLE world_unrewindable (
    why TEXT NOT NULL
);

-- The change log's trigger (0002) notes each row's first `before` in `world_undo` too.
CREATE OR REPLACE FUNCTION note_world_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO world_changes VALUES (TG_TABLE_NAME, NEW.id, NULL, to_jsonb(NEW))
            ON CONFLICT (tbl, id) DO UPDATE SET after = EXCLUDED.after;
        INSERT INTO world_undo VALUES (TG_TABLE_NAME, NEW.id, NULL) ON CONFLICT DO NOTHING;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO world_changes VALUES (TG_TABLE_NAME, NEW.id, to_jsonb(OLD), to_jsonb(NEW))
            ON CONFLICT (tbl, id) DO UPDATE SET after = EXCLUDED.after;
        INSERT INTO world_undo VALUES (TG_TABLE_NAME, OLD.id, to_jsonb(OLD)) ON CONFLICT DO NOTHING;
        IF NEW.id IS DISTINCT FROM OLD.id THEN
            INSERT INTO world_undo VALUES (TG_TABLE_NAME, NEW.id, NULL) ON CONFLICT DO NOTHING;
        END IF;
    ELSE
        INSERT INTO world_changes VALUES (TG_TABLE_NAME, OLD.id, to_jsonb(OLD), NULL)
            ON CONFLICT (tbl, id) DO UPDATE SET after = NULL;
        INSERT INTO world_undo VALUES (TG_TABLE_NAME, OLD.id, to_jsonb(OLD)) ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION note_unrewindable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO world_unrewindable VALUES (TG_OP || ' ' || TG_TABLE_NAME);
    RETURN NULL;
END
$$;

-- Puts back every row in `world_undo` as it was and every sequence as `world_sequences` holds
-- it, then empties both logs; the number of rows put back. With foreign keys and the change
-- log's triggers off (`session_replication_role = replica`, which needs a superuser: on another
-- server the reset clones instead): every row a write touched is deleted and its `before`
-- inserted, so the order of the tables does not matter, and the end state is the cloned one,
-- which satisfied every constraint.
CREATE FUNCTION rewind_world() RETURNS BIGINT LANGUAGE plpgsql AS $$
DECLARE
    t TEXT;
    n BIGINT;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_event_trigger WHERE evtname = 'world_schema_changes') THEN
        RAISE EXCEPTION 'this world copy has no guard against changes a rewind cannot undo (its template was built by a role that is not a superuser)';
    END IF;
    IF EXISTS (SELECT 1 FROM world_unrewindable) THEN
        RAISE EXCEPTION 'this world copy cannot be rewound: %', (SELECT string_agg(why, '; ') FROM world_unrewindable);
    END IF;
    SET LOCAL session_replication_role = replica;
    SELECT count(*) INTO n FROM world_undo;
    FOR t IN SELECT DISTINCT tbl FROM world_undo LOOP
        EXECUTE format('DELETE FROM %I WHERE id IN (SELECT id FROM world_undo WHERE tbl = %L)', t, t);
        EXECUTE format('INSERT INTO %I SELECT (jsonb_populate_record(NULL::%I, before)).* FROM world_undo WHERE tbl = %L AND before IS NOT NULL', t, t, t);
    END LOOP;
    PERFORM setval(seq::regclass, last_value, is_called) FROM world_sequences;
    DELETE FROM world_undo;
    DELETE FROM world_changes;
    RETURN n;
END
$$;
