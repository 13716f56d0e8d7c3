"""One async connection pool per URL, pool settings and event loop, opened after migrations.

Connections are checked on checkout, so a server that restarted costs one reconnect rather
than one failed call; every wait is bounded by the configured connect timeout.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import psycopg
from pgvector.psycopg import register_vector_async
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool

from memhub._loops import LoopShared
from memhub.config import MemhubSettings
from memhub.errors import ConfigurationError
from memhub.store.embedded import embedded_database_url
from memhub.store.errors import translate_errors
from memhub.store.migrate import apply_migrations

__all__ = ["AsyncConn", "Database", "resolve_database_url"]

log = logging.getLogger(__name__)

AsyncConn = psycopg.AsyncConnection[TupleRow]


# A connection used this recently is trusted without a round trip: checking on every checkout
# cost ~0.3 ms of the hot path, while a server that just went away fails the call either way.
_FRESH_SECONDS = 2.0
_last_returned: weakref.WeakKeyDictionary[AsyncConn, float] = weakref.WeakKeyDictionary()


async def _stamp_returned(conn: AsyncConn) -> None:
    _last_returned[conn] = time.monotonic()


async def _check_stale(conn: AsyncConn) -> None:
    if time.monotonic() - _last_returned.get(conn, float("-inf")) > _FRESH_SECONDS:
        await AsyncConnectionPool.check_connection(conn)


async def _configure_connection(conn: AsyncConn) -> None:
    await register_vector_async(conn)
    # A scoped HNSW scan stops after ef_search candidates and filters afterwards, silently
    # returning fewer hits than asked when many users share the table; iterative scans
    # (pgvector >= 0.8) keep scanning until enough rows pass the filter.
    await conn.execute("SET hnsw.iterative_scan = relaxed_order")


def resolve_database_url(settings: MemhubSettings) -> str:
    """The configured URL, or the embedded server's (started on demand)."""
    url = settings.database_url
    if url is None:
        return embedded_database_url(settings.data_dir, settings.database_name)
    if not url.startswith(("postgresql://", "postgres://")) and "=" not in url:
        raise ConfigurationError(
            f"database URL {url!r} is not a PostgreSQL URL; expected postgresql://user:pass@host/db"
        )
    return url


@dataclass
class Database:
    """A migrated database and its connection pool, shared by every memhub object using it."""

    url: str
    settings: MemhubSettings
    pool: AsyncConnectionPool[AsyncConn] | None = None
    _open_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def open(self) -> None:
        """Migrate, then open the pool. Idempotent."""
        async with self._open_lock:
            if self.pool is not None:
                return
            with translate_errors("connecting to PostgreSQL"):
                conn = await psycopg.AsyncConnection.connect(
                    self.url,
                    autocommit=True,
                    connect_timeout=max(1, int(self.settings.connect_timeout)),
                )
                async with conn:
                    await apply_migrations(conn)
                pool: AsyncConnectionPool[AsyncConn] = AsyncConnectionPool(
                    self.url,
                    min_size=self.settings.pool_min_size,
                    max_size=self.settings.pool_max_size,
                    timeout=self.settings.connect_timeout,
                    kwargs=self._connection_kwargs(),
                    configure=_configure_connection,
                    check=_check_stale,
                    reset=_stamp_returned,
                    open=False,
                    name="memhub",
                )
                await pool.open(wait=False)
                self.pool = pool

    def _connection_kwargs(self) -> dict[str, object]:
        kwargs: dict[str, object] = {
            "autocommit": True,
            "connect_timeout": max(1, int(self.settings.connect_timeout)),
        }
        # UTC sessions: ARKOS's TIMESTAMP column then holds UTC wall time whoever writes it.
        options = "-c timezone=UTC"
        if self.settings.statement_timeout_ms:
            options += f" -c statement_timeout={self.settings.statement_timeout_ms}"
        kwargs["options"] = options
        return kwargs

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConn]:
        """A pooled connection in autocommit mode; use ``conn.transaction()`` for atomic work."""
        if self.pool is None:
            await self.open()
        assert self.pool is not None
        async with self.pool.connection() as conn:
            yield conn

    async def close(self) -> None:
        """Close the pool; the object can be opened again later."""
        pool, self.pool = self.pool, None
        if pool is not None:
            await pool.close()


_databases: LoopShared[Database] = LoopShared()


def _pool_key(url: str, settings: MemhubSettings) -> tuple[object, ...]:
    """What makes two pools differ: openers agreeing on all of it share one pool."""
    return (
        url,
        settings.pool_min_size,
        settings.pool_max_size,
        settings.connect_timeout,
        settings.statement_timeout_ms,
    )


async def acquire_database(settings: MemhubSettings) -> Database:
    """The process's shared :class:`Database` for these settings on the running loop."""
    url = await asyncio.to_thread(resolve_database_url, settings)

    async def create() -> Database:
        return Database(url=url, settings=settings)

    database = await _databases.acquire(_pool_key(url, settings), create)
    try:
        await database.open()
    except BaseException:
        await release_database(database)
        raise
    return database


async def release_database(database: Database) -> None:
    """Drop one user of ``database``; the last one closes its pool."""
    if await _databases.release(database):
        await database.close()


async def close_all_databases() -> None:
    """Close every pool opened on the running loop (used at interpreter exit)."""
    for database in _databases.take_all():
        await database.close()
