"""``delete_all``: erase a scope from every table, under the lock a worker's apply also takes.

Jobs go first, so a worker that is mid-work finds its lease gone when it applies and writes
nothing; one that applied before the erase took the lock is erased with the rest.
"""

from __future__ import annotations

from psycopg import sql

from memhub.errors import StoreError
from memhub.store.database import AsyncConn
from memhub.store.pg_jobs import lock_scopes
from memhub.store.records import Scope

__all__ = ["delete_all"]

# Turns carry the run id as their session id (see memhub.engine.ingest).
_TURN_COLUMNS = {"user_id": "user_id", "agent_id": "agent_id", "run_id": "session_id"}


def _where(scope: Scope, columns: dict[str, str] | None = None) -> tuple[sql.Composed, list[str]]:
    ids = scope.as_dict()
    clause = sql.SQL(" AND ").join(
        sql.SQL("{} = %s").format(sql.Identifier((columns or {}).get(key, key))) for key in ids
    )
    return sql.SQL("WHERE {}").format(clause), list(ids.values())


async def delete_all(conn: AsyncConn, scope: Scope) -> int:
    """Jobs, memories, history, LLM usage and turns of ``scope``; returns memories removed."""
    if scope.is_empty():
        raise StoreError("deleting a scope: the scope sets no id")
    where, values = _where(scope)
    turn_where, turn_values = _where(scope, _TURN_COLUMNS)
    async with conn.transaction():
        await lock_scopes(conn, [scope])
        await conn.execute(sql.SQL("DELETE FROM memory_jobs {}").format(where), values)
        cur = await conn.execute(sql.SQL("DELETE FROM memories {}").format(where), values)
        removed = cur.rowcount
        await conn.execute(sql.SQL("DELETE FROM memory_history {}").format(where), values)
        await conn.execute(sql.SQL("DELETE FROM memory_llm_usage {}").format(where), values)
        await conn.execute(
            sql.SQL("DELETE FROM conversation_context {}").format(turn_where), turn_values
        )
        return removed
