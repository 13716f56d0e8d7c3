"""SQL of ``memhub import``: one transaction per batch of thousands of turns, sent with COPY.

A batch writes its turns, the memories they become (text only: keyword-searchable at once,
their vectors filled in by the worker's ingest job), their history, their jobs and the
input's cursor together, so a batch is all there or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from psycopg import AsyncCursor
from psycopg.types.json import Jsonb

from memhub.store.postgres.database import AsyncConn
from memhub.store.postgres.jobs import insert_jobs
from memhub.store.records import ImportBatch, ImportCursor, NewMemory, utc_wall_time

__all__ = [
    "read_cursor",
    "reserve_turn_ids",
    "reset_cursor",
    "write_batch",
]


async def reserve_turn_ids(conn: AsyncConn, count: int) -> list[int]:
    """``count`` new ``conversation_context`` ids (a sequence: unused ones leave a gap only)."""
    cur = await conn.execute(
        "SELECT nextval(pg_get_serial_sequence('conversation_context', 'id'))"
        " FROM generate_series(1, %s)",
        (count,),
    )
    return [int(row[0]) for row in await cur.fetchall()]


async def read_cursor(conn: AsyncConn, source: str) -> ImportCursor | None:
    """The cursor of ``source``, if an import of it ever committed a batch."""
    cur = await conn.execute(
        "SELECT source, path, position, digest, finished FROM import_cursors WHERE source = %s",
        (source,),
    )
    row = await cur.fetchone()
    if row is None:
        return None
    return ImportCursor(row[0], row[1], int(row[2]), str(row[3]), bool(row[4]))


async def write_batch(conn: AsyncConn, batch: ImportBatch) -> list[int]:
    """Write ``batch`` in one transaction (COPY for the bulk rows); all of it or nothing.

    Returns the ids of the jobs it queued (the import waits for those, not for others')."""
    now = datetime.now(UTC)
    async with conn.transaction(), conn.cursor() as cur:
        async with cur.copy(
            "COPY conversation_context"
            " (id, user_id, session_id, role, message, agent_id, metadata, created_at)"
            " FROM STDIN"
        ) as copy:
            for turn_id, t in batch.turns:
                meta = None if t.metadata is None else Jsonb(t.metadata)
                at = utc_wall_time(t.created_at or now)
                row = (turn_id, t.user_id, t.session_id, t.role, t.message, t.agent_id, meta, at)
                await copy.write_row(row)
        await _copy_memories(cur, batch.memories, now)
        job_ids = await insert_jobs(cur, batch.jobs)
        if batch.cursor is not None:
            c = batch.cursor
            await cur.execute(
                "INSERT INTO import_cursors AS c (source, path, position, digest, finished)"
                " VALUES (%(source)s, %(path)s, %(position)s, %(digest)s, %(finished)s)"
                " ON CONFLICT (source) DO UPDATE SET path = %(path)s, position = %(position)s,"
                " digest = %(digest)s, finished = %(finished)s, updated_at = now()",
                {
                    "source": c.source,
                    "path": c.path,
                    "position": c.position,
                    "digest": c.digest,
                    "finished": c.finished,
                },
            )
    return job_ids


async def _copy_memories(
    cur: AsyncCursor[Any], memories: Sequence[NewMemory], now: datetime
) -> None:
    if not memories:
        return
    async with cur.copy(
        "COPY memories (id, user_id, agent_id, run_id, memory, hash, metadata, memory_type,"
        " valid_from, source_turn_ids, created_at, role) FROM STDIN"
    ) as copy:
        for m in memories:
            s = m.scope
            turn_ids = list(m.source_turn_ids)
            await copy.write_row(
                (
                    *(m.id, s.user_id, s.agent_id, s.run_id, m.memory, m.hash),
                    *(Jsonb(m.metadata), m.memory_type, m.valid_from or now, turn_ids),
                    *(m.created_at or now, m.role),
                )
            )
    async with cur.copy(
        "COPY memory_history (memory_id, user_id, agent_id, run_id, event, new_memory, actor,"
        " turn_ids) FROM STDIN"
    ) as copy:
        for m in memories:
            s = m.scope
            turn_ids = list(m.source_turn_ids)
            await copy.write_row(
                (m.id, s.user_id, s.agent_id, s.run_id, "ADD", m.memory, "import", turn_ids)
            )


async def reset_cursor(conn: AsyncConn, source: str) -> None:
    """Forget ``source``'s cursor (``--restart``: import the file again from its start)."""
    await conn.execute("DELETE FROM import_cursors WHERE source = %s", (source,))
