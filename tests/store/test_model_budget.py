"""The budget of model changes is decided where the change is made: a model's retire counts
the user's changes and retires in one transaction, serialised per user, on both back ends."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from uuid import UUID

import psycopg
import pytest

from memhub.config import MemhubSettings
from memhub.errors import ModelBudgetSpent
from memhub.store.postgres.budget import count_model_changes
from memhub.store.postgres.store import PostgresStore
from memhub.store.protocol import Store
from memhub.store.records import ModelBudget
from tests.store.contract import U, insert, mem


def _budget(limit: int) -> ModelBudget:
    return ModelBudget(limit=limit, since=datetime.now(UTC) - timedelta(days=1))


async def test_a_spent_budget_refuses_a_models_retire_and_changes_nothing(store: Store) -> None:
    first, second, third = await insert(
        store, mem("likes tea"), mem("has a cat"), mem("owns a van")
    )
    assert first and second and third
    await store.retire_memory(U, first, "agent:a", "x", budget=_budget(2))
    await store.retire_memory(U, second, "user", "mine", budget=None)  # a person spends nothing
    with pytest.raises(ModelBudgetSpent, match="MEMHUB_MODEL_CHANGES_PER_DAY=1"):
        await store.retire_memory(U, third, "agent:a", "x", budget=_budget(1))
    assert {r.record.id for r in await store.retired_memories(U, 10)} == {first, second}


async def _waiting_on_the_budget(db_url: str) -> None:
    """Until another session waits on an advisory lock (an event, not a time)."""
    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
        while True:
            cur = await conn.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            )
            row = await cur.fetchone()
            if row and row[0]:
                return
            await asyncio.sleep(0.02)


async def test_a_retire_waits_for_a_count_in_flight_and_sees_its_change(
    settings: MemhubSettings, db_url: str
) -> None:
    """One transaction has counted the user's changes (holding the budget) and is about to
    make the last change the budget allows; a model's retire started meanwhile waits for it,
    then counts that change too and is refused. Without the lock both would pass."""
    store = await PostgresStore.open(settings)
    try:
        await store.ensure_embedding_space("test-model", 3)
        tea, cat = await insert(store, mem("likes tea"), mem("has a cat"))
        assert tea and cat
        async with await psycopg.AsyncConnection.connect(db_url) as conn:
            async with conn.transaction():
                assert await count_model_changes(conn, U.user_id or "", _budget(1).since) == 0
                retire = asyncio.create_task(
                    store.retire_memory(U, cat, "agent:b", "x", budget=_budget(1))
                )
                await asyncio.wait_for(_waiting_on_the_budget(db_url), 30)
                await _retire_by_model(conn, tea)
            with pytest.raises(ModelBudgetSpent):
                await asyncio.wait_for(retire, 30)
        assert [r.record.id for r in await store.retired_memories(U, 10)] == [tea]
    finally:
        await store.aclose()


async def _retire_by_model(conn: psycopg.AsyncConnection[object], memory_id: UUID) -> None:
    from memhub.store.postgres.retire import retire_memory

    await retire_memory(conn, U, memory_id, "agent:a", "x")  # type: ignore[arg-type]
