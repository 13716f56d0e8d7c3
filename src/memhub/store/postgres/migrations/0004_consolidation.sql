-- LLM consolidation: what each call cost, per scope, for `memhub jobs stats` and billing.
CREATE TABLE IF NOT EXISTS memory_llm_usage (
    id                BIGSERIAL PRIMARY KEY,
    user_id           VARCHAR(255),
    agent_id          VARCHAR(255),
    run_id            VARCHAR(255),
    model             TEXT NOT NULL,
    calls             INTEGER NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    turns             INTEGER NOT NULL,
    jobs              INTEGER NOT NULL,
    operations        JSONB NOT NULL DEFAULT '{}'::jsonb,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS memory_llm_usage_user ON memory_llm_usage (user_id) WHERE user_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS memory_llm_usage_at ON memory_llm_usage (created_at);

-- Raw turn memories waiting for consolidation are found by their source turns.
CREATE INDEX IF NOT EXISTS memories_source_turns ON memories USING gin (source_turn_ids)
    WHERE memory_type = 'turn';
