-- memhub: no-transaction
-- Leases to reclaim or park: few rows (what workers hold right now). Built concurrently: a
-- backlog of queued jobs must not block add() while it builds; a failed build is dropped first.
DROP INDEX CONCURRENTLY IF EXISTS memory_jobs_leased;
CREATE INDEX CONCURRENTLY memory_jobs_leased ON memory_jobs (lease_until)
    WHERE lease_owner IS NOT NULL;
