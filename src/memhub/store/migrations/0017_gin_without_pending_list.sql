-- GIN indexes on memories write straight into the index, with no pending list. By default GIN
-- appends new entries to an unsorted pending list (up to 4 MB) that every search must read in
-- full: at 100,000 memories of one user, 12,000 pending memories made search's full-text
-- statement 11.4 ms p50 against 6.5 ms once flushed. Writing straight into the index cost
-- nothing measurable per memory next to HNSW insertion (docs/benchmarks.md, "GIN pending list").
-- The words-only index is dropped where the scope index of 0016 exists: every search has a
-- scope, and a multi-column GIN index answers the words alone too. The existing pending lists
-- are flushed here, so search is fast from the first query after the upgrade.
DO $$
BEGIN
    IF to_regclass('memories_scope_tsv') IS NOT NULL THEN
        DROP INDEX IF EXISTS memories_tsv;
        ALTER INDEX memories_scope_tsv SET (fastupdate = off);
        PERFORM gin_clean_pending_list('memories_scope_tsv');
    ELSE
        ALTER INDEX memories_tsv SET (fastupdate = off);
        PERFORM gin_clean_pending_list('memories_tsv');
    END IF;
    ALTER INDEX memories_metadata SET (fastupdate = off);
    PERFORM gin_clean_pending_list('memories_metadata');
    ALTER INDEX memories_source_turn_ids SET (fastupdate = off);
    PERFORM gin_clean_pending_list('memories_source_turn_ids');
END
$$;
