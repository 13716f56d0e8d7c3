"""``delete_all``: erase a scope from every table, under the lock a worker's apply also takes.

Jobs go first, so a worker that is mid-work finds its lease gone when it applies and writes
nothing; one that applied before the erase took the lock is erased with the rest.
"""

from __future__ import annotations

from psycopg import sql

from memhub.errors import StoreError
from memhub.store.postgres.bind import TURN_COLUMNS, Params, scope_where
from memhub.store.postgres.database import AsyncConn
from memhub.store.postgres.jobs import lock_scopes
from memhub.store.postgres.space import space_schemas
from memhub.store.records import Scope

__all__ = ["delete_all", "delete_all_spaces"]


async def delete_all(conn: AsyncConn, scope: Scope) -> int:
    """Jobs, memories, history, LLM usage and turns of ``scope``; returns memories removed."""
    if scope.is_empty():
        raise StoreError("deleting a scope: the scope sets no id")
    params = Params()
    where = scope_where(scope, params, alias=None)
    turns = Params()
    turn_where = scope_where(scope, turns, alias=None, columns=TURN_COLUMNS)
    removed = 0
    async with conn.transaction():
        await lock_scopes(conn, [scope])
        for table in ("memory_jobs", "memories", "memory_history", "memory_llm_usage"):
            cur = await conn.execute(
                sql.SQL("DELETE FROM {} WHERE {}").format(sql.Identifier(table), where),
                params.values,
            )
            if table == "memories":
                removed = cur.rowcount
        await conn.execute(
            sql.SQL("DELETE FROM conversation_context WHERE {}").format(turn_where), turns.values
        )
        return removed


async def delete_all_spaces(conn: AsyncConn, scope: Scope) -> int:
    """``delete_all`` in the default space and in every named space of the database, in one
    transaction (a person's erase reaches what each embedder's space holds of them); returns
    the memories removed in all of them. ``conn`` is a default-space connection."""
    async with conn.transaction():
        removed = await delete_all(conn, scope)
        cur = await conn.execute("SHOW search_path")
        row = await cur.fetchone()
        home = str(row[0]) if row is not None else "public"
        for schema in await space_schemas(conn):
            # Local to this transaction: the pooled connection leaves it on the default path.
            path = f"{schema}, {home}"
            await conn.execute("SELECT set_config('search_path', %s, true)", (path,))
            removed += await delete_all(conn, scope)
        return removed
