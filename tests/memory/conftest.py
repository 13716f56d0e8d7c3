"""Fixtures for facade tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub._portal import run_sync


@pytest.fixture(params=["postgres", "in-process"])
def shared_memory(
    request: pytest.FixtureRequest, settings: MemhubSettings
) -> Iterator[AsyncMemory]:
    """An AsyncMemory living on memhub's portal loop, for sync-driven tests (hypothesis)."""
    if request.param == "in-process":
        settings = settings.model_copy(update={"database_url": "memory://"})
    memory = AsyncMemory(settings=settings)
    yield memory
    run_sync(memory.aclose())


@pytest.fixture(params=["postgres", "in-process", "pgbouncer"])
async def memory(
    request: pytest.FixtureRequest, settings: MemhubSettings
) -> AsyncIterator[AsyncMemory]:
    """The same behavioural suite runs on PostgreSQL, on the ``memory://`` store, and on
    PostgreSQL through PgBouncer in transaction mode (skipped without pgbouncer)."""
    if request.param == "in-process":
        settings = settings.model_copy(update={"database_url": "memory://"})
    if request.param == "pgbouncer":
        through = request.getfixturevalue("pgbouncer_url")(settings.database_url)
        settings = settings.model_copy(update={"database_url": through, "pgbouncer": True})
    async with AsyncMemory(settings=settings) as m:
        yield m
