-- `memhub import`'s resumable cursor: how many items of an input file are imported. It is
-- written in the transaction of each batch, so a killed import resumes after the last batch
-- that committed: nothing lost, nothing twice.
CREATE TABLE IF NOT EXISTS import_cursors (
    source      TEXT PRIMARY KEY,   -- the input's identity: sha256 of its resolved path
    path        TEXT NOT NULL,
    position    BIGINT NOT NULL,    -- items (lines) of the file done, bad ones skipped included
    digest      TEXT NOT NULL,      -- sha256 of those items: a resume checks they are unchanged
    finished    BOOLEAN NOT NULL DEFAULT false,
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
