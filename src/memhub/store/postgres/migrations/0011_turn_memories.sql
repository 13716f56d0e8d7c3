-- memhub: no-transaction
-- A memory made from one turn records the turn's role in its own column, so the caller's
-- metadata is stored as given (memhub's keys no longer share it). Such turn memories are kept
-- one per turn, as Mem0 keeps them: saying the same thing twice is two memories, each with its
-- own id (assigned when the turn is queued) and metadata. Only facts (role IS NULL) stay
-- unique per scope and text. The new unique index is built concurrently before the old one
-- goes, so facts are never without one.
ALTER TABLE memories ADD COLUMN IF NOT EXISTS role TEXT;
DROP INDEX CONCURRENTLY IF EXISTS memories_current_fact_hash;
CREATE UNIQUE INDEX CONCURRENTLY memories_current_fact_hash ON memories (
    coalesce(user_id, ''), coalesce(agent_id, ''), coalesce(run_id, ''), hash
) WHERE valid_to IS NULL AND role IS NULL;
DROP INDEX CONCURRENTLY IF EXISTS memories_current_hash;
