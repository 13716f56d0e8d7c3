"""Counts the server's quotas need: a tenant's queued backlog."""

from __future__ import annotations

from memhub.store.postgres.database import AsyncConn

__all__ = ["queued_jobs_with_prefix"]


async def queued_jobs_with_prefix(conn: AsyncConn, prefix: str, cap: int) -> int:
    """Queued jobs whose owner id starts with ``prefix``, counted up to ``cap + 1`` at most.

    The inner LIMIT bounds the work to the cap, however long the tenant's backlog is.
    """
    cur = await conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM memory_jobs WHERE status = 'queued'"
        " AND starts_with(coalesce(user_id, agent_id, run_id, ''), %(prefix)s)"
        " LIMIT %(cap)s) AS backlog",
        {"prefix": prefix, "cap": cap + 1},
    )
    row = await cur.fetchone()
    return int(row[0]) if row else 0
