-- Mem0's add(..., expiration_date=...): a memory that expires is not returned from then on
-- (every read checks expires_at) and the worker purges it later. NULL: never expires.
-- Adding a nullable column rewrites nothing; the partial index holds only expiring memories,
-- so the purge finds them without reading the others.
ALTER TABLE memories ADD COLUMN IF NOT EXISTS expires_at timestamptz;
CREATE INDEX IF NOT EXISTS memories_expires_at ON memories (expires_at)
    WHERE expires_at IS NOT NULL;
