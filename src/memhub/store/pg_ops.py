"""Read-only checks for operations: the queue by job kind, LLM usage per day, a liveness ping."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from memhub.store.database import AsyncConn

__all__ = ["DailyUsage", "ping", "queue_by_kind", "usage_per_day"]


@dataclass(frozen=True)
class DailyUsage:
    day: date
    calls: int
    prompt_tokens: int
    completion_tokens: int


async def queue_by_kind(conn: AsyncConn) -> dict[str, dict[str, int]]:
    """``{kind: {"queued": n, "parked": m}}``: a worker lane takes a set of kinds."""
    cur = await conn.execute("SELECT kind, status, count(*) FROM memory_jobs GROUP BY 1, 2")
    counts: dict[str, dict[str, int]] = {}
    for kind, status, n in await cur.fetchall():
        counts.setdefault(str(kind), {"queued": 0, "parked": 0})[str(status)] = int(n)
    return counts


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
