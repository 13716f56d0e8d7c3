-- Long-term memory: facts with validity intervals, their history, and the durable job queue.
-- The embedding column is added by memhub once the embedder's dimension is known
-- (memhub.store.pg_space.ensure_embedding_space), because pgvector's HNSW needs a fixed one.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE IF NOT EXISTS memhub_settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS memories (
    id              UUID PRIMARY KEY,
    user_id         VARCHAR(255),
    agent_id        VARCHAR(255),
    run_id          VARCHAR(255),
    memory          TEXT NOT NULL,
    hash            TEXT NOT NULL,
    metadata        JSONB NOT NULL DEFAULT '{}'::jsonb,
    memory_type     TEXT,
    valid_from      TIMESTAMPTZ NOT NULL DEFAULT now(),
    valid_to        TIMESTAMPTZ,
    superseded_by   UUID,
    source_turn_ids BIGINT[] NOT NULL DEFAULT '{}',
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ,
    tsv             TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', memory)) STORED,
    CONSTRAINT memories_scoped CHECK (coalesce(user_id, agent_id, run_id) IS NOT NULL)
);

CREATE INDEX IF NOT EXISTS memories_user ON memories (user_id, created_at) WHERE user_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_agent ON memories (agent_id) WHERE agent_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_run ON memories (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_tsv ON memories USING gin (tsv);
CREATE INDEX IF NOT EXISTS memories_metadata ON memories USING gin (metadata jsonb_path_ops);
-- Exact duplicates among the current facts of one scope are refused by the database itself.
CREATE UNIQUE INDEX IF NOT EXISTS memories_current_hash ON memories (
    coalesce(user_id, ''), coalesce(agent_id, ''), coalesce(run_id, ''), hash
) WHERE valid_to IS NULL;

CREATE TABLE IF NOT EXISTS memory_history (
    id          BIGSERIAL PRIMARY KEY,
    memory_id   UUID NOT NULL,
    user_id     VARCHAR(255),
    agent_id    VARCHAR(255),
    run_id      VARCHAR(255),
    event       TEXT NOT NULL CHECK (event IN ('ADD', 'UPDATE', 'SUPERSEDE', 'DELETE')),
    old_memory  TEXT,
    new_memory  TEXT,
    actor       TEXT,
    turn_ids    BIGINT[] NOT NULL DEFAULT '{}',
    metadata    JSONB NOT NULL DEFAULT '{}'::jsonb,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS memory_history_memory ON memory_history (memory_id, id);
CREATE INDEX IF NOT EXISTS memory_history_user ON memory_history (user_id) WHERE user_id IS NOT NULL;

-- The outbox: a turn and its job commit together; workers claim with SKIP LOCKED.
CREATE TABLE IF NOT EXISTS memory_jobs (
    id          BIGSERIAL PRIMARY KEY,
    kind        TEXT NOT NULL,
    user_id     VARCHAR(255),
    agent_id    VARCHAR(255),
    run_id      VARCHAR(255),
    payload     JSONB NOT NULL,
    status      TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'parked')),
    attempts    INTEGER NOT NULL DEFAULT 0,
    run_after   TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_error  TEXT,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS memory_jobs_ready ON memory_jobs (id) WHERE status = 'queued';
-- "Is an older job of this owner still queued?": asked for every owner of every claimed batch.
CREATE INDEX IF NOT EXISTS memory_jobs_owner
    ON memory_jobs ((coalesce(user_id, agent_id, run_id, '')), id) WHERE status = 'queued';
CREATE INDEX IF NOT EXISTS memory_jobs_user ON memory_jobs (user_id) WHERE user_id IS NOT NULL;
