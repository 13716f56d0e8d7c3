-- Search's full-text probes read a narrow copy of each memory's words instead of the memories
-- rows themselves. A probe reads the first matches of each query word from the heap, and a
-- memories row carries its 1.5 KB vector, so a page held about four rows; here it holds about
-- forty. At 100,000 memories of one user the full-text statement took 8.1 / 11.8 ms p50 / p95
-- on memories and 4.7 / 6.7 ms on this table, with identical results (docs/benchmarks.md).
-- The copy is kept by triggers, in the writing statement's transaction, so every write path
-- (add, import, update, supersede, delete, truncate) keeps it exact. No foreign key: its
-- per-row check made each insert 0.4 ms slower (about 2.0 ms with HNSW), and the delete
-- trigger does its one job.
-- Filled in this migration's transaction: writes wait for it (8.7 s for 1,000,000 memories
-- here).
CREATE TABLE IF NOT EXISTS memory_words (
    id       UUID PRIMARY KEY,
    user_id  VARCHAR(255),
    agent_id VARCHAR(255),
    run_id   VARCHAR(255),
    valid_to TIMESTAMPTZ,
    hash     TEXT NOT NULL,
    tsv      TSVECTOR NOT NULL
);

-- One INSERT per statement (a COPY of 100,000 rows included), from the rows it added.
CREATE OR REPLACE FUNCTION memhub_memory_words_added() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_words (id, user_id, agent_id, run_id, valid_to, hash, tsv)
    SELECT id, user_id, agent_id, run_id, valid_to, hash, tsv FROM added;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION memhub_memory_words_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_words
    SET user_id = NEW.user_id, agent_id = NEW.agent_id, run_id = NEW.run_id,
        valid_to = NEW.valid_to, hash = NEW.hash, tsv = NEW.tsv
    WHERE id = NEW.id;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION memhub_memory_words_removed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memory_words w USING removed r WHERE w.id = r.id;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION memhub_memory_words_truncated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE memory_words;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS memory_words_added ON memories;
CREATE TRIGGER memory_words_added AFTER INSERT ON memories
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION memhub_memory_words_added();

-- Only the columns the copy holds: filling in a vector (the worker's update) does not fire it.
DROP TRIGGER IF EXISTS memory_words_changed ON memories;
CREATE TRIGGER memory_words_changed
    AFTER UPDATE OF user_id, agent_id, run_id, memory, hash, valid_to ON memories
    FOR EACH ROW
    WHEN ((OLD.user_id, OLD.agent_id, OLD.run_id, OLD.memory, OLD.hash, OLD.valid_to)
          IS DISTINCT FROM
          (NEW.user_id, NEW.agent_id, NEW.run_id, NEW.memory, NEW.hash, NEW.valid_to))
    EXECUTE FUNCTION memhub_memory_words_changed();

DROP TRIGGER IF EXISTS memory_words_removed ON memories;
CREATE TRIGGER memory_words_removed AFTER DELETE ON memories
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION memhub_memory_words_removed();

DROP TRIGGER IF EXISTS memory_words_truncated ON memories;
CREATE TRIGGER memory_words_truncated AFTER TRUNCATE ON memories
    FOR EACH STATEMENT EXECUTE FUNCTION memhub_memory_words_truncated();

INSERT INTO memory_words (id, user_id, agent_id, run_id, valid_to, hash, tsv)
SELECT id, user_id, agent_id, run_id, valid_to, hash, tsv FROM memories
ON CONFLICT (id) DO NOTHING;

-- As on memories before (migrations 0016, 0017): the words, and the scope ids with the words
-- where btree_gin is installed; no pending list.
CREATE INDEX IF NOT EXISTS memory_words_tsv ON memory_words USING gin (tsv)
    WITH (fastupdate = off);
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'btree_gin') THEN
        CREATE INDEX IF NOT EXISTS memory_words_scope_tsv
            ON memory_words USING gin (user_id, agent_id, run_id, tsv) WITH (fastupdate = off);
    END IF;
END
$$;

-- Statistics now, so the first searches are planned on them (autovacuum analyses it later).
ANALYZE memory_words;
