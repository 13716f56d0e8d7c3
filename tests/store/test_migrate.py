"""Migrations: applied once, idempotent, safe when several processes start together."""

from __future__ import annotations

import asyncio

import psycopg

from memhub.store.migrate import apply_migrations, available_migrations


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
