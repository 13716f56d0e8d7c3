"""SQL for retired memories: what a model removed, kept until restored, purged or erased.

A retired row is closed (``valid_to``) and marked (``retired_at``, migration 0022): it leaves
the current facts (and their unique index, so the same fact can be said again) and every read,
``as_of`` included. Its ``RETIRE`` history event names the actor, the reason and the turns
cited. ``restore`` reopens it; :func:`purge_retired` erases rows retired before a cut-off.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from memhub.errors import MemoryNotFound, NotRestorable
from memhub.store.postgres.bind import Params, scope_where
from memhub.store.postgres.budget import spend_model_budget
from memhub.store.postgres.database import AsyncConn
from memhub.store.postgres.memories import COLUMNS, N_COLUMNS, history_event, record_from_row
from memhub.store.records import MemoryRecord, ModelBudget, RetiredMemory, Scope

__all__ = ["purge_retired", "restore_memory", "retire", "retire_memory", "retired_memories"]

# A supersession chain longer than this is not followed when restoring (it cannot happen in
# practice: each link is one consolidation call).
_CHAIN_LIMIT = 1000


async def _lock(conn: AsyncConn, scope: Scope | None, memory_id: UUID) -> tuple[Any, ...] | None:
    params = Params()
    cur = await conn.execute(
        sql.SQL(
            "SELECT {cols}, m.retired_at FROM memories m WHERE m.id = {id} AND {scope} FOR UPDATE"
        ).format(cols=COLUMNS, id=params.bind(memory_id), scope=scope_where(scope, params)),
        params.values,
    )
    return await cur.fetchone()


async def retire(
    conn: AsyncConn,
    record: MemoryRecord,
    actor: str,
    reason: str,
    turn_ids: Sequence[int] = (),
    metadata: dict[str, Any] | None = None,
) -> None:
    """Retire a locked, current memory inside the caller's transaction."""
    await conn.execute(
        "UPDATE memories SET valid_to = now(), retired_at = now(), updated_at = now()"
        " WHERE id = %s",
        (record.id,),
    )
    await history_event(
        conn,
        record,
        "RETIRE",
        record.memory,
        None,
        actor,
        turn_ids,
        {"reason": reason, **(metadata or {})},
    )


async def retire_memory(
    conn: AsyncConn,
    scope: Scope | None,
    memory_id: UUID,
    actor: str,
    reason: str,
    turn_ids: Sequence[int] = (),
    budget: ModelBudget | None = None,
) -> MemoryRecord:
    """Retire one current memory of ``scope``; MemoryNotFound if it is not a current one,
    ModelBudgetSpent if ``budget`` is spent for the memory's user."""
    async with conn.transaction():
        row = await _lock(conn, scope, memory_id)
        if row is None or row[9] is not None:  # absent, superseded or retired already
            raise MemoryNotFound(f"no current memory {memory_id} in this scope")
        record = record_from_row(row)
        if budget is not None and record.scope.user_id is not None:
            await spend_model_budget(conn, record.scope.user_id, budget)
        await retire(conn, record, actor, reason, turn_ids)
        return record


async def _erased(conn: AsyncConn, scope: Scope | None, memory_id: UUID) -> bool:
    params = Params()
    cur = await conn.execute(
        sql.SQL(
            "SELECT 1 FROM memory_history m WHERE m.memory_id = {id} AND {scope} LIMIT 1"
        ).format(id=params.bind(memory_id), scope=scope_where(scope, params)),
        params.values,
    )
    return await cur.fetchone() is not None


async def _current_successor(conn: AsyncConn, first: UUID) -> tuple[Any, ...] | None:
    """The current end of the supersession chain that starts at ``first``, locked."""
    cur = await conn.execute(
        sql.SQL(
            "WITH RECURSIVE chain(id, depth) AS ("
            "  SELECT %s::uuid, 0"
            "  UNION SELECT m.superseded_by, c.depth + 1 FROM memories m JOIN chain c"
            "  ON m.id = c.id WHERE m.superseded_by IS NOT NULL AND c.depth < %s"
            ") SELECT {cols}, m.retired_at FROM memories m JOIN chain c ON c.id = m.id"
            " WHERE m.valid_to IS NULL FOR UPDATE OF m"
        ).format(cols=COLUMNS),
        (first, _CHAIN_LIMIT),
    )
    return await cur.fetchone()


