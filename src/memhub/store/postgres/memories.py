"""SQL for ``memories`` and ``memory_history``: insert, hybrid candidates, CRUD, deletion."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import numpy as np
from psycopg import sql
from psycopg.types.json import Jsonb

from memhub.errors import MemoryNotFound
from memhub.filters import Filter
from memhub.store.postgres.bind import Params, scope_where
from memhub.store.postgres.database import AsyncConn
from memhub.store.postgres.filters import compile_filter
from memhub.store.records import (
    FilledVector,
    HistoryEvent,
    MemoryRecord,
    NewMemory,
    Passage,
    Scope,
    TextToEmbed,
    updated_metadata,
)

__all__ = [
    "COLUMNS",
    "N_COLUMNS",
    "delete_memory",
    "fill_vectors",
    "get_memory",
    "history",
    "history_event",
    "insert_memories",
    "list_memories",
    "lock_memory",
    "memories_for_turns",
    "memories_where",
    "passage_rows",
    "previous_turn",
    "purge_expired",
    "record_from_row",
    "reset",
    "set_expiry",
    "texts_to_embed",
    "update_memory",
]

COLUMNS = sql.SQL(
    "m.id, m.user_id, m.agent_id, m.run_id, m.memory, m.hash, m.metadata, m.memory_type,"
    " m.valid_from, m.valid_to, m.superseded_by, m.source_turn_ids, m.created_at, m.updated_at,"
    " m.role"
)
N_COLUMNS = 15


def record_from_row(row: Sequence[Any]) -> MemoryRecord:
    """A :class:`MemoryRecord` from the first ``N_COLUMNS`` values of ``row``."""
    return MemoryRecord(
        id=row[0],
        scope=Scope(user_id=row[1], agent_id=row[2], run_id=row[3]),
        memory=row[4],
        hash=row[5],
        metadata=row[6] or {},
        memory_type=row[7],
        valid_from=row[8],
        valid_to=row[9],
        superseded_by=row[10],
        source_turn_ids=tuple(row[11] or ()),
        created_at=row[12],
        updated_at=row[13],
        role=row[14],
    )


def memories_where(
    scope: Scope | None,
    filters: Filter | None,
    include_superseded: bool,
    params: Params,
    alias: str = "m",
    *,
    retired_column: bool = True,
) -> sql.Composable:
    """The scope, currency and filter conditions of a read.

    Retired memories are closed (``valid_to``), so the current facts exclude them; with
    ``include_superseded`` they are excluded by ``retired_at`` (``retired_column``: False for
    a table without it, such as ``memory_words``, whose hits are checked again on
    ``memories``).
    """
    parts = [scope_where(scope, params, alias)]
    if not include_superseded:
        parts.append(sql.SQL("{} IS NULL").format(sql.Identifier(alias, "valid_to")))
        if alias == "m":  # memory_words rows are checked against their memories row after
            parts.append(_NOT_EXPIRED)
    elif retired_column:
        parts.append(sql.SQL("{} IS NULL").format(sql.Identifier(alias, "retired_at")))
    if filters is not None:
        parts.append(compile_filter(filters, params, alias))
    return sql.SQL(" AND ").join(parts)


# add(expiration_date=...): an expired memory is not returned, before the worker purges it.
_NOT_EXPIRED = sql.SQL("(m.expires_at IS NULL OR m.expires_at > now())")


def _dedup_key(memory: NewMemory) -> tuple[str, str, str, str]:
    scope = memory.scope
    return (scope.user_id or "", scope.agent_id or "", scope.run_id or "", memory.hash)


def previous_turn(turn_id: sql.Composable) -> sql.Composed:
    """SQL for the turn said just before turn ``turn_id`` in its session (NULL if none).

    Two index probes: the turn itself, then conversation_context's (user_id, session_id, id).
    """
    return sql.SQL(
        "(SELECT p.id FROM conversation_context t JOIN LATERAL ("
        " SELECT p.id FROM conversation_context p WHERE p.user_id = t.user_id"
        " AND p.session_id = t.session_id AND p.id < t.id ORDER BY p.id DESC LIMIT 1) p ON TRUE"
        " WHERE t.id = {turn_id})"
    ).format(turn_id=turn_id)


# One memory; the last value is its first source turn, whose previous turn search reads
# (0: none; migration 0018).
_INSERT = sql.SQL(
    "INSERT INTO memories (id, user_id, agent_id, run_id, memory, hash, embedding, metadata,"
    " memory_type, valid_from, source_turn_ids, created_at, role, previous_turn_id, expires_at)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, coalesce(%s::timestamptz, now()), %s,"
    " coalesce(%s::timestamptz, now()), %s, coalesce({previous}, 0), %s)"
    " ON CONFLICT (coalesce(user_id, ''), coalesce(agent_id, ''), coalesce(run_id, ''), hash)"
    " WHERE valid_to IS NULL AND role IS NULL DO NOTHING RETURNING id"
).format(previous=previous_turn(sql.SQL("%s::bigint")))

# A vector for a memory written without one (by add(), add_turn or an import), and with it
# the turn before its first source turn; only for the text it was computed from.
_FILL_VECTOR = sql.SQL(
    "UPDATE memories m SET embedding = %s,"
    " previous_turn_id = coalesce(m.previous_turn_id, {previous}, 0)"
    " WHERE m.id = %s AND m.hash = %s AND m.embedding IS NULL"
).format(previous=previous_turn(sql.SQL("m.source_turn_ids[1]")))


def _memory_row(new: NewMemory) -> tuple[Any, ...]:
    """``new`` as the parameters of the memories INSERT, in its column order."""
    return (
        new.id,
        new.scope.user_id,
        new.scope.agent_id,
        new.scope.run_id,
        new.memory,
        new.hash,
        None if new.embedding is None else np.asarray(new.embedding, dtype=np.float32),
        Jsonb(new.metadata),
        new.memory_type,
        new.valid_from,
        list(new.source_turn_ids),
        new.created_at,
        new.role,
        new.source_turn_ids[0] if new.source_turn_ids else None,
        new.expires_at,
    )


def _add_event_row(new: NewMemory, memory_id: UUID, actor: str) -> tuple[Any, ...]:
    """The parameters of the ADD event's memory_history INSERT."""
    scope = new.scope
    turn_ids = list(new.source_turn_ids)
    return (memory_id, scope.user_id, scope.agent_id, scope.run_id, new.memory, actor, turn_ids)


