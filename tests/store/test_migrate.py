"""Migrations: applied once, idempotent, safe when several processes start together."""

from __future__ import annotations

import asyncio

import psycopg

from memhub import AsyncMemory, MemhubSettings
from memhub.store.postgres.migrate import (
    MIGRATION_LOCK_ID,
    Migration,
    apply_migrations,
    available_migrations,
)
from memhub.store.postgres.space import SPACE_LOCK_ID


async def test_concurrent_migrators_apply_each_version_once(pg_admin_url: str) -> None:
    from psycopg import sql

    from tests.fix_postgres import database_url

    async with await psycopg.AsyncConnection.connect(pg_admin_url, autocommit=True) as admin:
        await admin.execute("DROP DATABASE IF EXISTS migrate_race WITH (FORCE)")
        await admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier("migrate_race")))
    url = database_url(pg_admin_url, "migrate_race")

    async def migrate() -> list[str]:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            return await apply_migrations(conn)

    results = await asyncio.gather(*(migrate() for _ in range(4)))
    versions = [m.version for m in available_migrations()]
    assert sorted(v for applied in results for v in applied) == sorted(versions)
    assert await migrate() == []  # nothing left to do
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        assert await cur.fetchone() is not None


async def test_an_up_to_date_database_opens_without_taking_a_lock(
    settings: MemhubSettings, aconn: psycopg.AsyncConnection[tuple[object, ...]]
) -> None:
    async with AsyncMemory(settings=settings) as memory:  # records the embedding space
        await memory.add("first", user_id="u", infer=False, wait=True)
    # Another process holds the migration and embedding-space locks: opening must not wait.
    await aconn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_ID,))
    await aconn.execute("SELECT pg_advisory_lock(%s)", (SPACE_LOCK_ID,))
    try:

        async def open_and_use() -> list[str]:
            async with AsyncMemory(settings=settings) as memory:
                await memory.add("second", user_id="u", infer=False, wait=True)
                listed = (await memory.get_all(user_id="u"))["results"]
                return sorted(str(item["memory"]) for item in listed)

        assert await asyncio.wait_for(open_and_use(), 30) == ["first", "second"]
    finally:
        await aconn.execute("SELECT pg_advisory_unlock_all()")


async def test_a_marked_migration_runs_outside_a_transaction(
    aconn: psycopg.AsyncConnection[tuple[object, ...]],
) -> None:
    marked = Migration(
        "9999_concurrent",
        "-- memhub: no-transaction\n"
        "-- an index on a big table, built without blocking writers;\n"
        "CREATE TABLE IF NOT EXISTS big (x int);\n"
        "DROP INDEX CONCURRENTLY IF EXISTS big_x;\n"
        "CREATE INDEX CONCURRENTLY big_x\n    ON big (x);  \n",
    )
    assert not marked.transactional
    assert marked.statements() == [
        "CREATE TABLE IF NOT EXISTS big (x int)",
        "DROP INDEX CONCURRENTLY IF EXISTS big_x",
        "CREATE INDEX CONCURRENTLY big_x\n    ON big (x)",
    ]
    assert all(m.transactional for m in available_migrations() if m.version < "0006")
    assert await apply_migrations(aconn, [marked]) == ["9999_concurrent"]
    assert await apply_migrations(aconn, [marked]) == []
    cur = await aconn.execute(
        "SELECT indisvalid FROM pg_index WHERE indexrelid = 'big_x'::regclass"
    )
    assert await cur.fetchone() == (True,)


async def test_old_turn_memories_read_as_episodes_after_migration_0025(
    settings: MemhubSettings, aconn: psycopg.AsyncConnection[tuple[object, ...]]
) -> None:
    """Rows an older memhub wrote read as episodes and facts like new ones after 0025.

    A turn memory from before migration 0011 (role in metadata), one an LLM-mode worker
    labelled memory_type 'turn', and a fact; the migration is run again over them.
    """
    rows = [
        ("00000000-0000-0000-0000-000000000001", "I live in Oslo.", '{"role": "user"}', None, None),
        ("00000000-0000-0000-0000-000000000002", "I like tea.", "{}", "turn", "user"),
        ("00000000-0000-0000-0000-000000000003", "Ada likes tea.", "{}", None, None),
    ]
    for row in rows:
        await aconn.execute(
            "INSERT INTO memories (id, user_id, memory, hash, metadata, memory_type, role)"
            " VALUES (%s, 'ada', %s, %s, %s::jsonb, %s, %s)",
            (row[0], row[1], row[1], row[2], row[3], row[4]),
        )
    (episodes,) = [m for m in available_migrations() if m.version == "0025_episodes"]
    assert await apply_migrations(aconn, [Migration("9025_episodes_again", episodes.sql)])
    async with AsyncMemory(settings=settings) as memory:
        listed = (await memory.get_all(user_id="ada"))["results"]
        shown = {(i["memory"], i["kind"], i.get("role"), i.get("memory_type")) for i in listed}
        facts = (await memory.get_all(user_id="ada", filters={"kind": "fact"}))["results"]
    assert shown == {
        ("I live in Oslo.", "episode", "user", None),
        ("I like tea.", "episode", "user", None),
        ("Ada likes tea.", "fact", None, None),
    }
    assert [f["memory"] for f in facts] == ["Ada likes tea."]
