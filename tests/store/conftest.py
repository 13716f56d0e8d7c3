"""The ``store`` fixture of the contract suites: PostgreSQL, then the in-process store."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from memhub.config import MemhubSettings
from memhub.store.inmemory.store import InMemoryStore
from memhub.store.postgres.store import PostgresStore
from memhub.store.protocol import Store


@pytest.fixture(params=["postgres", "memory"])
async def store(request: pytest.FixtureRequest, settings: MemhubSettings) -> AsyncIterator[Store]:
    """A fresh store of each kind, its embedding space fixed at 3 dimensions."""
    opened: Store
    if request.param == "postgres":
        opened = await PostgresStore.open(settings)
    else:
        opened = InMemoryStore()
    await opened.ensure_embedding_space("test-model", 3)
    yield opened
    await opened.aclose()
