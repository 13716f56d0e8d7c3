"""``store/postgres/schema.sql`` is the schema a freshly migrated database has (tools/schema.py)."""

from __future__ import annotations

import difflib
import importlib.util
from pathlib import Path
from types import ModuleType

import psycopg

from memhub.store.postgres.migrate import available_migrations

TOOL = Path(__file__).parents[2] / "tools/schema.py"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("memhub_tools_schema", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_committed_schema_is_what_the_migrations_produce(db_url: str) -> None:
    tool = _tool()
    generated = await tool.migrate_and_render(db_url)
    committed = tool.TARGET.read_text("utf-8")
    diff = "".join(
        difflib.unified_diff(
            committed.splitlines(keepends=True),
            generated.splitlines(keepends=True),
            fromfile=tool.NAME,
            tofile="a freshly migrated database",
        )
    )
    assert generated == committed, f"{tool.NAME} is stale; run: {tool.COMMAND}\n{diff}"


async def test_a_schema_change_shows_in_the_text_and_the_file_is_no_migration(
    db_url: str,
) -> None:
    tool = _tool()
    before = await tool.migrate_and_render(db_url)
    assert "embedding vector(384)" in before and "memories_embedding_hnsw" in before
    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
        await conn.execute("CREATE INDEX planted_role ON memories (role)")
    after = await tool.migrate_and_render(db_url)
    assert after != before
    assert "CREATE INDEX planted_role ON public.memories USING btree (role);" in after
    assert all("schema" not in m.version for m in available_migrations())
