-- memhub: no-transaction
-- Search finds the memories said around a memory on memory_words' turn positions (migration
-- 0029); 0028's lookup from a turn to its memories is no longer made.
DROP INDEX CONCURRENTLY IF EXISTS memories_first_turn;
