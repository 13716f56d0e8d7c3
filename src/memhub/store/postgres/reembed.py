"""SQL of ``memhub reembed``: fill a shadow vector column in batches, then swap it in.

The new vectors go to ``embedding_new`` (its own dimension) while the old column keeps
serving, and a trigger clears a row's new vector when its text changes; the HNSW index is
built concurrently; what changed meanwhile is re-embedded outside any lock, and one short
transaction replaces the column and its index. An interrupted run resumes (same model).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from uuid import UUID

import numpy as np
from psycopg import sql

from memhub.store.postgres.bind import vector_type_modifier
from memhub.store.postgres.database import AsyncConn
from memhub.store.postgres.memories import passage_rows

# Shared with ensure_embedding_space: an engine opening during the swap waits for it, then
# reads the new model. The constant is private to postgres.memories; it must be the same lock.
from memhub.store.postgres.space import SPACE_LOCK_ID
from memhub.store.protocol import Embed
from memhub.store.records import EmbeddedText, EmbeddingSpace

__all__ = [
    "PendingRow",
    "build_index",
    "catch_up",
    "count_memories",
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
_SWAP_ROUNDS = 5  # catch-up rounds before the last one holds writers back
# The new model's passages (migration 0026's table again), renamed into place by the swap.
_NEW_PASSAGES = "memory_passages_new"
_NEW_PASSAGES_INDEX = "memory_passages_new_hnsw"
_CREATE_PASSAGES = sql.SQL(
    "CREATE TABLE IF NOT EXISTS memory_passages_new ("
    " memory_id UUID NOT NULL, ordinal INTEGER NOT NULL CHECK (ordinal >= 0),"
    " start_char INTEGER NOT NULL CHECK (start_char >= 0),"
    " end_char INTEGER NOT NULL CHECK (end_char > start_char), embedding vector({}),"
    " PRIMARY KEY (memory_id, ordinal))"
)
_INSERT_PASSAGE = (
    "INSERT INTO memory_passages_new (memory_id, ordinal, start_char, end_char, embedding)"
    " SELECT m.id, %s, %s, %s, %s FROM memories m WHERE m.id = %s AND m.hash = %s"
    " ON CONFLICT (memory_id, ordinal) DO NOTHING"
)

# A changed text makes its new vector stale: clear it, so "still to embed" is exactly "NULL"
# (and its new passages, cut from the old text).
_INVALIDATE_FUNCTION = (
    "CREATE OR REPLACE FUNCTION memhub_reembed_invalidate() RETURNS trigger"
    " LANGUAGE plpgsql AS $$ BEGIN"
    " IF NEW.hash IS DISTINCT FROM OLD.hash THEN NEW.embedding_new := NULL;"
    " DELETE FROM memory_passages_new WHERE memory_id = NEW.id; END IF;"
    " RETURN NEW; END $$"
)
# A deleted memory's new passages go with it, as its old ones do (migration 0026), so the
# swap keeps no vector of an erased text; a TRUNCATE (reset) takes them all.
_REMOVED_FUNCTION = (
    "CREATE OR REPLACE FUNCTION memhub_reembed_removed() RETURNS trigger"
    " LANGUAGE plpgsql AS $$ BEGIN"
    " IF TG_OP = 'TRUNCATE' THEN TRUNCATE memory_passages_new;"
    " ELSE DELETE FROM memory_passages_new p USING removed r WHERE p.memory_id = r.id; END IF;"
    " RETURN NULL; END $$"
)
# name -> how it fires; every one is dropped by the swap
_TRIGGERS = {
    "memhub_reembed_invalidate": "BEFORE UPDATE ON memories FOR EACH ROW"
    " EXECUTE FUNCTION memhub_reembed_invalidate()",
    "memhub_reembed_removed": "AFTER DELETE ON memories REFERENCING OLD TABLE AS removed"
    " FOR EACH STATEMENT EXECUTE FUNCTION memhub_reembed_removed()",
    "memhub_reembed_truncated": "AFTER TRUNCATE ON memories"
    " FOR EACH STATEMENT EXECUTE FUNCTION memhub_reembed_removed()",
}


async def _create_triggers(conn: AsyncConn) -> None:
    await conn.execute(_INVALIDATE_FUNCTION)
    await conn.execute(_REMOVED_FUNCTION)
    await _drop_triggers(conn)
    for name, fires in _TRIGGERS.items():
        await conn.execute(
            sql.SQL("CREATE TRIGGER {} ").format(sql.Identifier(name)) + sql.SQL(fires)
        )


async def _drop_triggers(conn: AsyncConn) -> None:
    for name in _TRIGGERS:
        await conn.execute(
            sql.SQL("DROP TRIGGER IF EXISTS {} ON memories").format(sql.Identifier(name))
        )


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
            # (a run begun by an older memhub has neither the passages nor their triggers)
            await conn.execute(_CREATE_PASSAGES.format(vector_type_modifier(dimension)))
            await _create_triggers(conn)
            return True
        await conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(_NEW_INDEX)))
        await conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(_NEW_PASSAGES)))
        await conn.execute(_CREATE_PASSAGES.format(vector_type_modifier(dimension)))
        await conn.execute(
            sql.SQL("ALTER TABLE memories DROP COLUMN IF EXISTS {}").format(sql.Identifier(_NEW))
        )
        await conn.execute(
            sql.SQL("ALTER TABLE memories ADD COLUMN {} vector({})").format(
                sql.Identifier(_NEW), vector_type_modifier(dimension)
            )
        )
        await _create_triggers(conn)
        await conn.execute(
            "DELETE FROM memhub_settings WHERE key IN ('reembed_model', 'reembed_started_at')"
        )
        await conn.execute(
            "INSERT INTO memhub_settings (key, value) VALUES"
            " ('reembed_model', %s), ('reembed_started_at', now()::text)",
            (model,),
        )
        return False


async def count_memories(conn: AsyncConn) -> int:
    """Every memory of the database, current or superseded."""
    cur = await conn.execute("SELECT count(*) FROM memories")
    row = await cur.fetchone()
    return 0 if row is None else int(row[0])


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
    conn: AsyncConn, rows: Sequence[PendingRow], embedded: Sequence[EmbeddedText]
) -> None:
    """Write new vectors (and the passages of long rows), paired with ``rows``, except where
    the text changed since it was read (re-read later).

    One transaction (nothing slow in it: the vectors are already made): a row with its new
    vector is no longer pending, so one stored without its passages would keep none.
    """
    if not rows:
        return
    pairs = list(zip(rows, embedded, strict=True))
    async with conn.transaction(), conn.cursor() as cur:
        await cur.executemany(
            sql.SQL("UPDATE memories SET {} = %s WHERE id = %s AND hash = %s").format(
                sql.Identifier(_NEW)
            ),
            [(np.asarray(e.vector, dtype=np.float32), r.id, r.hash) for r, e in pairs],
        )
        cut = [row for r, e in pairs for row in passage_rows(r.id, r.hash, e.passages)]
        if cut:
            await cur.executemany(_INSERT_PASSAGE, cut)


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
        await conn.execute(
            sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(
                sql.Identifier(_NEW_PASSAGES_INDEX)
            )
        )
        await conn.execute(
            sql.SQL(
                "CREATE INDEX CONCURRENTLY {} ON memory_passages_new"
                " USING hnsw (embedding vector_cosine_ops)"
            ).format(sql.Identifier(_NEW_PASSAGES_INDEX))
        )
    finally:
        await conn.execute("RESET statement_timeout")


class _WritesArrived(Exception):
    """Rows became stale between the catch-up and the lock: catch up again, unlocked."""


async def catch_up(
    conn: AsyncConn,
    embed: Embed,
    batch: int = 256,
    on_batch: Callable[[int], None] | None = None,
) -> int:
    """Embed, batch by batch and with no transaction open, every memory still without a new
    vector (one pass in id order; rows arriving behind it wait for the next pass).

    ``on_batch`` is told the running count after each batch (a progress line).
    """
    after: UUID | None = None
    done = 0
    while rows := await pending_rows(conn, after, batch):
        await store_vectors(conn, rows, await embed([r.memory for r in rows]))
        after = rows[-1].id
        done += len(rows)
        if on_batch is not None:
            on_batch(done)
    return done


async def swap(conn: AsyncConn, model: str, dimension: int, embed: Embed) -> int:
    """Catch up outside any lock, then make the shadow column the embedding column.

    The swap is one short transaction under ACCESS EXCLUSIVE that embeds nothing: when rows
    turn out stale under the lock, it rolls back and catches up again. Only the last of
    ``_SWAP_ROUNDS`` rounds embeds in the transaction, the few rows left, holding writers back
    (SHARE ROW EXCLUSIVE) while reads go on.

    Returns:
        How many memories the catch-up embedded.
    """
    caught_up = 0
    await conn.execute("SET statement_timeout = 0")
    try:
        for round_ in range(_SWAP_ROUNDS):
            caught_up += await catch_up(conn, embed)
            try:
                async with conn.transaction():
                    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SPACE_LOCK_ID,))
                    if round_ == _SWAP_ROUNDS - 1:
                        await conn.execute("LOCK TABLE memories IN SHARE ROW EXCLUSIVE MODE")
                        caught_up += await catch_up(conn, embed)
                    await conn.execute("LOCK TABLE memories IN ACCESS EXCLUSIVE MODE")
                    if await count_pending(conn):
                        raise _WritesArrived
                    await _replace_column(conn, model, dimension)
                    return caught_up
            except _WritesArrived:
                continue
        raise AssertionError("the last round holds writers back, so it always swaps")
    finally:
        await conn.execute("RESET statement_timeout")


async def _replace_column(conn: AsyncConn, model: str, dimension: int) -> None:
    await _drop_triggers(conn)
    await conn.execute("DROP FUNCTION IF EXISTS memhub_reembed_invalidate()")
    await conn.execute("DROP FUNCTION IF EXISTS memhub_reembed_removed()")
    await conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(_INDEX)))
    await conn.execute("ALTER TABLE memories DROP COLUMN IF EXISTS embedding")
    await conn.execute(
        sql.SQL("ALTER TABLE memories RENAME COLUMN {} TO embedding").format(sql.Identifier(_NEW))
    )
    await conn.execute(
        sql.SQL("ALTER INDEX {} RENAME TO {}").format(
            sql.Identifier(_NEW_INDEX), sql.Identifier(_INDEX)
        )
    )
    # The new model's passages replace the old ones (the triggers of migration 0026 name
    # the table, so they keep it by its name).
    await conn.execute("DROP TABLE IF EXISTS memory_passages")
    await conn.execute("ALTER TABLE memory_passages_new RENAME TO memory_passages")
    await conn.execute("ALTER INDEX memory_passages_new_pkey RENAME TO memory_passages_pkey")
    await conn.execute(
        sql.SQL("ALTER INDEX {} RENAME TO memory_passages_embedding_hnsw").format(
            sql.Identifier(_NEW_PASSAGES_INDEX)
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
