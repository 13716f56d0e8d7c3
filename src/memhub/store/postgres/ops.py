"""Read-only checks for operations: LLM usage per day, a liveness ping (the queue's counts are
the jobs module's)."""

from __future__ import annotations

from memhub.store.postgres.database import AsyncConn
from memhub.store.records import DailyUsage

__all__ = ["ping", "usage_per_day"]


async def usage_per_day(conn: AsyncConn, days: int) -> list[DailyUsage]:
    """LLM calls and tokens per UTC day over the last ``days`` days, newest first."""
    cur = await conn.execute(
        "SELECT (created_at AT TIME ZONE 'UTC')::date AS day, sum(calls), sum(prompt_tokens),"
        " sum(completion_tokens) FROM memory_llm_usage"
        " WHERE created_at >= now() - make_interval(days => %s)"
        " GROUP BY 1 ORDER BY 1 DESC",
        (days,),
    )
    return [DailyUsage(day, int(c), int(p), int(t)) for day, c, p, t in await cur.fetchall()]


async def ping(conn: AsyncConn) -> None:
    """One round trip: raises if the database does not answer."""
    await conn.execute("SELECT 1")
