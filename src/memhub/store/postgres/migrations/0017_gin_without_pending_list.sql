-- GIN indexes on memories write straight into the index, with no pending list. By default GIN
-- appends new entries to an unsorted pending list (up to 4 MB) that every search must read in
-- full: at 100,000 memories of one user, 12,000 pending memories made search's full-text
-- statement 11.4 ms p50 against 6.5 ms once flushed. Writing straight into the index cost
-- nothing measurable per memory next to HNSW insertion (docs/benchmarks.md, "GIN pending list").
-- The existing pending lists are flushed here, so search is fast from the first query after
-- the upgrade. Both full-text indexes stay: the planner picks the words-only one when the
-- scope is most of the table (8.4 ms p50 without it for one user owning all 100,000 rows,
-- against 5.6 ms with it) and the scope one for a big user among many.
DO $$
DECLARE
    gin_index text;
BEGIN
    FOREACH gin_index IN ARRAY ARRAY['memories_tsv', 'memories_scope_tsv', 'memories_metadata',
                                     'memories_source_turn_ids']
    LOOP
        IF to_regclass(gin_index) IS NOT NULL THEN
            EXECUTE format('ALTER INDEX %I SET (fastupdate = off)', gin_index);
            PERFORM gin_clean_pending_list(to_regclass(gin_index));
        END IF;
    END LOOP;
END
$$;