async def insert_memories(
    conn: AsyncConn, memories: Sequence[NewMemory], actor: str
) -> list[UUID | None]:
    """Insert, skipping exact duplicates of a current fact; ADD history for each insert."""
    if not memories:
        return []
    inserted = await _insert_new(conn, memories, actor)
    await _insert_passages(
        conn, [(m.id, m.hash, m.passages) for m, i in zip(memories, inserted, strict=True) if i]
    )
    return inserted


async def fill_vectors(conn: AsyncConn, filled: Sequence[FilledVector]) -> int:
    """Vectors and passages for memories written without a vector; returns how many."""
    # In id order, so two batches filling overlapping rows cannot deadlock.
    ordered = sorted(filled, key=lambda f: f.id)
    if not ordered:
        return 0
    async with conn.cursor() as cur:
        await cur.executemany(
            _FILL_VECTOR,
            [(np.asarray(f.embedded.vector, dtype=np.float32), f.id, f.hash) for f in ordered],
        )
        count = max(cur.rowcount, 0)
    # A retried job finds its passages there already; a reworded memory gets none.
    await _insert_passages(conn, [(f.id, f.hash, f.embedded.passages) for f in ordered])
    return count


async def texts_to_embed(conn: AsyncConn, scope: Scope, ids: Sequence[UUID]) -> list[TextToEmbed]:
    params = Params()
    query = sql.SQL(
        "SELECT m.id, m.memory, m.hash FROM memories m WHERE {scope} AND m.id = ANY({ids})"
        " AND m.embedding IS NULL ORDER BY m.id"
    ).format(scope=scope_where(scope, params), ids=params.bind(list(ids), "uuid[]"))
    cur = await conn.execute(query, params.values)
    return [TextToEmbed(id=row[0], memory=row[1], hash=row[2]) for row in await cur.fetchall()]


