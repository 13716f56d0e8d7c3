"""Key changes pushed to every process: one dedicated session LISTENing on ``KEY_CHANNEL``.

``keys.revoke_key`` notifies the channel in its own statement, so every process that
listens hears of a revocation when it commits. The listening session is not one of the pool's:
it is opened here, in autocommit mode, held for the life of the process and reopened (at once,
then backing off up to ``_MAX_RETRY`` s) when it is lost, and also when the database swaps
its pool (the embedded server stopping: a smart shutdown waits for every session). Each
(re)opening reports "every key" (``None``): a notification sent while nobody listened is gone,
so what was cached may be stale.

Behind PgBouncer in transaction mode (``MEMHUB_PGBOUNCER``) a LISTEN would stay on whichever
server connection ran it: the session goes to ``MEMHUB_DIRECT_DATABASE_URL`` instead, and
without one nothing listens (one warning) and the key cache's bound is the only one. A pooler
nobody declared is noticed when the session no longer listens (checked after the LISTEN and
every ``_PING_SECONDS``), with the same warning and fallback.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable

import psycopg

from memhub.store.postgres import keys as pg_keys
from memhub.store.postgres.database import AsyncConn, Database

__all__ = ["KeyChanged", "application_name", "watch_key_changes"]

log = logging.getLogger("memhub.store")

KeyChanged = Callable[[int | None], None]
"""Told a key's id when it changed, or None when any key may have (forget them all)."""

_PING_SECONDS = 15.0  # with no notification for this long, check the session is still there
# How often the session looks whether the pool was replaced: the embedded server is stopping
# (a smart shutdown waits for every session, this one included) or was restarted.
_LOOK_SECONDS = 0.5
_FIRST_RETRY = 0.1
_MAX_RETRY = 5.0
_FALLBACK = "a key revoked by another process is refused here after MEMHUB_KEY_CACHE_SECONDS"


class _NotListening(Exception):
    """The session answered, but no longer listens: a pooler in transaction mode."""


class _PoolReplaced(Exception):
    """The database's pool was replaced (the embedded server stopping or restarted)."""

    def __str__(self) -> str:
        return "the embedded PostgreSQL is stopping or restarted"


def application_name() -> str:
    """How the listening session shows in ``pg_stat_activity`` (one per process)."""
    return f"memhub key listener {os.getpid()}"


def _listen_url(database: Database) -> str | None:
    settings = database.settings
    return settings.direct_database_url if settings.pgbouncer else database.url


async def watch_key_changes(database: Database, changed: KeyChanged) -> None:
    """Tell ``changed`` of every committed key change until cancelled (see the module)."""
    url = _listen_url(database)
    if url is None:
        log.warning(
            "MEMHUB_PGBOUNCER is set without MEMHUB_DIRECT_DATABASE_URL: LISTEN does not work"
            " through a transaction pooler, so %s",
            _FALLBACK,
        )
        return
    timeout = database.settings.connect_timeout
    delay, lost = _FIRST_RETRY, False
    while True:
        try:
            conn = await psycopg.AsyncConnection.connect(
                url,
                autocommit=True,
                connect_timeout=max(1, int(timeout)),
                application_name=application_name(),
            )
        except psycopg.Error as exc:
            if not lost:
                log.warning("cannot listen for key revocations (%s); %s until then", exc, _FALLBACK)
                lost = True
            await asyncio.sleep(delay)
            delay = min(delay * 2, _MAX_RETRY)
            continue
        try:
            async with conn:
                await pg_keys.listen_for_key_changes(conn)
                await _check(conn, timeout)
                changed(None)  # revoked while nobody listened: forget every cached key
                if lost:
                    log.warning("listening for key revocations again")
                delay, lost = _FIRST_RETRY, False
                await _relay(conn, changed, database, timeout)
        except _NotListening:
            log.warning(
                "the key-revocation session stopped listening: is the database URL a pooler in"
                " transaction mode? Set MEMHUB_PGBOUNCER and MEMHUB_DIRECT_DATABASE_URL; %s",
                _FALLBACK,
            )
            return
        except (psycopg.Error, OSError, TimeoutError, _PoolReplaced) as exc:
            log.warning("lost the key-revocation session (%s); reconnecting", exc or type(exc))
            lost = True


async def _check(conn: AsyncConn, answer_within: float) -> None:
    if not await asyncio.wait_for(pg_keys.still_listening(conn), answer_within):
        raise _NotListening


async def _relay(
    conn: AsyncConn, changed: KeyChanged, database: Database, answer_within: float
) -> None:
    pool = database.pool
    checked = time.monotonic()
    while True:
        async for note in conn.notifies(timeout=_LOOK_SECONDS):
            if note.payload == "*":
                changed(None)
                continue
            try:
                key_id = int(note.payload)
            except ValueError:
                log.debug("ignoring key notification %r", note.payload)
                continue
            changed(key_id)
        if database.pool is not pool:  # let the stopping server go; listen on the new one
            raise _PoolReplaced
        if time.monotonic() - checked >= _PING_SECONDS:  # still there, and listening?
            await _check(conn, answer_within)
            checked = time.monotonic()
