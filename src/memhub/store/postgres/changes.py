"""SQL for the model changes: what models retired, superseded and reworded, and their undo.

The list and the budget both read ``memory_history``: its RETIRE, SUPERSEDE and UPDATE events
whose actor is a model (not ``user`` or ``retention``, :data:`PERSON_ACTORS`). Undoing one
brings back the same memory id: a retire or supersession is restored
(:func:`memhub.store.postgres.retire.restore_memory`), an UPDATE gets its earlier wording back
from the version the UPDATE kept. Each undo is a RESTORE event naming the change (``undoes``).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from memhub.errors import MemoryNotFound, NotRestorable
from memhub.store.postgres.bind import Params, scope_where
from memhub.store.postgres.budget import by_model, count_model_changes
from memhub.store.postgres.database import AsyncConn
from memhub.store.postgres.memories import history_event, lock_memory
from memhub.store.postgres.retire import restore_memory
from memhub.store.records import (
    MODEL_CHANGE_EVENTS,
    MemoryRecord,
    ModelChange,
    Scope,
    is_model_actor,
)

__all__ = ["count_model_changes", "model_changes", "restore", "undo_model_change"]

# A change is undone once a RESTORE of its memory follows it (a retired or superseded memory
# changes no further until restored); an UPDATE, once a RESTORE names it.
_UNDONE = sql.SQL(
    "EXISTS (SELECT 1 FROM memory_history r WHERE r.memory_id = m.memory_id"
    " AND r.event = 'RESTORE' AND r.id > m.id"
    " AND (m.event <> 'UPDATE' OR r.metadata ->> 'undoes' = m.id::text))"
)


async def model_changes(
    conn: AsyncConn, scope: Scope, limit: int, before: int | None = None
) -> list[ModelChange]:
    """The scope's model changes, newest first; ``before``: only changes with a smaller id."""
    params = Params()
    older = sql.SQL("TRUE") if before is None else sql.SQL("m.id < {}").format(params.bind(before))
    cur = await conn.execute(
        sql.SQL(
            "SELECT m.id, m.memory_id, m.event, m.old_memory, m.new_memory, m.actor,"
            " m.metadata ->> 'reason', m.turn_ids, m.created_at, {undone},"
            " m.metadata ->> 'superseded_by'"
            " FROM memory_history m WHERE {scope} AND {by_model} AND {older}"
            " ORDER BY m.id DESC LIMIT {n}"
        ).format(
            undone=_UNDONE,
            scope=scope_where(scope, params),
            by_model=by_model(params),
            older=older,
            n=params.bind(limit),
        ),
        params.values,
    )
    return [
        ModelChange(
            id=row[0],
            memory_id=row[1],
            event=row[2],
            before=row[3],
            after=row[4],
            actor=row[5],
            reason=row[6],
            turn_ids=tuple(row[7] or ()),
            created_at=row[8],
            undone=row[9],
            successor_id=None if row[10] is None else UUID(row[10]),
        )
        for row in await cur.fetchall()
    ]


async def _change(conn: AsyncConn, scope: Scope | None, change_id: int) -> tuple[Any, ...]:
    params = Params()
    cur = await conn.execute(
        sql.SQL(
            "SELECT m.memory_id, m.event, m.actor, m.old_memory, m.new_memory,"
            " m.metadata ->> 'previous_version', {undone}"
            " FROM memory_history m WHERE m.id = {id} AND {scope}"
        ).format(undone=_UNDONE, id=params.bind(change_id), scope=scope_where(scope, params)),
        params.values,
    )
    row = await cur.fetchone()
    if row is None:
        raise MemoryNotFound(f"no change {change_id} in this scope")
    if row[1] not in MODEL_CHANGE_EVENTS or not is_model_actor(row[2]):
        raise NotRestorable(f"change {change_id} is not a model's change; nothing to undo")
    if row[6]:
        raise NotRestorable(f"change {change_id} is undone already")
    return tuple(row)


async def undo_model_change(
    conn: AsyncConn, scope: Scope | None, change_id: int, actor: str
) -> MemoryRecord:
    """Undo one model change; returns the memory as it is now current again (same id).

    Raises:
        MemoryNotFound: no such change in ``scope``.
        NotRestorable: not a model's change, undone already, the memory was erased or changed
            since (an UPDATE), or an equal memory is current now.
    """
    async with conn.transaction():
        memory_id, event, _, before, after, version, _ = await _change(conn, scope, change_id)
        if event != "UPDATE":
            return await restore_memory(conn, scope, memory_id, actor, undoes=change_id)
        change = (memory_id, change_id)
        return await _reword_back(conn, scope, change, before, after, version, actor)


async def _reword_back(
    conn: AsyncConn,
    scope: Scope | None,
    change: tuple[UUID, int],
    before: str,
    after: str,
    version: str | None,
    actor: str,
) -> MemoryRecord:
    """The earlier wording of an UPDATE, back under the same id from the version it kept."""
    memory_id, change_id = change
    try:
        record = await lock_memory(conn, scope, memory_id)
    except MemoryNotFound:
        raise NotRestorable(f"memory {memory_id} was erased; it cannot be restored") from None
    if record.valid_to is not None or record.memory != after or version is None:
        raise NotRestorable(
            f"memory {memory_id} changed after change {change_id} (its history shows how);"
            " undo the later changes first"
        )
    try:
        async with conn.transaction():
            cur = await conn.execute(
                "UPDATE memories m SET memory = v.memory, hash = v.hash, embedding = v.embedding,"
                " source_turn_ids = v.source_turn_ids, updated_at = now()"
                " FROM memories v WHERE m.id = %s AND v.id = %s AND v.superseded_by = m.id",
                (memory_id, UUID(version)),
            )
    except psycopg.errors.UniqueViolation:
        raise NotRestorable(
            f"change {change_id} cannot be undone: the earlier wording is current as another memory"
        ) from None
    if cur.rowcount != 1:
        raise NotRestorable(f"the earlier wording of memory {memory_id} is no longer kept")
    await conn.execute("DELETE FROM memories WHERE id = %s", (UUID(version),))
    await history_event(conn, record, "RESTORE", after, before, actor, (), {"undoes": change_id})
    restored = await lock_memory(conn, scope, memory_id)
    return restored


async def restore(
    conn: AsyncConn, scope: Scope | None, memory_id: UUID, actor: str
) -> MemoryRecord:
    """``restore``: a version an UPDATE kept is restored as that UPDATE's undo (same id)."""
    params = Params()
    cur = await conn.execute(
        sql.SQL(
            "SELECT m.id FROM memory_history m JOIN memories v ON v.id = {version}"
            " AND v.superseded_by = m.memory_id WHERE m.event = 'UPDATE' AND {scope}"
            " AND m.metadata ->> 'previous_version' = {text} ORDER BY m.id DESC LIMIT 1"
        ).format(
            version=params.bind(memory_id),
            scope=scope_where(scope, params),
            text=params.bind(str(memory_id)),
        ),
        params.values,
    )
    row = await cur.fetchone()
    if row is not None:
        return await undo_model_change(conn, scope, row[0], actor)
    return await restore_memory(conn, scope, memory_id, actor)
