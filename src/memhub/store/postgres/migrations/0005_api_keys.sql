-- API keys of the REST server. Only a SHA-256 of each key is kept (memhub.store.pg_keys);
-- the key itself is shown once, when it is created.
CREATE TABLE IF NOT EXISTS api_keys (
    id           BIGSERIAL PRIMARY KEY,
    name         TEXT NOT NULL,
    key_hash     TEXT NOT NULL UNIQUE,
    prefix       TEXT NOT NULL,
    -- A tenant key's user, agent and run ids are stored as '<tenant>:<id>'; an admin key
    -- has no tenant and sees every id as stored.
    tenant       TEXT,
    is_admin     BOOLEAN NOT NULL DEFAULT false,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    revoked_at   TIMESTAMPTZ,
    last_used_at TIMESTAMPTZ,
    CONSTRAINT api_keys_one_role CHECK (is_admin = (tenant IS NULL)),
    CONSTRAINT api_keys_tenant_name CHECK (tenant ~ '^[a-z0-9][a-z0-9_-]{0,62}$')
);
CREATE INDEX IF NOT EXISTS api_keys_tenant ON api_keys (tenant) WHERE tenant IS NOT NULL;