# A passage goes in only while its memory still has the text it was cut from (an update may
# have changed it since the worker read the turn); a retried job finds its passages there.
_INSERT_PASSAGE = (
    "INSERT INTO memory_passages (memory_id, ordinal, start_char, end_char, embedding)"
    " SELECT m.id, %s, %s, %s, %s FROM memories m WHERE m.id = %s AND m.hash = %s"
    " ON CONFLICT (memory_id, ordinal) DO NOTHING"
)


def passage_rows(memory_id: UUID, hash_: str, passages: Sequence[Passage]) -> list[tuple[Any, ...]]:
    """The parameters of ``_INSERT_PASSAGE`` for one memory's passages.

    The first passage's vector is the memory's own (``EmbeddedText``), so it is not stored
    twice: its row keeps the span with no vector, and search scores it by the memory's
    (``search._BEST_PASSAGE``); HNSW leaves NULL vectors out of its index.
    """
    return [
        (
            p.ordinal,
            p.start,
            p.end,
            None if p.ordinal == 0 else np.asarray(p.embedding, dtype=np.float32),
            memory_id,
            hash_,
        )
        for p in passages
    ]


async def _insert_passages(
    conn: AsyncConn, owned: Sequence[tuple[UUID, str, Sequence[Passage]]]
) -> None:
    """Each memory's passages, given with the hash of the text they were cut from."""
    rows = [
        row
        for memory_id, hash_, passages in owned
        for row in passage_rows(memory_id, hash_, passages)
    ]
    if rows:
        async with conn.cursor() as cur:
            await cur.executemany(_INSERT_PASSAGE, rows)


async def _insert_new(
    conn: AsyncConn, memories: Sequence[NewMemory], actor: str
) -> list[UUID | None]:
    if not memories:
        return []
    # Concurrent batches insert in one global order (scope, hash), so two of them waiting on
    # each other's unique-index entries cannot deadlock.
    order = sorted(range(len(memories)), key=lambda i: _dedup_key(memories[i]))
    ordered = [memories[i] for i in order]
    returned: list[UUID | None] = []
    async with conn.cursor() as cur:
        # One statement per memory, sent as a batch: executemany pipelines them, and each
        # parameter set gets its own result set (empty where ON CONFLICT skipped a duplicate).
        await cur.executemany(
            _INSERT,
            [_memory_row(new) for new in ordered],
            returning=True,
        )
        while True:
            row = await cur.fetchone()
            returned.append(None if row is None else row[0])
            if not cur.nextset():
                break
        inserted: list[UUID | None] = [None] * len(memories)
        for position, value in zip(order, returned, strict=True):
            inserted[position] = value
        added = [(m, i) for m, i in zip(memories, inserted, strict=True) if i is not None]
        if added:
            await cur.executemany(
                "INSERT INTO memory_history"
                " (memory_id, user_id, agent_id, run_id, event, new_memory, actor, turn_ids)"
                " VALUES (%s, %s, %s, %s, 'ADD', %s, %s, %s)",
                [_add_event_row(m, i, actor) for m, i in added],
            )
    return inserted


async def get_memory(conn: AsyncConn, scope: Scope | None, memory_id: UUID) -> MemoryRecord | None:
    params = Params()
    # A retired memory is out of every read (restore or the retired listing reach it).
    query = sql.SQL(
        "SELECT {cols} FROM memories m"
        " WHERE m.id = {id} AND {scope} AND m.retired_at IS NULL AND {live}"
    ).format(
        cols=COLUMNS, id=params.bind(memory_id), scope=scope_where(scope, params), live=_NOT_EXPIRED
    )
    cur = await conn.execute(query, params.values)
    row = await cur.fetchone()
    return None if row is None else record_from_row(row)


