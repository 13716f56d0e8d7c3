-- memhub: no-transaction
-- Users are listed a page at a time by keyset (user_id > the cursor), over the distinct ids
-- of current memories and of turns. Byte order ("C") makes a tenant's ids, which all start
-- with "<tenant>:", one contiguous range whatever the database's collation, so a tenant's
-- page is an index range scan, never a walk over other tenants' users.
-- Built concurrently: writers keep going on a big table; a half-built index is dropped first.
DROP INDEX CONCURRENTLY IF EXISTS memories_current_user_c;
CREATE INDEX CONCURRENTLY memories_current_user_c
    ON memories ((user_id COLLATE "C")) WHERE valid_to IS NULL AND user_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS conversation_context_user_c;
CREATE INDEX CONCURRENTLY conversation_context_user_c
    ON conversation_context ((user_id COLLATE "C"));
