-- memhub: no-transaction
-- Current memories by scope. Search counts a scope's memories (capped) for BM25's document
-- frequencies; with this partial index that is an index-only scan (0.2 ms at 100k memories
-- for one user) instead of reading heap pages (1.7 ms). list / get_all use it too.
-- Built concurrently: writers keep going on a big table. A build that failed half-way leaves
-- an invalid index behind, so a rerun drops it first.
DROP INDEX CONCURRENTLY IF EXISTS memories_current_scope;
CREATE INDEX CONCURRENTLY memories_current_scope
    ON memories (user_id, agent_id, run_id) WHERE valid_to IS NULL;
