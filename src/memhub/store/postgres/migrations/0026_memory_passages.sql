-- A memory longer than the embedder's window is embedded as passages (memhub.embed.passages):
-- consecutive windows of its text, each with its own vector, so that what its tail says can be
-- found by meaning. Search takes a memory's best passage as its vector score and returns that
-- passage (store/postgres/search.py). Only long memories have rows here.
-- Kept by triggers, as memory_words (0019, which says why there is no foreign key): a deleted
-- memory's passages go with it; a memory whose text changes loses them (its new vector is
-- that of its first window again, as for a memory stored before this migration).
CREATE TABLE IF NOT EXISTS memory_passages (
    memory_id  UUID NOT NULL,
    ordinal    INTEGER NOT NULL CHECK (ordinal >= 0),
    start_char INTEGER NOT NULL CHECK (start_char >= 0),
    end_char   INTEGER NOT NULL CHECK (end_char > start_char),
    PRIMARY KEY (memory_id, ordinal)
);

-- The vector column has the space's dimension: added here when the database records one,
-- else by ensure_embedding_space (store/postgres/space.py) with the memories' column.
DO $$
DECLARE
    dimension TEXT;
BEGIN
    SELECT value INTO dimension FROM memhub_settings WHERE key = 'embedding_dimension';
    IF dimension IS NOT NULL THEN
        EXECUTE format('ALTER TABLE memory_passages ADD COLUMN IF NOT EXISTS embedding vector(%s)',
                       dimension::INTEGER);
        CREATE INDEX IF NOT EXISTS memory_passages_embedding_hnsw
            ON memory_passages USING hnsw (embedding vector_cosine_ops);
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION memhub_memory_passages_removed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memory_passages p USING removed r WHERE p.memory_id = r.id;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION memhub_memory_passages_stale() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memory_passages WHERE memory_id = NEW.id;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION memhub_memory_passages_truncated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE memory_passages;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS memory_passages_removed ON memories;
CREATE TRIGGER memory_passages_removed AFTER DELETE ON memories
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION memhub_memory_passages_removed();

DROP TRIGGER IF EXISTS memory_passages_stale ON memories;
CREATE TRIGGER memory_passages_stale AFTER UPDATE OF hash ON memories
    FOR EACH ROW WHEN (OLD.hash IS DISTINCT FROM NEW.hash)
    EXECUTE FUNCTION memhub_memory_passages_stale();

DROP TRIGGER IF EXISTS memory_passages_truncated ON memories;
CREATE TRIGGER memory_passages_truncated AFTER TRUNCATE ON memories
    FOR EACH STATEMENT EXECUTE FUNCTION memhub_memory_passages_truncated();
