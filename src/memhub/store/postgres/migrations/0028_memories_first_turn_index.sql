-- memhub: no-transaction
-- Search reads the words of the memories said around each candidate (docs/retrieval.md,
-- "The words said around a memory"): from the turns around a memory's first source turn to
-- the memories whose first source turn each is. That replaces 0027's lookup from a turn to
-- the memories said just after it, whose index goes. Built concurrently: reads and writes
-- keep going.
CREATE INDEX CONCURRENTLY IF NOT EXISTS memories_first_turn ON memories ((source_turn_ids[1]));
DROP INDEX CONCURRENTLY IF EXISTS memories_previous_turn;
-- The words of a memory's neighbours, united: tsvector's || as an aggregate.
CREATE OR REPLACE AGGREGATE memhub_tsvector_union(tsvector) (
    SFUNC = tsvector_concat, STYPE = tsvector, INITCOND = ''
);
-- Every statement of memhub on conversation_context names the user, which the
-- (user_id, session_id, id) index leads with; these two indexes of the first migration only
-- cost every append, and on a database without statistics yet the planner took the session's
-- one, and a sort, for the probes of the turns around a memory.
DROP INDEX CONCURRENTLY IF EXISTS idx_user_id;
DROP INDEX CONCURRENTLY IF EXISTS idx_session_id;
