-- Where each turn stands in its session, so that search finds the memories said around a
-- memory with one range probe of memory_words (docs/retrieval.md, "The words said around a
-- memory"), where it probed conversation_context for the turns around and then each turn's
-- memory on memories.
--
-- A turn's session is named by the id of its first turn (session_first), and position counts
-- the session's turns from 1 in the order they were added, set by a trigger as each turn is
-- added. Two turns of one session added at the same instant by two transactions may share a
-- position; search then reads the words of one of them.
ALTER TABLE conversation_context
    ADD COLUMN IF NOT EXISTS session_first BIGINT,
    ADD COLUMN IF NOT EXISTS position BIGINT;

CREATE OR REPLACE FUNCTION memhub_turn_position() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    last_turn RECORD;
BEGIN
    SELECT c.session_first, c.position INTO last_turn FROM conversation_context c
    WHERE c.user_id = NEW.user_id AND c.session_id = NEW.session_id
    ORDER BY c.id DESC LIMIT 1;
    NEW.session_first := coalesce(last_turn.session_first, NEW.id);
    NEW.position := coalesce(last_turn.position, 0) + 1;
    RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS turn_position ON conversation_context;
CREATE TRIGGER turn_position BEFORE INSERT ON conversation_context
    FOR EACH ROW EXECUTE FUNCTION memhub_turn_position();

UPDATE conversation_context c SET session_first = s.session_first, position = s.position
FROM (
    SELECT id, min(id) OVER session AS session_first, row_number() OVER session AS position
    FROM conversation_context
    WINDOW session AS (PARTITION BY user_id, session_id ORDER BY id)
) s
WHERE s.id = c.id;

-- memory_words (migration 0019) also carries what search reads of a memory's neighbours:
-- where its first source turn stands (NULL when it cites no turn memhub holds), its role
-- (an episode's words come before a fact's of the same turn) and its expiry. Kept by the
-- same triggers, in the writing statement's transaction; a memory's turn added in the same
-- statement is there when they run (after it).
ALTER TABLE memory_words
    ADD COLUMN IF NOT EXISTS role TEXT,
    ADD COLUMN IF NOT EXISTS expires_at TIMESTAMPTZ,
    ADD COLUMN IF NOT EXISTS first_turn_session BIGINT,
    ADD COLUMN IF NOT EXISTS first_turn_position BIGINT;

CREATE OR REPLACE FUNCTION memhub_memory_words_added() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_words (id, user_id, agent_id, run_id, valid_to, hash, tsv, role,
                              expires_at, first_turn_session, first_turn_position)
    SELECT a.id, a.user_id, a.agent_id, a.run_id, a.valid_to, a.hash, a.tsv, a.role,
           a.expires_at, c.session_first, c.position
    FROM added a LEFT JOIN conversation_context c ON c.id = a.source_turn_ids[1];
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION memhub_memory_words_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_words
    SET user_id = NEW.user_id, agent_id = NEW.agent_id, run_id = NEW.run_id,
        valid_to = NEW.valid_to, hash = NEW.hash, tsv = NEW.tsv, role = NEW.role,
        expires_at = NEW.expires_at,
        first_turn_session = (SELECT c.session_first FROM conversation_context c
                              WHERE c.id = NEW.source_turn_ids[1]),
        first_turn_position = (SELECT c.position FROM conversation_context c
                               WHERE c.id = NEW.source_turn_ids[1])
    WHERE id = NEW.id;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS memory_words_changed ON memories;
CREATE TRIGGER memory_words_changed
    AFTER UPDATE OF user_id, agent_id, run_id, memory, hash, valid_to, role, expires_at,
        source_turn_ids ON memories
    FOR EACH ROW
    WHEN ((OLD.user_id, OLD.agent_id, OLD.run_id, OLD.memory, OLD.hash, OLD.valid_to,
           OLD.role, OLD.expires_at, OLD.source_turn_ids)
          IS DISTINCT FROM
          (NEW.user_id, NEW.agent_id, NEW.run_id, NEW.memory, NEW.hash, NEW.valid_to,
           NEW.role, NEW.expires_at, NEW.source_turn_ids))
    EXECUTE FUNCTION memhub_memory_words_changed();

-- Filled in this migration's transaction (searches and writes wait for it). The word indexes
-- are built again after it, which is faster than updating them row by row.
DROP INDEX IF EXISTS memory_words_tsv;
DROP INDEX IF EXISTS memory_words_scope_tsv;

UPDATE memory_words w
SET role = m.role, expires_at = m.expires_at,
    first_turn_session = c.session_first, first_turn_position = c.position
FROM memories m LEFT JOIN conversation_context c ON c.id = m.source_turn_ids[1]
WHERE w.id = m.id;

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

CREATE INDEX IF NOT EXISTS memory_words_turn_position
    ON memory_words (first_turn_session, first_turn_position);

ANALYZE memory_words;