async def memories_for_turns(
    conn: AsyncConn, scope: Scope, turn_ids: Sequence[int]
) -> list[MemoryRecord]:
    params = Params()
    query = sql.SQL(
        "SELECT {cols} FROM memories m WHERE {scope} AND m.valid_to IS NULL"
        " AND m.source_turn_ids && {turns} ORDER BY m.created_at, m.id"
    ).format(
        cols=COLUMNS,
        scope=scope_where(scope, params),
        turns=params.bind(list(turn_ids), "bigint[]"),
    )
    cur = await conn.execute(query, params.values)
    return [record_from_row(row) for row in await cur.fetchall()]


async def list_memories(
    conn: AsyncConn,
    scope: Scope,
    filters: Filter | None,
    limit: int,
    include_superseded: bool,
) -> list[MemoryRecord]:
    params = Params()
    query = sql.SQL(
        "SELECT {cols} FROM memories m WHERE {where} ORDER BY m.created_at DESC, m.id LIMIT {n}"
    ).format(
        cols=COLUMNS,
        where=memories_where(scope, filters, include_superseded, params),
        n=params.bind(limit),
    )
    cur = await conn.execute(query, params.values)
    return [record_from_row(row) for row in await cur.fetchall()]


async def update_memory(
    conn: AsyncConn,
    scope: Scope | None,
    memory_id: UUID,
    text: str | None,
    hash_: str | None,
    vector: Any,
    metadata: dict[str, Any] | None,
    actor: str,
    merge_metadata: bool = False,
    passages: Sequence[Passage] = (),
) -> MemoryRecord:
    async with conn.transaction():
        old = await lock_memory(conn, scope, memory_id, retired=False)
        query = sql.SQL(
            "UPDATE memories m SET memory = coalesce(%s, m.memory), hash = coalesce(%s, m.hash),"
            " embedding = coalesce(%s, m.embedding), metadata = %s, updated_at = now()"
            " WHERE m.id = %s RETURNING {cols}"
        ).format(cols=COLUMNS)
        cur = await conn.execute(
            query,
            (
                text,
                hash_,
                None if vector is None else np.asarray(vector, dtype=np.float32),
                Jsonb(
                    updated_metadata(
                        dict(old.metadata),
                        metadata,
                        merge=merge_metadata,
                        role_column=old.role is not None,
                    )
                ),
                memory_id,
            ),
        )
        row = await cur.fetchone()
        assert row is not None
        if hash_ is not None:  # the old text's passages went with it (migration 0026)
            await _insert_passages(conn, [(memory_id, hash_, passages)])
        if text is not None and text != old.memory:  # history is of text, as Mem0's is
            await history_event(conn, old, "UPDATE", old.memory, text, actor)
        return record_from_row(row)


async def lock_memory(
    conn: AsyncConn, scope: Scope | None, memory_id: UUID, *, retired: bool = True
) -> MemoryRecord:
    """The memory, locked; ``retired`` False: a retired one counts as absent."""
    params = Params()
    query = sql.SQL(
        "SELECT {cols} FROM memories m WHERE m.id = {id} AND {scope}{current} FOR UPDATE"
    ).format(
        cols=COLUMNS,
        id=params.bind(memory_id),
        scope=scope_where(scope, params),
        current=sql.SQL("" if retired else " AND m.retired_at IS NULL"),
    )
    cur = await conn.execute(query, params.values)
    row = await cur.fetchone()
    if row is None:
        raise MemoryNotFound(f"no memory {memory_id} in this scope")
    return record_from_row(row)


async def history_event(
    conn: AsyncConn,
    record: MemoryRecord,
    event: str,
    old: str | None,
    new: str | None,
    actor: str,
    turn_ids: Sequence[int] = (),
    metadata: dict[str, Any] | None = None,
) -> None:
    await conn.execute(
        "INSERT INTO memory_history (memory_id, user_id, agent_id, run_id, event, old_memory,"
        " new_memory, actor, turn_ids, metadata)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            record.id,
            record.scope.user_id,
            record.scope.agent_id,
            record.scope.run_id,
            event,
            old,
            new,
            actor,
            list(turn_ids),
            Jsonb(metadata or {}),
        ),
    )


