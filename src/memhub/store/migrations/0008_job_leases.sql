-- Lease-based queue: a claim leases jobs to one worker until lease_until (attempts are counted
-- at claim time); the work runs with no transaction open; expired leases are claimed again.
ALTER TABLE memory_jobs ADD COLUMN IF NOT EXISTS lease_owner TEXT;
ALTER TABLE memory_jobs ADD COLUMN IF NOT EXISTS lease_until TIMESTAMPTZ;
-- Leases to reclaim or park: few rows (what workers hold right now).
CREATE INDEX IF NOT EXISTS memory_jobs_leased ON memory_jobs (lease_until)
    WHERE lease_owner IS NOT NULL;
