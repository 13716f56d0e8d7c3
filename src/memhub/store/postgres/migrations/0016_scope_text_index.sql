-- One GIN index over the scope ids and the words, so that search's per-word probe of one scope
-- ("this user's memories containing this word") is answered inside the index. With only the
-- words indexed, PostgreSQL combined a common word's matches across every user with the
-- user's rows: 171 ms p50 for a user with 200,000 of 1,000,000 memories, 49 ms with this
-- index (docs/benchmarks.md). GIN indexes plain columns through btree_gin, which ships with
-- PostgreSQL (contrib) and is a trusted extension; where it is not installed, search keeps
-- working on the words-only index, only slower for big scopes.
-- Built in this migration's transaction (writes wait for it: about 3 s per million memories).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'btree_gin') THEN
        CREATE EXTENSION IF NOT EXISTS btree_gin;
        CREATE INDEX IF NOT EXISTS memories_scope_tsv
            ON memories USING gin (user_id, agent_id, run_id, tsv);
    ELSE
        RAISE NOTICE 'btree_gin is not installed: search of big scopes will be slower';
    END IF;
END
$$;
