"""The few read-only queries the server needs beyond the memory API: users and job counts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from memhub.store.database import AsyncConn

__all__ = ["UserRow", "list_users", "memory_scope"]


@dataclass(frozen=True)
class UserRow:
    user_id: str
    memories: int
    turns: int
    last_activity: datetime | None


# starts_with, not LIKE: tenant names may hold '_', which LIKE reads as a wildcard.
# conversation_context.created_at is UTC wall time without a zone (ARKOS's column).
_USERS = """
WITH m AS (
    SELECT user_id, count(*) AS memories, max(coalesce(updated_at, created_at)) AS last_at
    FROM memories
    WHERE user_id IS NOT NULL AND valid_to IS NULL
      AND (%(prefix)s::text IS NULL OR starts_with(user_id, %(prefix)s))
    GROUP BY user_id
), t AS (
    SELECT user_id, count(*) AS turns, max(created_at) AT TIME ZONE 'UTC' AS last_at
    FROM conversation_context
    WHERE %(prefix)s::text IS NULL OR starts_with(user_id, %(prefix)s)
    GROUP BY user_id
)
SELECT coalesce(m.user_id, t.user_id) AS user_id, coalesce(m.memories, 0),
       coalesce(t.turns, 0), greatest(m.last_at, t.last_at)
FROM m FULL JOIN t ON m.user_id = t.user_id
ORDER BY 1
LIMIT %(limit)s OFFSET %(offset)s
"""


async def list_users(conn: AsyncConn, prefix: str | None, limit: int, offset: int) -> list[UserRow]:
    """Users having memories or turns (only ids starting with ``prefix`` when given), by id."""
    cur = await conn.execute(_USERS, {"prefix": prefix, "limit": limit, "offset": offset})
    return [
        UserRow(user_id=str(u), memories=int(m), turns=int(t), last_activity=last)
        for u, m, t, last in await cur.fetchall()
    ]


async def memory_scope(conn: AsyncConn, memory_id: UUID) -> dict[str, str | None] | None:
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