async def restore_memory(
    conn: AsyncConn,
    scope: Scope | None,
    memory_id: UUID,
    actor: str,
    undoes: int | None = None,
) -> MemoryRecord:
    """Make a retired or superseded memory current again; returns it as restored.

    A superseded memory comes back in place of its successor: the current end of its chain
    is retired (``RETIRE``, reason ``restored <id>``), so one fact is current, not two.
    ``undoes``: the model change this restore undoes, named in the RESTORE event.

    Raises:
        MemoryNotFound: no such memory in ``scope`` (another scope's id included).
        NotRestorable: it was erased (deleted by the user, or purged), it is current already, or
            an equal memory is current now.
    """
    async with conn.transaction():
        row = await _lock(conn, scope, memory_id)
        if row is None:
            if await _erased(conn, scope, memory_id):
                raise NotRestorable(
                    f"memory {memory_id} was erased (deleted or purged); it cannot be restored"
                )
            raise MemoryNotFound(f"no memory {memory_id} in this scope")
        record = record_from_row(row)
        retired_at = row[N_COLUMNS]
        if retired_at is None and record.superseded_by is None:
            raise NotRestorable(
                f"memory {memory_id} is current; only a retired or superseded memory"
                " can be restored"
            )
        meta: dict[str, Any] = {} if undoes is None else {"undoes": undoes}
        if retired_at is None and record.superseded_by is not None:
            successor = await _current_successor(conn, record.superseded_by)
            if successor is not None:
                replaced = record_from_row(successor)
                await retire(conn, replaced, actor, f"restored {memory_id}")
                meta["retired"] = str(replaced.id)
        try:
            async with conn.transaction():
                cur = await conn.execute(
                    sql.SQL(
                        "UPDATE memories m SET valid_to = NULL, retired_at = NULL,"
                        " superseded_by = NULL, updated_at = now() WHERE m.id = %s"
                        " RETURNING {cols}"
                    ).format(cols=COLUMNS),
                    (memory_id,),
                )
                restored = await cur.fetchone()
        except psycopg.errors.UniqueViolation:
            raise NotRestorable(
                f"memory {memory_id} cannot be restored: an equal memory is current"
            ) from None
        assert restored is not None
        await history_event(conn, record, "RESTORE", None, record.memory, actor, (), meta)
        return record_from_row(restored)


async def retired_memories(conn: AsyncConn, scope: Scope, limit: int) -> list[RetiredMemory]:
    """The scope's retired memories, most recently retired first, with their RETIRE event."""
    params = Params()
    cur = await conn.execute(
        sql.SQL(
            "SELECT {cols}, m.retired_at, h.actor, h.metadata ->> 'reason', h.turn_ids"
            " FROM memories m LEFT JOIN LATERAL (SELECT e.actor, e.metadata, e.turn_ids"
            "  FROM memory_history e WHERE e.memory_id = m.id AND e.event = 'RETIRE'"
            "  ORDER BY e.id DESC LIMIT 1) h ON TRUE"
            " WHERE {scope} AND m.retired_at IS NOT NULL"
            " ORDER BY m.retired_at DESC, m.id LIMIT {n}"
        ).format(cols=COLUMNS, scope=scope_where(scope, params), n=params.bind(limit)),
        params.values,
    )
    return [
        RetiredMemory(
            record=record_from_row(row),
            retired_at=row[N_COLUMNS],
            actor=row[N_COLUMNS + 1],
            reason=row[N_COLUMNS + 2],
            turn_ids=tuple(row[N_COLUMNS + 3] or ()),
        )
        for row in await cur.fetchall()
    ]


async def purge_retired(conn: AsyncConn, before: datetime, limit: int) -> int:
    """Erase up to ``limit`` memories retired before ``before``; each keeps a PURGE event."""
    async with conn.transaction():
        cur = await conn.execute(
            "WITH gone AS (DELETE FROM memories WHERE id IN (SELECT id FROM memories"
            "  WHERE retired_at < %s ORDER BY retired_at LIMIT %s FOR UPDATE SKIP LOCKED)"
            "  RETURNING id, user_id, agent_id, run_id)"
            " INSERT INTO memory_history (memory_id, user_id, agent_id, run_id, event, actor)"
            " SELECT id, user_id, agent_id, run_id, 'PURGE', 'retention' FROM gone",
            (before, limit),
        )
        return cur.rowcount
