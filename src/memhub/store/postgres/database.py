"""One async connection pool per URL, pool settings and event loop, opened after migrations.

Connections are checked on checkout, so a server that restarted costs one reconnect rather
than one failed call; every wait is bounded by the configured connect timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import psycopg
from pgvector.psycopg import register_vector_async
from psycopg import sql
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool

from memhub._loops import LoopShared
from memhub.config import MemhubSettings
from memhub.errors import ConfigurationError
from memhub.store.postgres.embedded import (
    embedded_database_url,
    embedded_postmaster,
    embedded_server_died,
    ensure_embedded_running,
)
from memhub.store.postgres.errors import translate_errors
from memhub.store.postgres.migrate import apply_migrations, available_migrations
from memhub.store.postgres.space_names import space_migrations, space_schema

__all__ = ["AsyncConn", "Database", "resolve_database_url"]

log = logging.getLogger(__name__)

AsyncConn = psycopg.AsyncConnection[TupleRow]


# A connection used this recently is trusted without a round trip: checking on every checkout
# cost ~0.3 ms of the hot path, while a server that just went away fails the call either way.
_FRESH_SECONDS = 2.0
_WATCH_SECONDS = 0.5  # how often a process using the embedded server checks its postmaster
_last_returned: weakref.WeakKeyDictionary[AsyncConn, float] = weakref.WeakKeyDictionary()


async def _check_stale(conn: AsyncConn) -> None:
    if time.monotonic() - _last_returned.get(conn, float("-inf")) > _FRESH_SECONDS:
        await AsyncConnectionPool.check_connection(conn)


async def _configure_pooled_connection(conn: AsyncConn) -> None:
    # Behind PgBouncer in transaction mode, a session setting lands on whichever server
    # connection ran it; TimeZone is one of the few PgBouncer tracks and re-applies per
    # client. hnsw.iterative_scan is set per search instead (PostgresStore.vector_candidates).
    await register_vector_async(conn)
    await conn.execute("SET timezone TO 'UTC'")


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
    migrate: bool = True  # False for read replicas: they replay the primary's schema
    _open_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _watchdog: asyncio.Task[None] | None = None
    _postmaster: int | None = None  # the embedded postmaster the pool's connections are on
    _drained: int | None = None  # one in shutdown, whose connections the pool let go of
    # Where pgvector's types and operators live: a named space's search path holds its own
    # schema, then this one (read while migrating; replicas assume the usual one).
    _extension_schema: str = "public"

    @property
    def space_schema(self) -> str | None:
        """The schema of the settings' named space; None for the default space."""
        return None if self.settings.space is None else space_schema(self.settings.space)

    async def open(self) -> None:
        """Migrate, then open the pool. Idempotent."""
        async with self._open_lock:
            if self.pool is not None:
                return
            with translate_errors("connecting to PostgreSQL"):
                if self.migrate:
                    await self._migrate()
                self.pool = await self._new_pool()
                self._watchdog = asyncio.create_task(self._watch())

    async def _new_pool(self) -> AsyncConnectionPool[AsyncConn]:
        pool: AsyncConnectionPool[AsyncConn] = AsyncConnectionPool(
            self.url,
            min_size=self.settings.pool_min_size,
            max_size=self.settings.pool_max_size,
            timeout=self.settings.connect_timeout,
            kwargs=self._connection_kwargs(),
            configure=(
                _configure_pooled_connection if self.settings.pgbouncer else _configure_connection
            ),
            check=_check_stale,
            open=False,
            name="memhub",
        )
        await pool.open(wait=False)
        return pool

    async def _migrate(self) -> None:
        # Pending migrations take a session-level advisory lock, which transaction pooling
        # would hand to another client: behind PgBouncer they run on the direct URL, or are
        # only checked.
        url = self.settings.direct_database_url if self.settings.pgbouncer else self.url
        conn = await psycopg.AsyncConnection.connect(
            url or self.url,
            autocommit=True,
            connect_timeout=max(1, int(self.settings.connect_timeout)),
            prepare_threshold=None,
        )
        async with conn:
            if url is not None:
                await apply_migrations(conn)
                if self.space_schema is not None:
                    await self._migrate_space(conn, self.space_schema)
                return
            done: set[str] = set()
            cur = await conn.execute("SELECT to_regclass('memhub_schema_migrations')")
            if (await cur.fetchone()) != (None,):
                cur = await conn.execute("SELECT version FROM memhub_schema_migrations")
                done = {str(row[0]) for row in await cur.fetchall()}
        missing = [m.version for m in available_migrations() if m.version not in done]
        if missing:
            raise ConfigurationError(
                f"the database lacks migrations {', '.join(missing)}; with MEMHUB_PGBOUNCER, "
                "set MEMHUB_DIRECT_DATABASE_URL to PostgreSQL itself so memhub can apply them"
            )

    async def _migrate_space(self, conn: psycopg.AsyncConnection[object], schema: str) -> None:
        """Create the named space's schema and bring its tables up to date (the default
        space's first: its migrations create the extensions both use)."""
        cur = await conn.execute(
            "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector'"
        )
        row = await cur.fetchone()
        self._extension_schema = str(row[0]) if row is not None else "public"  # type: ignore[index]
        name = sql.Identifier(schema)
        cur = await conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
        if await cur.fetchone() is None:  # (CREATE SCHEMA asks for CREATE even if it exists)
            # IF NOT EXISTS still fails when a concurrent opener creates the same name first.
            with contextlib.suppress(psycopg.errors.UniqueViolation):
                await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(name))
        with contextlib.suppress(psycopg.errors.UniqueViolation):
            await conn.execute(  # first, or the unqualified name would find the default's
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {}.memhub_schema_migrations ("
                    " version TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
                ).format(name)
            )
        await conn.execute(
            sql.SQL("SET search_path TO {}, {}").format(
                name, sql.Identifier(self._extension_schema)
            )
        )
        await apply_migrations(conn, space_migrations(schema, available_migrations()))

    def _search_path(self, schema: str) -> str:
        return f"{schema},{self._extension_schema}"

    def _connection_kwargs(self) -> dict[str, object]:
        kwargs: dict[str, object] = {
            "autocommit": True,
            "connect_timeout": max(1, int(self.settings.connect_timeout)),
        }
        if self.settings.pgbouncer:
            # PgBouncer 1.18 forwards no protocol-level prepared statements and refuses the
            # `options` startup parameter; statement_timeout and
            # idle_in_transaction_session_timeout then belong to the role (ALTER ROLE ... SET
            # ...), see docs/scaling.md.
            kwargs["prepare_threshold"] = None
            return kwargs
        # UTC sessions: ARKOS's TIMESTAMP column then holds UTC wall time whoever writes it.
        options = "-c timezone=UTC"
        if self.settings.statement_timeout_ms:
            options += f" -c statement_timeout={self.settings.statement_timeout_ms}"
        if self.settings.idle_in_transaction_timeout_ms:
            # memhub holds no transaction across slow work, so one idle this long belongs to a
            # process that stopped mid-way (tests/ops/test_topology.py froze a worker there and
            # its row locks kept the other workers from the queue)
            timeout = self.settings.idle_in_transaction_timeout_ms
            options += f" -c idle_in_transaction_session_timeout={timeout}"
        if self.space_schema is not None:
            options += f" -c search_path={self._search_path(self.space_schema)}"
        kwargs["options"] = options
        return kwargs

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConn]:
        """A pooled connection in autocommit mode; use ``conn.transaction()`` for atomic work."""
        if self.pool is None:
            await self.open()
        assert self.pool is not None
        if self.settings.database_url is None and embedded_server_died(self.settings.data_dir):
            try:
                await self._heal_embedded(self.pool)
            except Exception:  # the checkout below then fails as StoreUnavailable (503)
                log.exception("restarting the embedded PostgreSQL failed")
        async with self.pool.connection() as conn:
            try:
                yield conn
            finally:
                # Stamped here, not in the pool's reset hook: a reset hook returns every
                # connection through a pool worker task, a queue hop per call.
                _last_returned[conn] = time.monotonic()

    async def _watch(self) -> None:
        # Calls waiting for a connection would only find a dead embedded postmaster after the
        # pool's timeout; this look (one syscall) notices it within _WATCH_SECONDS.
        try:
            while True:
                await asyncio.sleep(_WATCH_SECONDS)
                pool = self.pool
                if pool is None or self.settings.database_url is not None:
                    continue
                try:
                    if embedded_server_died(self.settings.data_dir):
                        await self._heal_embedded(pool)
                        continue
                    postmaster, stopping = embedded_postmaster(self.settings.data_dir)
                    if postmaster is None:
                        continue
                    if self._postmaster is None:
                        self._postmaster = postmaster
                    if postmaster != self._postmaster or (stopping and self._drained != postmaster):
                        self._drained = postmaster if stopping else None
                        self._postmaster = postmaster
                        await self._swap_pool(pool)
                except Exception:  # a background task: log, keep watching
                    log.exception("restarting the embedded PostgreSQL failed")
        except asyncio.CancelledError:
            # Cancelled by close() (the pool is gone already), or by asyncio.run() ending
            # while this pool is still open. psycopg_pool's workers swallow a cancellation
            # that lands while they connect and would then wait for work forever, so the
            # loop could never finish shutting down: closing the pool stops them.
            pool, self.pool = self.pool, None
            if pool is not None:
                await pool.close(timeout=1.0)
            raise

    async def _heal_embedded(self, pool: AsyncConnectionPool[AsyncConn]) -> None:
        # The embedded postmaster crashed: restart it (bounded, logged), then swap in a new
        # pool, so this server heals without a restart of its own. The old pool's reconnect
        # attempts back off exponentially (1, 2, 4, 8 s...) and would keep failing calls for
        # seconds after the server is back; its waiting calls fail as they would have anyway.
        await asyncio.to_thread(ensure_embedded_running, self.settings.data_dir)
        if embedded_server_died(self.settings.data_dir):
            return
        await self._swap_pool(pool)

    async def _swap_pool(self, pool: AsyncConnectionPool[AsyncConn]) -> None:
        # A new pool connects at once; the old one's connections are closed (a server in
        # smart shutdown waits for them), its waiting calls fail as they would have anyway.
        async with self._open_lock:
            if self.pool is not pool:  # another call swapped it already
                return
            self.pool = await self._new_pool()
        await pool.close(timeout=1.0)

    async def close(self) -> None:
        """Close the pool; the object can be opened again later."""
        pool, self.pool = self.pool, None  # first: the cancelled watchdog must not close it too
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.cancel()
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
        settings.pgbouncer,
        settings.direct_database_url,
        settings.space,
    )


async def acquire_database(settings: MemhubSettings) -> Database:
    """The process's shared :class:`Database` for these settings on the running loop."""
    if settings.space is not None and settings.pgbouncer:
        raise ConfigurationError(
            "MEMHUB_SPACE needs a session search_path, which PgBouncer in transaction mode "
            "does not keep: point MEMHUB_DATABASE_URL at PostgreSQL itself for a named space"
        )
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
