"""memhub through PgBouncer in transaction mode: repeated statements on shared server
connections, and migrations that need PostgreSQL itself (skipped without pgbouncer)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from memhub import AsyncMemory, ConfigurationError, MemhubSettings
from tests.fix_postgres import database_url


async def test_hot_path_repeats_on_shared_server_connections(
    settings: MemhubSettings, pgbouncer_url: Callable[[str], str]
) -> None:
    assert settings.database_url is not None
    through = settings.model_copy(
        update={"database_url": pgbouncer_url(settings.database_url), "pgbouncer": True}
    )
    async with AsyncMemory(settings=through) as memory:
        for n in range(12):
            await memory.add(f"fact {n}: the locker code is {n * 111}", user_id="u", infer=False)
        await memory.add("the boat is called Ariel", user_id="u", infer=False, wait=True)

        async def searches(worker: int) -> None:
            # Far past psycopg's prepare threshold (5) on each client connection.
            for n in range(15):
                found = await memory.search(f"locker code {worker}{n}", user_id="u", limit=3)
                assert len(found["results"]) == 3

        await asyncio.gather(*(searches(w) for w in range(4)))
        found = await memory.search("what is the boat called", user_id="u", limit=1)
        assert found["results"][0]["memory"] == "the boat is called Ariel"


@pytest.fixture
def empty_database(pg_admin_url: str) -> Iterator[str]:
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute("CREATE DATABASE memhub_ops_empty")
    yield database_url(pg_admin_url, "memhub_ops_empty")
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier("memhub_ops_empty")
            )
        )


async def test_migrations_run_on_the_direct_url_only(
    empty_database: str, pgbouncer_url: Callable[[str], str], tmp_path: Path
) -> None:
    through = MemhubSettings(
        embedder="minilm",
        database_url=pgbouncer_url(empty_database),
        pgbouncer=True,
        data_dir=tmp_path,
        connect_timeout=3.0,
    )
    with pytest.raises(ConfigurationError, match="MEMHUB_DIRECT_DATABASE_URL"):
        async with AsyncMemory(settings=through) as memory:
            await memory.add("never stored", user_id="u", infer=False)

    direct = through.model_copy(update={"direct_database_url": empty_database})
    async with AsyncMemory(settings=direct) as memory:
        await memory.add("stored after migrating", user_id="u", infer=False, wait=True)
        found = await memory.search("migrating", user_id="u")
    assert [hit["memory"] for hit in found["results"]] == ["stored after migrating"]
