"""Key revocations pushed by LISTEN/NOTIFY: sent on commit only, heard again after a lost
session (with a flush), and the fallback behind PgBouncer (``pg_key_listener``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable

import psycopg
import pytest

from memhub.config import MemhubSettings
from memhub.store.inmemory.store import InMemoryStore
from memhub.store.postgres import key_listener as pg_key_listener
from memhub.store.postgres import keys as pg_keys
from memhub.store.postgres.store import PostgresStore

Conn = psycopg.AsyncConnection[tuple[object, ...]]


@pytest.fixture
async def pg_store(settings: MemhubSettings) -> AsyncIterator[PostgresStore]:
    store = await PostgresStore.open(settings)
    yield store
    await store.aclose()


class Heard:
    """What a watch reported, as a queue, and the task running it."""

    def __init__(self, watch: Callable[[Callable[[int | None], None]], object]) -> None:
        self.changes: asyncio.Queue[int | None] = asyncio.Queue()
        self.task = asyncio.ensure_future(watch(self.changes.put_nowait))  # type: ignore[arg-type]

    async def next(self, within: float = 5.0) -> int | None:
        return await asyncio.wait_for(self.changes.get(), within)

    async def stop(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


async def _listener_pid(aconn: Conn) -> int | None:
    cur = await aconn.execute(
        "SELECT pid FROM pg_stat_activity"
        " WHERE application_name = %s AND datname = current_database()",
        (pg_key_listener.application_name(),),
    )
    row = await cur.fetchone()
    return None if row is None else int(str(row[0]))


async def test_a_revocation_is_heard_on_commit_only(pg_store: PostgresStore, aconn: Conn) -> None:
    key, _ = await pg_store.create_key("ci", "acme", False)
    other, _ = await pg_store.create_key("ci 2", "acme", False)
    heard = Heard(pg_store.watch_key_changes)
    try:
        assert await heard.next() is None  # listening: forget what was cached before
        async with pg_store.database.connection() as conn:
            with pytest.raises(RuntimeError):
                async with conn.transaction():
                    assert await pg_keys.revoke_key(conn, key.id) is not None
                    raise RuntimeError("roll back")
        await pg_store.revoke_key(other.id)
        assert await heard.next() == other.id  # the rolled-back one was never sent
        assert heard.changes.empty()
        assert [k.id for k in await pg_store.list_keys(False)] == [key.id]
        await aconn.execute("SELECT pg_notify(%s, '*')", (pg_keys.KEY_CHANNEL,))
        assert await heard.next() is None  # "every key", for operators changing keys by hand
    finally:
        await heard.stop()


async def test_a_lost_session_is_reopened_and_everything_forgotten(
    pg_store: PostgresStore, aconn: Conn, caplog: pytest.LogCaptureFixture
) -> None:
    key, _ = await pg_store.create_key("ci", "acme", False)
    heard = Heard(pg_store.watch_key_changes)
    try:
        assert await heard.next() is None
        first = await _listener_pid(aconn)
        assert first is not None
        with caplog.at_level(logging.WARNING, "memhub.store"):
            await aconn.execute("SELECT pg_terminate_backend(%s)", (first,))
            # Reconnected at once, and told to forget every key: a revocation committed
            # while nobody listened was not heard.
            assert await heard.next() is None
        assert "lost the key-revocation session" in caplog.text
        assert (await _listener_pid(aconn)) not in (None, first)
        await pg_store.revoke_key(key.id)
        assert await heard.next() == key.id
    finally:
        await heard.stop()
    # Cancelled: the session is closed (its backend exits a moment after the socket closes).
    for _ in range(100):
        if await _listener_pid(aconn) is None:
            break
        await asyncio.sleep(0.05)
    assert await _listener_pid(aconn) is None


async def test_the_in_process_store_has_nothing_to_watch() -> None:
    heard = Heard(InMemoryStore().watch_key_changes)
    await asyncio.wait_for(heard.task, 1)  # returns at once, having reported nothing
    assert heard.changes.empty()


async def test_behind_pgbouncer_it_listens_on_the_direct_url_or_says_it_cannot(
    settings: MemhubSettings,
    aconn: Conn,
    pgbouncer_url: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert settings.database_url is not None
    through = settings.model_copy(
        update={"database_url": pgbouncer_url(settings.database_url), "pgbouncer": True}
    )
    store = await PostgresStore.open(through)
    try:
        with caplog.at_level(logging.WARNING, "memhub.store"):
            heard = Heard(store.watch_key_changes)
            await asyncio.wait_for(heard.task, 5)  # nothing to listen on: returns at once
        assert heard.changes.empty()
        assert caplog.text.count("MEMHUB_PGBOUNCER is set without MEMHUB_DIRECT_DATABASE_URL") == 1
    finally:
        await store.aclose()
    direct = through.model_copy(update={"direct_database_url": settings.database_url})
    store = await PostgresStore.open(direct)
    heard = Heard(store.watch_key_changes)
    try:
        assert await heard.next() is None
        assert await _listener_pid(aconn) is not None  # a session on PostgreSQL itself
        key, _ = await store.create_key("ci", "acme", False)
        await store.revoke_key(key.id)  # NOTIFY through the pooler works; LISTEN would not
        assert await heard.next() == key.id
    finally:
        await heard.stop()
        await store.aclose()


async def test_an_undeclared_transaction_pooler_is_noticed(
    settings: MemhubSettings,
    pgbouncer_url: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pg_key_listener, "_PING_SECONDS", 0.2)
    assert settings.database_url is not None
    pooled = pgbouncer_url(settings.database_url)
    store = await PostgresStore.open(settings.model_copy(update={"database_url": pooled}))
    heard = Heard(store.watch_key_changes)
    try:
        assert await heard.next() is None  # the LISTEN ran on some server connection
        await asyncio.sleep(0.5)  # the pool's own connections settle; only the checks run
        # PgBouncer reuses its most recent server connection first: this transaction holds
        # the one that ran the LISTEN, so the listener's next check lands on another.
        async with await psycopg.AsyncConnection.connect(pooled, prepare_threshold=None) as hog:
            await hog.execute("SELECT 1")
            with caplog.at_level(logging.WARNING, "memhub.store"):
                await asyncio.wait_for(heard.task, 10)  # it gave up listening
        assert "stopped listening: is the database URL a pooler in transaction mode" in (
            caplog.text
        )
    finally:
        await heard.stop()
        await store.aclose()
