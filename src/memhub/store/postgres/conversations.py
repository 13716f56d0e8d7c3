"""SQL for ``conversation_context``: append turns (with their job and memories, atomically)
and read them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg.types.json import Jsonb

from memhub.errors import UsageError
from memhub.store.postgres.database import AsyncConn
from memhub.store.postgres.jobs import TURNS_JOB_STEP, turns_job_values
from memhub.store.records import (
    IdempotencyKey,
    NewJob,
    NewTurn,
    Turn,
    utc_wall_time,
)

__all__ = ["append_turns", "recent_turns", "turns_by_ids"]


async def _replayed(conn: AsyncConn, key: IdempotencyKey) -> list[int] | None:
    """Claim ``key`` (None: it is new) or return the turn ids its first use stored.

    A concurrent first use holds the row until it commits; this insert waits for it.
    """
    cur = await conn.execute(
        "INSERT INTO idempotency_keys (owner, key, fingerprint) VALUES (%s, %s, %s)"
        " ON CONFLICT DO NOTHING RETURNING 1",
        (key.owner, key.key, key.fingerprint),
    )
    if await cur.fetchone() is not None:
        return None
    cur = await conn.execute(
        "SELECT fingerprint, turn_ids FROM idempotency_keys WHERE owner = %s AND key = %s",
        (key.owner, key.key),
    )
    row = await cur.fetchone()
    assert row is not None
    if row[0] != key.fingerprint:
        raise UsageError(f"idempotency key {key.key!r} was already used for a different request")
    return [int(i) for i in row[1]]


# The turns arrive as parallel arrays, one statement for any number of them. Their ids come
# from the sequence in the order the INSERT receives the rows, which ORDER BY ord fixes, so
# the n-th smallest id is the n-th message: the job's turn ids are paired with their turns
# that way (RETURNING cannot return the source row's position).
_INSERT_TURNS = (
    "WITH new AS ("
    " SELECT * FROM unnest(%(user_ids)s::text[], %(session_ids)s::text[], %(roles)s::text[],"
    "  %(messages)s::text[], %(agent_ids)s::text[], %(metadata)s::jsonb[],"
    "  %(said_at)s::timestamp[], %(long_term)s::bool[])"
    "  WITH ORDINALITY AS n(user_id, session_id, role, message, agent_id, metadata, said_at,"
    "  long_term, ord)"
    "), inserted AS ("
    " INSERT INTO conversation_context"
    "  (user_id, session_id, role, message, agent_id, metadata, created_at)"
    " SELECT user_id, session_id, role, message, agent_id, metadata,"
    "  coalesce(said_at, CURRENT_TIMESTAMP) FROM new ORDER BY ord"
    " RETURNING id"
    "), turns AS (SELECT id, row_number() OVER (ORDER BY id) AS ord FROM inserted)"
)
# The turns' memories (add() returns their ids): text now, so the ids resolve and the words
# are found at once; the ingest job fills in the vectors under the same ids, as it does for
# `memhub import`'s rows (memories.insert_memories). Their ADD events go in the same
# statement: a memory and its history are there together or not at all.
_INSERT_MEMORIES = (
    ", pending AS ("
    " SELECT * FROM unnest(%(memory_ords)s::bigint[], %(memory_ids)s::uuid[],"
    "  %(memory_texts)s::text[], %(memory_hashes)s::text[], %(memory_types)s::text[],"
    "  %(memory_expiries)s::timestamptz[])"
    "  AS p(ord, id, memory, hash, memory_type, expires_at)"
    "), stamped AS ("
    " SELECT p.*, t.id AS turn_id, new.role, coalesce(new.metadata, '{}'::jsonb) AS metadata,"
    "  coalesce(new.said_at AT TIME ZONE 'UTC', now()) AS said_at"
    " FROM pending p JOIN turns t USING (ord) JOIN new USING (ord)"
    "), memory_rows AS ("
    " INSERT INTO memories (id, user_id, agent_id, run_id, memory, hash, metadata, memory_type,"
    "  valid_from, source_turn_ids, created_at, role, expires_at)"
    " SELECT id, %(job_user_id)s, %(job_agent_id)s, %(job_run_id)s, memory, hash, metadata,"
    "  memory_type, said_at, ARRAY[turn_id], said_at, role, expires_at FROM stamped"
    "), memory_events AS ("
    " INSERT INTO memory_history (memory_id, user_id, agent_id, run_id, event, new_memory,"
    "  actor, turn_ids)"
    " SELECT id, %(job_user_id)s, %(job_agent_id)s, %(job_run_id)s, 'ADD', memory, 'add',"
    "  ARRAY[turn_id] FROM stamped)"
)
_SELECT_IDS = " SELECT id FROM turns ORDER BY id"


def _turn_columns(turns: Sequence[NewTurn]) -> dict[str, list[Any]]:
    """``turns`` as the array parameters of the INSERT, one list per column."""
    return {
        "user_ids": [t.user_id for t in turns],
        "session_ids": [t.session_id for t in turns],
        "roles": [t.role for t in turns],
        "messages": [t.message for t in turns],
        "agent_ids": [t.agent_id for t in turns],
        "metadata": [None if t.metadata is None else Jsonb(t.metadata) for t in turns],
        "said_at": [None if t.created_at is None else utc_wall_time(t.created_at) for t in turns],
        "long_term": [t.long_term for t in turns],
    }


def _memory_columns(turns: Sequence[NewTurn]) -> dict[str, list[Any]]:
    """The turns' memories as array parameters; ``memory_ords`` pairs each with its turn."""
    pending = [(n, t.memory) for n, t in enumerate(turns, start=1) if t.memory is not None]
    return {
        "memory_ords": [n for n, _ in pending],
        "memory_ids": [m.id for _, m in pending],
        "memory_texts": [m.memory for _, m in pending],
        "memory_hashes": [m.hash for _, m in pending],
        "memory_types": [m.memory_type for _, m in pending],
        "memory_expiries": [m.expires_at for _, m in pending],
    }


