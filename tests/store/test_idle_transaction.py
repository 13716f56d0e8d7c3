"""A session left idle inside a transaction is ended by PostgreSQL and its locks released.

memhub holds no transaction across slow work, so such a session belongs to a process that
stopped mid-way: tests/ops/test_topology.py froze a worker (SIGSTOP) inside a transaction and
its row locks kept the other workers from the queue until their statements timed out.
Real PostgreSQL; the test waits for events (a lock granted, a session ended), not a clock.
"""

from __future__ import annotations

import psycopg
import pytest

from memhub import MemhubSettings
from memhub.store.postgres.database import acquire_database, release_database


async def test_a_frozen_transactions_locks_are_released(
    settings: MemhubSettings, db_url: str
) -> None:
    frozen = settings.model_copy(update={"idle_in_transaction_timeout_ms": 300})
    database = await acquire_database(frozen)
    try:
        with psycopg.connect(db_url, autocommit=True) as admin:
            admin.execute("CREATE TABLE frozen_lock (id int PRIMARY KEY)")
            admin.execute("INSERT INTO frozen_lock VALUES (1)")
        async with database.connection() as conn:
            cur = await conn.execute("SHOW idle_in_transaction_session_timeout")
            assert await cur.fetchone() == ("300ms",)
            # a worker that stops here, holding the row, and never comes back
            await conn.execute("BEGIN")
            await conn.execute("SELECT id FROM frozen_lock WHERE id = 1 FOR UPDATE")
            # another process wants the row: granted once PostgreSQL ends the idle session
            # (its own statement_timeout, 30 s, would fail the test were it never released)
            with psycopg.connect(db_url, options="-c statement_timeout=30000") as other:
                row = other.execute("SELECT id FROM frozen_lock WHERE id = 1 FOR UPDATE")
                assert row.fetchone() == (1,)
            with pytest.raises(psycopg.errors.IdleInTransactionSessionTimeout):  # it was ended
                await conn.execute("SELECT 1")
    finally:
        await release_database(database)


async def test_the_timeout_can_be_turned_off(settings: MemhubSettings) -> None:
    off = settings.model_copy(update={"idle_in_transaction_timeout_ms": 0})
    assert off.idle_in_transaction_timeout_ms == 0
    assert MemhubSettings().idle_in_transaction_timeout_ms == 30_000
    # 0 sends no option: the session keeps the server's own setting (off by default)
    database = await acquire_database(off)
    try:
        async with database.connection() as conn:
            cur = await conn.execute("SHOW idle_in_transaction_session_timeout")
            assert await cur.fetchone() == ("0",)
    finally:
        await release_database(database)
