-- memhub: no-transaction
-- A user's delete takes the memory's earlier wordings along (rows superseded by it, closed
-- where they opened); without this index that lookup read the whole table. Partial: only
-- superseded rows carry the column. Built concurrently: reads and writes keep going.
CREATE INDEX CONCURRENTLY IF NOT EXISTS memories_superseded_by ON memories (superseded_by)
    WHERE superseded_by IS NOT NULL;