async def _insert(conn: AsyncConn, turns: Sequence[NewTurn], job: NewJob | None) -> list[int]:
    """The turns, their job and their memories in one statement (atomic: one round trip)."""
    query = _INSERT_TURNS
    values = _turn_columns(turns)
    if job is not None:
        query += TURNS_JOB_STEP
        values |= turns_job_values(job)
        if any(t.memory is not None for t in turns):
            query += _INSERT_MEMORIES
            values |= _memory_columns(turns)
    query += _SELECT_IDS
    cur = await conn.execute(query, values)
    return [int(row[0]) for row in await cur.fetchall()]


async def append_turns(
    conn: AsyncConn,
    turns: Sequence[NewTurn],
    job: NewJob | None,
    idempotency: IdempotencyKey | None = None,
) -> list[int]:
    """Insert ``turns`` and, if given, ``job`` (carrying their ids) and the turns' memories
    atomically.

    With ``idempotency``, a key used before returns the first call's turn ids instead.
    """
    if idempotency is None:
        return await _insert(conn, turns, job)
    async with conn.transaction():
        first = await _replayed(conn, idempotency)
        if first is not None:
            return first
        ids = await _insert(conn, turns, job)
        await conn.execute(
            "UPDATE idempotency_keys SET turn_ids = %s WHERE owner = %s AND key = %s",
            (ids, idempotency.owner, idempotency.key),
        )
    return ids


def _turn(row: Sequence[object]) -> Turn:
    return Turn(
        id=int(row[0]),  # type: ignore[call-overload]
        user_id=str(row[1]),
        session_id=str(row[2]),
        role=str(row[3]),
        message=str(row[4]),
        agent_id=None if row[5] is None else str(row[5]),
        metadata=row[6],  # type: ignore[arg-type]
        created_at=row[7],  # type: ignore[arg-type]
    )


async def recent_turns(conn: AsyncConn, user_id: str, session_id: str, limit: int) -> list[Turn]:
    """The last ``limit`` turns of one user's session, oldest first."""
    cur = await conn.execute(
        "SELECT id, user_id, session_id, role, message, agent_id, metadata, created_at"
        " FROM conversation_context"
        " WHERE user_id = %s AND session_id = %s ORDER BY id DESC LIMIT %s",
        (user_id, session_id, limit),
    )
    rows = await cur.fetchall()
    return [_turn(row) for row in reversed(rows)]


async def turns_by_ids(conn: AsyncConn, ids: Sequence[int]) -> list[Turn]:
    """The turns with these ids, in id order."""
    cur = await conn.execute(
        "SELECT id, user_id, session_id, role, message, agent_id, metadata, created_at"
        " FROM conversation_context WHERE id = ANY(%s) ORDER BY id",
        (list(ids),),
    )
    return [_turn(row) for row in await cur.fetchall()]
