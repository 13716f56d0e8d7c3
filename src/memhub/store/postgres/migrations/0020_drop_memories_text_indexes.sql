-- memhub: no-transaction
-- Search probes memory_words now (migration 0019); the full-text indexes on memories only cost
-- every insert. Dropped concurrently: reads and writes keep going.
DROP INDEX CONCURRENTLY IF EXISTS memories_scope_tsv;
DROP INDEX CONCURRENTLY IF EXISTS memories_tsv;
