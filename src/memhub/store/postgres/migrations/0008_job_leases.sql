-- Lease-based queue: a claim leases jobs to one worker until lease_until (attempts are counted
-- at claim time); the work runs with no transaction open; expired leases are claimed again.
-- Columns without a default: no table rewrite, the lock is held for an instant.
ALTER TABLE memory_jobs ADD COLUMN IF NOT EXISTS lease_owner TEXT;
ALTER TABLE memory_jobs ADD COLUMN IF NOT EXISTS lease_until TIMESTAMPTZ;
