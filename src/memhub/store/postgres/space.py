"""SQL for the embedding space: the vector column and HNSW index, created once per model."""

from __future__ import annotations

from psycopg import sql

from memhub.errors import ConfigurationError
from memhub.store.postgres.bind import vector_type_modifier
from memhub.store.postgres.database import AsyncConn

__all__ = ["SPACE_LOCK_ID", "ensure_embedding_space"]

SPACE_LOCK_ID = 0x6D656D68_7665  # "memhve": one creator of the embedding column at a time


async def ensure_embedding_space(conn: AsyncConn, model_name: str, dimension: int) -> None:
    """Create the embedding column and its HNSW index once; refuse another model later.

    Once recorded, this is one read and takes no lock (every engine open calls it).
    """
    if _check_space(await _recorded_space(conn), model_name, dimension):
        return
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SPACE_LOCK_ID,))
        if _check_space(await _recorded_space(conn), model_name, dimension):
            return
        await conn.execute(
            sql.SQL("ALTER TABLE memories ADD COLUMN IF NOT EXISTS embedding vector({})").format(
                vector_type_modifier(dimension)
            )
        )
        await conn.execute(
            "CREATE INDEX IF NOT EXISTS memories_embedding_hnsw"
            " ON memories USING hnsw (embedding vector_cosine_ops)"
        )
        await conn.execute(
            "INSERT INTO memhub_settings (key, value) VALUES"
            " ('embedding_model', %s), ('embedding_dimension', %s)",
            (model_name, str(dimension)),
        )


async def _recorded_space(conn: AsyncConn) -> dict[str, str]:
    cur = await conn.execute(
        "SELECT key, value FROM memhub_settings WHERE key IN"
        " ('embedding_model', 'embedding_dimension')"
    )
    return {str(k): str(v) for k, v in await cur.fetchall()}


def _check_space(recorded: dict[str, str], model_name: str, dimension: int) -> bool:
    """True when the database records this model; raises when it records another one."""
    if not recorded:
        return False
    if recorded.get("embedding_dimension") != str(dimension) or (
        recorded.get("embedding_model") != model_name
    ):
        raise ConfigurationError(
            f"this database holds {recorded.get('embedding_dimension')}-dimensional "
            f"vectors of {recorded.get('embedding_model')!r}, but the configured embedder "
            f"is {model_name!r} ({dimension} dimensions); configure the recorded model, "
            "or run `memhub reembed` to re-embed every memory with the new one"
        )
    return True
