"""SQL for ``conversation_context``: append turns (with their job, atomically) and read them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC
from typing import Any

from psycopg.types.json import Jsonb

from memhub.errors import UsageError
from memhub.store.database import AsyncConn
from memhub.store.records import IdempotencyKey, NewJob, NewTurn, Turn

__all__ = ["append_turns", "recent_turns", "turns_by_ids"]


def _naive_utc(turn: NewTurn) -> object:
    # ARKOS's column is TIMESTAMP without time zone: store UTC wall time.
    if turn.created_at is None:
        return None
    ts = turn.created_at
    return ts.astimezone(UTC).replace(tzinfo=None) if ts.tzinfo else ts


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


def _turn_row(turn: NewTurn) -> tuple[Any, ...]:
    """``turn`` as the parameters of the conversation_context INSERT."""
    metadata = Jsonb(turn.metadata) if turn.metadata is not None else None
    said_at = _naive_utc(turn)
    return (
        turn.user_id,
        turn.session_id,
        turn.role,
        turn.message,
        turn.agent_id,
        metadata,
        said_at,
    )


async def append_turns(
    conn: AsyncConn,
    turns: Sequence[NewTurn],
    job: NewJob | None,
    idempotency: IdempotencyKey | None = None,
) -> list[int]:
    """Insert ``turns`` and, if given, ``job`` (carrying their ids) in one transaction.

    With ``idempotency``, a key used before returns the first call's turn ids instead.
    """
    async with conn.transaction():
        if idempotency is not None:
            first = await _replayed(conn, idempotency)
            if first is not None:
                return first
        ids: list[int] = []
        async with conn.cursor() as cur:
            for turn in turns:
                await cur.execute(
                    "INSERT INTO conversation_context"
                    " (user_id, session_id, role, message, agent_id, metadata, created_at)"
                    " VALUES (%s, %s, %s, %s, %s, %s, coalesce(%s::timestamp, CURRENT_TIMESTAMP))"
                    " RETURNING id",
                    _turn_row(turn),
                )
                row = await cur.fetchone()
                assert row is not None
                ids.append(int(row[0]))
            if job is not None:
                long_term = [i for i, t in zip(ids, turns, strict=True) if t.long_term]
                await cur.execute(
                    "INSERT INTO memory_jobs (kind, user_id, agent_id, run_id, payload)"
                    " VALUES (%s, %s, %s, %s, %s)",
                    (
                        job.kind,
                        job.scope.user_id,
                        job.scope.agent_id,
                        job.scope.run_id,
                        Jsonb({**job.payload, "turn_ids": long_term}),
                    ),
                )
            if idempotency is not None:
                await cur.execute(
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
