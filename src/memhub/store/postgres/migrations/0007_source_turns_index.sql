-- memhub: no-transaction
-- Memories by the turns they came from, of every type: add(wait=True) reads back what its
-- turns became, and consolidation retires raw turn memories. Replaces the partial index of
-- 0004, which covered raw turn memories only. Built concurrently, as 0006.
DROP INDEX CONCURRENTLY IF EXISTS memories_source_turn_ids;
CREATE INDEX CONCURRENTLY memories_source_turn_ids ON memories USING gin (source_turn_ids);
DROP INDEX CONCURRENTLY IF EXISTS memories_source_turns;
