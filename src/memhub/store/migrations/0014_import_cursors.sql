-- `memhub import`'s resumable cursor: how many items of an input file are imported. It is
-- written in the transaction of each batch, so a killed import resumes after the last batch
-- that committed: nothing lost, nothing twice.
CREATE TABLE IF NOT EXISTS import_cursors (
    source      TEXT PRIMARY KEY,   -- the input's identity: sha256 of its path and first 64 KiB
    path        TEXT NOT NULL,
    position    BIGINT NOT NULL,    -- items (lines) of the file done, bad ones skipped included
    finished    BOOLEAN NOT NULL DEFAULT false,
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
