-- memhub: no-transaction
-- A text search also finds the memory said just after one that holds the query's words
-- (docs/retrieval.md, "The words said just before"): that lookup goes from a turn to the
-- memories whose previous turn it is. Partial: 0 marks a memory with no previous turn.
-- Built concurrently: reads and writes keep going.
CREATE INDEX CONCURRENTLY IF NOT EXISTS memories_previous_turn ON memories (previous_turn_id)
    WHERE previous_turn_id > 0;
