"""Read-only checks for operations: the queue by job kind, LLM usage per day, a liveness ping."""

from __future__ import annotations

from memhub.store.postgres.database import AsyncConn
from memhub.store.records import DailyUsage

__all__ = ["ping", "queue_by_kind", "usage_per_day"]


async def queue_by_kind(conn: AsyncConn) -> dict[str, dict[str, int]]:
    """``{kind: {"queued", "running", "parked", "oldest_queued_seconds"}}``.

    ``running`` counts queued jobs under an unexpired lease (a worker has them);
    ``oldest_queued_seconds`` is how long the oldest queued job has waited (0 when none).
    """
    cur = await conn.execute(
        "SELECT kind, count(*) FILTER (WHERE status = 'queued'),"
        " count(*) FILTER (WHERE status = 'queued' AND lease_until > now()),"
        " count(*) FILTER (WHERE status = 'parked'),"
        " coalesce(extract(epoch FROM now() - min(created_at) FILTER (WHERE status = 'queued')),"
        "  0)::bigint"
        " FROM memory_jobs GROUP BY kind ORDER BY kind"
    )
    return {
        str(kind): {
            "queued": int(queued),
            "running": int(running),
            "parked": int(parked),
            "oldest_queued_seconds": int(oldest),
        }
        for kind, queued, running, parked, oldest in await cur.fetchall()
    }


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
