"""A named embedding space is a schema of the database holding memhub's tables again.

Creating one runs every migration in its schema: the default space's tables, indexes and
functions stay exactly as they were (a migration's ``DROP INDEX IF EXISTS`` must not reach
them), and the space gets the same structure with its own ``vector(N)`` and HNSW index.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import psycopg
from psycopg import sql

from memhub.config import MemhubSettings
from memhub.store.postgres.migrate import Migration
from memhub.store.postgres.space_names import space_migrations, space_schema
from memhub.store.postgres.store import PostgresStore

TOOL = Path(__file__).parents[2] / "tools/schema.py"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("memhub_tools_schema_spaces", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_a_space_has_the_default_spaces_structure_and_leaves_it_alone(
    db_url: str, settings: MemhubSettings
) -> None:
    tool = _tool()
    default_before = await tool.migrate_and_render(db_url)
    store = await PostgresStore.open(settings.model_copy(update={"space": "notes"}))
    try:
        await store.ensure_embedding_space(tool.MODEL_NAME, tool.DIMENSION)
    finally:
        await store.aclose()
    schema = space_schema("notes")
    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
        assert await tool.render(conn) == default_before
        await conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema)))
        in_space = await tool.render(conn, schema)
    assert "embedding vector(384)" in in_space and "memories_embedding_hnsw" in in_space
    assert in_space.replace(f"{schema}.", "public.") == default_before


def test_space_names_are_distinct_readable_identifiers() -> None:
    names = ["test", "Test", "my collection", "langgraph:text-embedding-3-small", "é"]
    schemas = [space_schema(name) for name in names]
    assert len(set(schemas)) == len(names)
    assert all(s.startswith("memhub_space_") and len(s) <= 63 for s in schemas)
    assert all(s.replace("_", "").isalnum() and s.isascii() for s in schemas)
    assert space_schema("langgraph:text-embedding-3-small").startswith(
        "memhub_space_langgraph_text_embedding_3_small_"
    )


def test_a_spaces_migrations_drop_only_its_own_indexes() -> None:
    migration = Migration("0001", "DROP INDEX CONCURRENTLY IF EXISTS memories_tsv;\nSELECT 1;")
    (moved,) = space_migrations("memhub_space_x", [migration])
    assert moved.sql == "DROP INDEX CONCURRENTLY IF EXISTS memhub_space_x.memories_tsv;\nSELECT 1;"
