-- What a model removes (a consolidation DELETE, an agent's or MCP client's forget) is retired,
-- not erased: the row stays, closed (valid_to, so it leaves the current facts and their unique
-- index) and marked retired_at, so no read returns it, as_of included. `restore` reopens it; the
-- worker purges retired rows after MEMHUB_RETIRED_RETENTION_DAYS; a user's delete erases them.
ALTER TABLE memories ADD COLUMN IF NOT EXISTS retired_at TIMESTAMPTZ;
CREATE INDEX IF NOT EXISTS memories_retired ON memories (retired_at) WHERE retired_at IS NOT NULL;

ALTER TABLE memory_history DROP CONSTRAINT IF EXISTS memory_history_event_check;
ALTER TABLE memory_history ADD CONSTRAINT memory_history_event_check
    CHECK (event IN ('ADD', 'UPDATE', 'SUPERSEDE', 'DELETE', 'RETIRE', 'RESTORE', 'PURGE'));
