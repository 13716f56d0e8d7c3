"""SQL for embedding spaces: the vector column and HNSW index, created once per space.

The default space is the database's own tables. A named space (``MEMHUB_SPACE``) is a schema
of the same database, ``memhub_space_<name>_<digest>``, holding memhub's tables again with its
own ``vector(N)`` column and HNSW index: its connections put that schema first on their
``search_path`` (store/postgres/database.py), so every statement of the store reads and
writes that space alone, and the default space's statements and indexes stay as they were.
"""

from __future__ import annotations

from psycopg import sql

from memhub.errors import ConfigurationError
from memhub.store.postgres.bind import vector_type_modifier
from memhub.store.postgres.database import AsyncConn
from memhub.store.postgres.space_names import SPACE_SCHEMA_PREFIX, space_migrations, space_schema

__all__ = [
    "SPACE_LOCK_ID",
    "SPACE_SCHEMA_PREFIX",
    "ensure_embedding_space",
    "space_migrations",
    "space_schema",
    "space_schemas",
]

SPACE_LOCK_ID = 0x6D656D68_7665  # "memhve": one creator of the embedding column at a time


#: What an erase deletes from (store/postgres/erase.py): a space is listed once it has all.
_ERASED_TABLES = (
    "memory_jobs",
    "memories",
    "memory_history",
    "memory_llm_usage",
    "conversation_context",
)


async def space_schemas(conn: AsyncConn) -> list[str]:
    """The schemas of the database's named spaces (those whose erased tables all exist: one
    being created by another process right now is not listed until it has them)."""
    cur = await conn.execute(
        "SELECT n.nspname FROM pg_namespace n JOIN pg_class c ON c.relnamespace = n.oid"
        " WHERE starts_with(n.nspname, %s) AND c.relname = ANY(%s)"
        " GROUP BY n.nspname HAVING count(*) = %s ORDER BY n.nspname",
        (SPACE_SCHEMA_PREFIX, list(_ERASED_TABLES), len(_ERASED_TABLES)),
    )
    return [str(row[0]) for row in await cur.fetchall()]


async def ensure_embedding_space(
    conn: AsyncConn, model_name: str, dimension: int, space: str | None = None
) -> None:
    """Create the embedding column and its HNSW index once; refuse another model later.

    ``space`` is the name of the connection's space (None: the default space), recorded
    with the model and named in the refusal. Once recorded, this is one read and takes no
    lock (every engine open calls it).
    """
    if _check_space(await _recorded_space(conn), model_name, dimension, space):
        return
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SPACE_LOCK_ID,))
        if _check_space(await _recorded_space(conn), model_name, dimension, space):
            return
        # the memories' vectors, and their passages' (migration 0026)
        for table in ("memories", "memory_passages"):
            await _add_vector_column(conn, table, dimension)
        await conn.execute(
            "INSERT INTO memhub_settings (key, value) VALUES"
            " ('embedding_model', %s), ('embedding_dimension', %s)",
            (model_name, str(dimension)),
        )
        if space is not None:
            await conn.execute(
                "INSERT INTO memhub_settings (key, value) VALUES ('space_name', %s)", (space,)
            )


async def _add_vector_column(conn: AsyncConn, table: str, dimension: int) -> None:
    """``table``'s vector column ``embedding`` and its HNSW index ``<table>_embedding_hnsw``."""
    await conn.execute(
        sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS embedding vector({})").format(
            sql.Identifier(table), vector_type_modifier(dimension)
        )
    )
    await conn.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding vector_cosine_ops)"
        ).format(sql.Identifier(f"{table}_embedding_hnsw"), sql.Identifier(table))
    )


async def _recorded_space(conn: AsyncConn) -> dict[str, str]:
    cur = await conn.execute(
        "SELECT key, value FROM memhub_settings WHERE key IN"
        " ('embedding_model', 'embedding_dimension')"
    )
    return {str(k): str(v) for k, v in await cur.fetchall()}


def _check_space(
    recorded: dict[str, str], model_name: str, dimension: int, space: str | None
) -> bool:
    """True when the space records this model; raises when it records another one."""
    if not recorded:
        return False
    if recorded.get("embedding_dimension") != str(dimension) or (
        recorded.get("embedding_model") != model_name
    ):
        where = "this database" if space is None else f"space {space!r} of this database"
        raise ConfigurationError(
            f"{where} holds {recorded.get('embedding_dimension')}-dimensional "
            f"vectors of {recorded.get('embedding_model')!r}, but the configured embedder "
            f"is {model_name!r} ({dimension} dimensions); configure the recorded model, "
            "run `memhub reembed` to re-embed every memory of it with the new one, or give "
            "the new embedder a space of its own (MEMHUB_SPACE, docs/embedders.md)"
        )
    return True
