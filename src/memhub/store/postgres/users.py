"""SQL for who has data: users a page at a time (keyset over their ids), a memory's owner."""

from __future__ import annotations

from uuid import UUID

from psycopg import sql

from memhub.store.postgres.database import AsyncConn
from memhub.store.records import ScopeRow, UserRow

__all__ = [
    "list_scopes",
    "list_users",
    "memory_owner",
    "prefix_range",
    "users_page",
]


# The page's ids come from indexes in byte order (migration 0015): each branch stops after
# `take` distinct ids, so a page reads its own users' index entries, never every user's. Only
# then are that page's memories and turns counted, through the per-user indexes.
# conversation_context.created_at is UTC wall time without a zone (ARKOS's column). Its ""
# user_id holds agent- and run-only turns (the column is NOT NULL): no user, so not listed (a
# range, so the index skips them instead of reading them).
_PAGE = """
WITH ids AS (
    (SELECT DISTINCT user_id COLLATE "C" AS user_id FROM memories
     WHERE valid_to IS NULL AND user_id IS NOT NULL AND {memory_bounds}
     ORDER BY 1 LIMIT %(take)s)
    UNION
    (SELECT DISTINCT user_id COLLATE "C" FROM conversation_context
     WHERE user_id COLLATE "C" > '' AND {turn_bounds}
     ORDER BY 1 LIMIT %(take)s)
), page AS (
    SELECT user_id FROM ids ORDER BY user_id LIMIT %(limit)s OFFSET %(offset)s
)
SELECT p.user_id, coalesce(m.n, 0), coalesce(t.n, 0), greatest(m.last_at, t.last_at)
FROM page p
LEFT JOIN LATERAL (
    SELECT count(*) AS n, max(coalesce(updated_at, created_at)) AS last_at FROM memories
    WHERE user_id = p.user_id COLLATE "default" AND valid_to IS NULL
) m ON true
LEFT JOIN LATERAL (
    SELECT count(*) AS n, max(created_at) AT TIME ZONE 'UTC' AS last_at
    FROM conversation_context WHERE user_id = p.user_id COLLATE "default"
) t ON true
ORDER BY p.user_id
"""


def prefix_range(prefix: str) -> tuple[str, str]:
    """The ids starting with a non-empty ``prefix`` are exactly ``[low, high)`` in byte order."""
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


def _bounds(after: str | None, prefix: str | None) -> sql.Composable:
    column = sql.SQL('user_id COLLATE "C"')
    parts: list[sql.Composable] = [sql.SQL("true")]
    if after is not None:
        parts.append(sql.SQL("{} > %(after)s").format(column))
    if prefix:
        parts.append(sql.SQL("{} >= %(low)s AND {} < %(high)s").format(column, column))
    return sql.SQL(" AND ").join(parts)


def users_page(
    *, prefix: str | None, after: str | None, limit: int, offset: int = 0
) -> tuple[sql.Composed, dict[str, object]]:
    """The query :func:`list_users` runs, and its parameters (tests EXPLAIN it)."""
    low, high = prefix_range(prefix) if prefix else (None, None)
    bounds = _bounds(after, prefix)
    params: dict[str, object] = {
        "after": after,
        "low": low,
        "high": high,
        "take": offset + limit,
        "limit": limit,
        "offset": offset,
    }
    return sql.SQL(_PAGE).format(memory_bounds=bounds, turn_bounds=bounds), params


async def list_users(
    conn: AsyncConn,
    *,
    prefix: str | None,
    after: str | None,
    limit: int,
    offset: int = 0,
) -> list[UserRow]:
    """Users whose id sorts after ``after`` (in byte order), starting with ``prefix`` if given.

    ``offset`` skips that many users past ``after`` (the REST API's older paging); each
    skipped user still costs an index entry read, so keyset paging is what scales.
    """
    query, params = users_page(prefix=prefix, after=after, limit=limit, offset=offset)
    cur = await conn.execute(query, params)
    return [
        UserRow(user_id=str(u), memories=int(m), turns=int(t), last_activity=last)
        for u, m, t, last in await cur.fetchall()
    ]


# Every scope kind: a user's, an agent's (LangGraph's default, Mem0's agent memories), a run's,
# and their combinations. A tenant's scopes are those whose every id is in its namespace. It
# groups all current memories (a sequential read): for a browsing page, not a hot path.
_SCOPES = """
SELECT user_id, agent_id, run_id, count(*), max(coalesce(updated_at, created_at))
FROM memories
WHERE valid_to IS NULL AND (expires_at IS NULL OR expires_at > now())
  AND (%(prefix)s::text IS NULL OR (
      (user_id IS NULL OR starts_with(user_id, %(prefix)s))
      AND (agent_id IS NULL OR starts_with(agent_id, %(prefix)s))
      AND (run_id IS NULL OR starts_with(run_id, %(prefix)s))))
GROUP BY user_id, agent_id, run_id
ORDER BY user_id COLLATE "C" NULLS LAST, agent_id COLLATE "C" NULLS LAST,
    run_id COLLATE "C" NULLS LAST
LIMIT %(limit)s
"""


async def list_scopes(conn: AsyncConn, *, prefix: str | None, limit: int) -> list[ScopeRow]:
    """Up to ``limit`` scopes with current memories, by user, agent, then run id."""
    cur = await conn.execute(_SCOPES, {"prefix": prefix, "limit": limit})
    return [
        ScopeRow(user_id=u, agent_id=a, run_id=r, memories=int(n), last_activity=last)
        for u, a, r, n, last in await cur.fetchall()
    ]


async def memory_owner(conn: AsyncConn, memory_id: UUID) -> dict[str, str | None] | None:
    """The stored scope ids of a memory, or of its history once it was deleted; None if neither."""
    cur = await conn.execute(
        "(SELECT user_id, agent_id, run_id FROM memories WHERE id = %(id)s)"
        " UNION ALL (SELECT user_id, agent_id, run_id FROM memory_history"
        "  WHERE memory_id = %(id)s ORDER BY id DESC LIMIT 1)"
        " LIMIT 1",
        {"id": memory_id},
    )
    row = await cur.fetchone()
    if row is None:
        return None
    return {"user_id": row[0], "agent_id": row[1], "run_id": row[2]}
