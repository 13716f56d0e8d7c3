"""Reads on streaming replicas (``MEMHUB_READ_DATABASE_URL``), with read-your-writes.

After a write, the primary's WAL position is remembered per scope; a read of that scope uses a
replica only once it has replayed that position (waiting up to ``read_your_writes_wait``),
else the primary. The guarantee holds within one process; other processes' writes show up on
the replicas after their replication lag.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import psycopg

from memhub.config import MemhubSettings
from memhub.store.postgres.database import AsyncConn, Database
from memhub.store.records import Scope

__all__ = ["ReadRouter", "lsn_value"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_MAX_FENCES = 100_000  # scopes remembered; the oldest are forgotten (they read the primary)
_POLL_SECONDS = 0.01
_DOWN = 30.0  # seconds a failed replica is left alone
_ANY_SCOPE = ""  # the key of writes to anyone's data (reset, by-id calls without a scope)


def lsn_value(lsn: str) -> int:
    """PostgreSQL's ``X/Y`` WAL position as one comparable integer."""
    high, _, low = lsn.partition("/")
    return (int(high, 16) << 32) | int(low, 16)


def _key(scope: Scope | None) -> str:
    # Keyed by owner as the job queue is (user, else agent, else run): a write to a user's
    # agent-and-run scope fences every read of that user.
    if scope is None or scope.is_empty():
        return _ANY_SCOPE
    return str(scope.user_id or scope.agent_id or scope.run_id)


class ReadRouter:
    """Replica pools, and the WAL position each scope's reads must see."""

    def __init__(self, primary: Database, settings: MemhubSettings, urls: list[str]) -> None:
        self.primary = primary
        self.wait = settings.read_your_writes_wait
        self.replicas = [
            Database(url=url, settings=primary.settings, migrate=False) for url in urls
        ]
        self._turn = itertools.cycle(range(len(self.replicas)))
        self._fences: dict[str, int] = {}
        self._newest = 0
        # A replica that failed is skipped for a while: every read would otherwise wait out
        # its connect timeout before falling back to the primary.
        self._down_until = [0.0] * len(self.replicas)

    async def note_write(self, conn: AsyncConn, scope: Scope | None) -> None:
        """Remember the primary's WAL position after a write (or a wait) on ``scope``."""
        cur = await conn.execute("SELECT pg_current_wal_lsn()::text")
        row = await cur.fetchone()
        assert row is not None
        key = _key(scope)
        self._fences.pop(key, None)
        self._fences[key] = lsn_value(str(row[0]))
        self._newest = max(self._newest, self._fences[key])
        if len(self._fences) > _MAX_FENCES:
            del self._fences[next(iter(self._fences))]

    def _fence(self, scope: Scope | None) -> int:
        fence = self._fences.get(_ANY_SCOPE, 0)
        if scope is None or scope.is_empty():  # a read of anyone's data: the newest write
            return self._newest
        return max(fence, self._fences.get(_key(scope), 0))

    async def run(self, scope: Scope | None, work: Callable[[AsyncConn], Awaitable[T]]) -> T:
        """``work`` on a replica that has replayed ``scope``'s last write, else the primary.

        Reads are idempotent: one a replica fails (it went away mid-query) runs again on the
        primary.
        """
        turn = next(self._turn)
        replica = self.replicas[turn]
        if time.monotonic() >= self._down_until[turn]:
            fence = self._fence(scope)
            try:
                async with replica.connection() as conn:
                    if fence == 0 or await self._caught_up(conn, fence):
                        return await work(conn)
            except psycopg.errors.QueryCanceled:
                raise  # the statement timed out: the primary would not do better
            except (psycopg.OperationalError, OSError) as exc:
                log.warning("replica %s unavailable for %s s: %s", replica.url, _DOWN, exc)
                self._down_until[turn] = time.monotonic() + _DOWN
        async with self.primary.connection() as conn:
            return await work(conn)

    async def _caught_up(self, conn: AsyncConn, fence: int) -> bool:
        deadline = time.monotonic() + self.wait
        while True:
            cur = await conn.execute("SELECT pg_last_wal_replay_lsn()::text")
            row = await cur.fetchone()
            if row is not None and row[0] is not None and lsn_value(str(row[0])) >= fence:
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(_POLL_SECONDS)

    async def close(self) -> None:
        for replica in self.replicas:
            await replica.close()
