"""SQL of ``memhub reembed``: fill a shadow vector column in batches, then swap it in.

The new vectors go to ``embedding_new`` (its own dimension) while the old column keeps
serving; its HNSW index is built concurrently; one short transaction then re-embeds what
changed meanwhile, replaces the column and its index, and records the new model. A run that
stops half-way resumes where it was, as long as the target model is the same.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from uuid import UUID

import numpy as np
import numpy.typing as npt
from psycopg import sql

from memhub.store.database import AsyncConn
from memhub.store.pg_bind import vector_type_modifier

# Shared with ensure_embedding_space: an engine opening during the swap waits for it, then
# reads the new model. The constant is private to pg_memories; it must be the same lock.
from memhub.store.pg_memories import SPACE_LOCK_ID

__all__ = [
    "EmbeddingSpace",
    "PendingRow",
    "build_index",
    "count_pending",
    "pending_rows",
    "prepare",
    "recorded_space",
    "store_vectors",
    "swap",
]

_NEW = "embedding_new"
_NEW_INDEX = "memories_embedding_new_hnsw"
_INDEX = "memories_embedding_hnsw"

Embed = Callable[[list[str]], Awaitable[npt.NDArray[np.float32]]]


@dataclass(frozen=True)
class EmbeddingSpace:
    """The embedding model and dimension a database records (None: not recorded yet)."""

    model: str | None
    dimension: int | None


@dataclass(frozen=True)
class PendingRow:
    """A memory still to embed; ``hash`` detects a text changed since it was read."""

    id: UUID
    memory: str
    hash: str


async def recorded_space(conn: AsyncConn) -> EmbeddingSpace:
    """The model and dimension recorded in ``memhub_settings``."""
    cur = await conn.execute(
        "SELECT key, value FROM memhub_settings"
        " WHERE key IN ('embedding_model', 'embedding_dimension')"
    )
    values = {str(k): str(v) for k, v in await cur.fetchall()}
    dimension = values.get("embedding_dimension")
    return EmbeddingSpace(
        values.get("embedding_model"), None if dimension is None else int(dimension)
    )


async def _shadow_type(conn: AsyncConn) -> str | None:
    cur = await conn.execute(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
        " WHERE attrelid = 'memories'::regclass AND attname = %s AND NOT attisdropped",
        (_NEW,),
    )
    row = await cur.fetchone()
    return None if row is None else str(row[0])


async def prepare(conn: AsyncConn, model: str, dimension: int) -> bool:
    """Create the shadow column for ``model`` (or keep a half-filled one for it).

    Returns:
        True when an interrupted run for the same model is resumed.
    """
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SPACE_LOCK_ID,))
        cur = await conn.execute("SELECT value FROM memhub_settings WHERE key = 'reembed_model'")
        row = await cur.fetchone()
        target = None if row is None else str(row[0])
        shadow = await _shadow_type(conn)
        if shadow == f"vector({dimension})" and target == model:
            return True
        await conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(_NEW_INDEX)))
        await conn.execute(
            sql.SQL("ALTER TABLE memories DROP COLUMN IF EXISTS {}").format(sql.Identifier(_NEW))
        )
        await conn.execute(
            sql.SQL("ALTER TABLE memories ADD COLUMN {} vector({})").format(
                sql.Identifier(_NEW), vector_type_modifier(dimension)
            )
        )
        await conn.execute(
            "DELETE FROM memhub_settings WHERE key IN ('reembed_model', 'reembed_started_at')"
        )
        await conn.execute(
            "INSERT INTO memhub_settings (key, value) VALUES"
            " ('reembed_model', %s), ('reembed_started_at', now()::text)",
            (model,),
        )
        return False


async def count_pending(conn: AsyncConn) -> int:
    """Memories without a new vector yet."""
    cur = await conn.execute(
        sql.SQL("SELECT count(*) FROM memories WHERE {} IS NULL").format(sql.Identifier(_NEW))
    )
    row = await cur.fetchone()
    return 0 if row is None else int(row[0])


async def pending_rows(conn: AsyncConn, after: UUID | None, limit: int) -> list[PendingRow]:
    """The next ``limit`` memories without a new vector, in id order after ``after``."""
    query = sql.SQL(
        "SELECT id, memory, hash FROM memories WHERE {new} IS NULL AND ({after}::uuid IS NULL"
        " OR id > {after}) ORDER BY id LIMIT {n}"
    ).format(new=sql.Identifier(_NEW), after=sql.Placeholder("after"), n=sql.Placeholder("n"))
    cur = await conn.execute(query, {"after": after, "n": limit})
    return [PendingRow(r[0], r[1], r[2]) for r in await cur.fetchall()]


async def store_vectors(
    conn: AsyncConn, rows: Sequence[PendingRow], vectors: npt.NDArray[np.float32]
) -> None:
    """Write new vectors, except where the text changed since it was read (re-read later)."""
    if not rows:
        return
    async with conn.cursor() as cur:
        await cur.executemany(
            sql.SQL("UPDATE memories SET {} = %s WHERE id = %s AND hash = %s").format(
                sql.Identifier(_NEW)
            ),
            [
                (np.asarray(v, dtype=np.float32), r.id, r.hash)
                for r, v in zip(rows, vectors, strict=True)
            ],
        )


async def build_index(conn: AsyncConn) -> None:
    """(Re)build the shadow column's HNSW index without blocking writers.

    ``conn`` must be in autocommit mode, outside a transaction; the statement timeout is
    lifted for the build (it can take minutes on a large table).
    """
    await conn.execute("SET statement_timeout = 0")
    try:
        await conn.execute(
            sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(_NEW_INDEX))
        )
        await conn.execute(
            sql.SQL(
                "CREATE INDEX CONCURRENTLY {} ON memories USING hnsw ({} vector_cosine_ops)"
            ).format(sql.Identifier(_NEW_INDEX), sql.Identifier(_NEW))
        )
    finally:
        await conn.execute("RESET statement_timeout")


async def swap(conn: AsyncConn, model: str, dimension: int, embed: Embed) -> int:
    """Catch up, then make the shadow column the embedding column, all in one transaction.

    Memories still without a new vector, or whose text changed after the run started, are
    embedded here under the table lock, so the swapped-in column is complete and current.

    Returns:
        How many memories the catch-up embedded.
    """
    await conn.execute("SET statement_timeout = 0")
    try:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SPACE_LOCK_ID,))
            await conn.execute("LOCK TABLE memories IN ACCESS EXCLUSIVE MODE")
            caught_up = await _catch_up(conn, embed)
            await conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(_INDEX)))
            await conn.execute("ALTER TABLE memories DROP COLUMN IF EXISTS embedding")
            await conn.execute(
                sql.SQL("ALTER TABLE memories RENAME COLUMN {} TO embedding").format(
                    sql.Identifier(_NEW)
                )
            )
            await conn.execute(
                sql.SQL("ALTER INDEX {} RENAME TO {}").format(
                    sql.Identifier(_NEW_INDEX), sql.Identifier(_INDEX)
                )
            )
            await conn.execute(
                "DELETE FROM memhub_settings WHERE key IN ('embedding_model',"
                " 'embedding_dimension', 'reembed_model', 'reembed_started_at')"
            )
            await conn.execute(
                "INSERT INTO memhub_settings (key, value) VALUES"
                " ('embedding_model', %s), ('embedding_dimension', %s)",
                (model, str(dimension)),
            )
            return caught_up
    finally:
        await conn.execute("RESET statement_timeout")


async def _catch_up(conn: AsyncConn, embed: Embed) -> int:
    query = sql.SQL(
        "SELECT id, memory, hash FROM memories WHERE {new} IS NULL OR updated_at >= ("
        " SELECT value::timestamptz FROM memhub_settings WHERE key = 'reembed_started_at')"
    ).format(new=sql.Identifier(_NEW))
    cur = await conn.execute(query)
    rows = [PendingRow(r[0], r[1], r[2]) for r in await cur.fetchall()]
    for start in range(0, len(rows), 256):
        chunk = rows[start : start + 256]
        await store_vectors(conn, chunk, await embed([r.memory for r in chunk]))
    return len(rows)