async def delete_memory(conn: AsyncConn, scope: Scope | None, memory_id: UUID, actor: str) -> None:
    async with conn.transaction():
        old = await lock_memory(conn, scope, memory_id)
        # Its earlier wordings (consolidation._KEEP_VERSION) go with it; a fact it
        # superseded is another fact and stays, closed.
        await conn.execute(
            "DELETE FROM memories WHERE id = %s OR (superseded_by = %s AND valid_to = valid_from)",
            (memory_id, memory_id),
        )
        await history_event(conn, old, "DELETE", old.memory, None, actor)


# The expired memories go with a DELETE event each, as a user's delete leaves (actor "expiry").
_PURGE_EXPIRED = (
    "WITH gone AS ("
    " DELETE FROM memories WHERE id IN (SELECT id FROM memories"
    "  WHERE expires_at IS NOT NULL AND expires_at <= now() ORDER BY expires_at LIMIT %s"
    "  FOR UPDATE SKIP LOCKED)"
    " RETURNING id, user_id, agent_id, run_id, memory)"
    " INSERT INTO memory_history (memory_id, user_id, agent_id, run_id, event, old_memory,"
    " new_memory, actor, turn_ids, metadata)"
    " SELECT id, user_id, agent_id, run_id, 'DELETE', memory, NULL, 'expiry', '{}', '{}'"
    " FROM gone"
)


async def set_expiry(
    conn: AsyncConn, scope: Scope | None, memory_ids: Sequence[UUID], expires_at: datetime | None
) -> None:
    """When these memories of ``scope`` expire (None: never)."""
    params = Params()
    query = sql.SQL("UPDATE memories m SET expires_at = {at} WHERE m.id = ANY({ids}) AND {scope}")
    await conn.execute(
        query.format(
            at=params.bind(expires_at, "timestamptz"),
            ids=params.bind(list(memory_ids), "uuid[]"),
            scope=scope_where(scope, params),
        ),
        params.values,
    )


async def purge_expired(conn: AsyncConn, limit: int) -> int:
    """Delete up to ``limit`` expired memories, each leaving a DELETE event; how many went."""
    async with conn.transaction():
        cur = await conn.execute(_PURGE_EXPIRED, (limit,))
        return cur.rowcount


async def history(conn: AsyncConn, scope: Scope | None, memory_id: UUID) -> list[HistoryEvent]:
    """The memory's events, preceded by those of the facts it superseded (the whole chain)."""
    params = Params()
    query = sql.SQL(
        "WITH RECURSIVE chain(id) AS ("
        "  SELECT {id}::uuid"
        "  UNION SELECT p.id FROM memories p JOIN chain c ON p.superseded_by = c.id"
        ")"
        " SELECT m.id, m.memory_id, m.event, m.old_memory, m.new_memory, m.actor, m.turn_ids,"
        " m.metadata, m.created_at FROM memory_history m"
        " WHERE m.memory_id IN (SELECT id FROM chain) AND {scope} ORDER BY m.id"
    ).format(id=params.bind(memory_id), scope=scope_where(scope, params))
    cur = await conn.execute(query, params.values)
    return [
        HistoryEvent(
            id=r[0],
            memory_id=r[1],
            event=r[2],
            old_memory=r[3],
            new_memory=r[4],
            actor=r[5],
            turn_ids=tuple(r[6] or ()),
            metadata=r[7] or {},
            created_at=r[8],
        )
        for r in await cur.fetchall()
    ]


async def reset(conn: AsyncConn) -> None:
    await conn.execute(
        "TRUNCATE memories, memory_history, memory_jobs, conversation_context,"
        " idempotency_keys RESTART IDENTITY"
    )
