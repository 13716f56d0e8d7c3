-- Idempotency keys of add(): a retried call with the same key (in the same scope) returns
-- the turn ids of the first and writes nothing. The row is written in the transaction of
-- the turns, so a key exists exactly when its turns do.
CREATE TABLE IF NOT EXISTS idempotency_keys (
    owner        TEXT NOT NULL,                 -- the scope the key was used in, as stored
    key          TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,                 -- hash of the request: reuse with another is refused
    turn_ids     BIGINT[] NOT NULL DEFAULT '{}',
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, key)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_created_at ON idempotency_keys (created_at);
