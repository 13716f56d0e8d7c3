"""Fixtures for a real PostgreSQL + pgvector: the embedded server, started once per session.

Each test gets its own database, copied from a migrated template, so tests never see each
other's rows and migrations run once.
"""

from __future__ import annotations

import asyncio
import itertools
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from memhub.config import MemhubSettings
from memhub.store.postgres.embedded import embedded_database_url, stop_embedded_server
from memhub.store.postgres.migrate import apply_migrations

TEMPLATE = "memhub_test_template"
_counter = itertools.count()


@pytest.fixture(scope="session")
def pg_home() -> Iterator[Path]:
    """The data directory of the session's embedded server.

    Not under pytest's tmp_path: pytest prunes old run directories, and a concurrent pytest
    run would delete a live server's files from under it.
    """
    home = Path(tempfile.mkdtemp(prefix="memhub-test-"))
    yield home
    stop_embedded_server(home)
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(autouse=True)
def _close_sync_memories() -> Iterator[None]:
    """Close what sync ``Memory`` objects left open on the portal loop after each test."""
    yield
    from memhub._portal import run_sync
    from memhub.memory import services
    from memhub.store.postgres.database import close_all_databases

    async def close() -> None:
        # No caller of memhub closes every Services of a loop without finishing its queued
        # work (services.finish_all_services does that at exit): the suite alone needs this,
        # so it reaches the loop's registry itself rather than keep test-only code in src.
        for left_open in services._shared.take_all():
            await left_open.close()
        await close_all_databases()

    run_sync(close())


@pytest.fixture(scope="session")
def pg_admin_url(pg_home: Path) -> str:
    """A URL of the embedded server's ``postgres`` database, with the template migrated."""
    url = embedded_database_url(pg_home, "postgres")

    async def build_template() -> None:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(TEMPLATE))
            )
            await conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE)))
        async with await psycopg.AsyncConnection.connect(
            database_url(url, TEMPLATE), autocommit=True
        ) as conn:
            await apply_migrations(conn)

    asyncio.run(build_template())
    return url


def database_url(url: str, name: str) -> str:
    """``url`` pointing at database ``name`` instead (socket URLs keep their query)."""
    head, _, query = url.partition("?")
    base = head.rsplit("/", 1)[0]
    return f"{base}/{name}?{query}" if query else f"{base}/{name}"


@pytest.fixture
def db_url(pg_admin_url: str) -> Iterator[str]:
    """A fresh, migrated database for one test."""
    name = f"memhub_test_{next(_counter)}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
                sql.Identifier(name), sql.Identifier(TEMPLATE)
            )
        )
    yield database_url(pg_admin_url, name)
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> MemhubSettings:
    """Settings on the test's database.

    A connection (new, or from the pool) may take 30 s: beside eight CPU burners one took
    over 3 s (issue 40). Tests about failing fast on a database that is down set their own.
    """
    return MemhubSettings(
        database_url=db_url, data_dir=tmp_path, connect_timeout=30.0, embedder="minilm"
    )


@pytest.fixture
async def aconn(db_url: str) -> AsyncIterator[psycopg.AsyncConnection[tuple[object, ...]]]:
    """A plain autocommit connection to the test's database, for checking what was stored."""
    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
        yield conn
