"""Embedding spaces' contract, run unchanged on PostgreSQL and on ``memory://``: a store
opened with a named space (``MemhubSettings.space``) keeps its own embedder, dimension and
memories beside the default space's, and its ``delete_all`` stays in it.

(The default space's erase reaching every space of a PostgreSQL database is in
tests/memory/test_spaces.py: ``memory://`` stores share nothing to reach.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from memhub.config import MemhubSettings
from memhub.errors import ConfigurationError
from memhub.store.inmemory.store import InMemoryStore
from memhub.store.postgres.store import PostgresStore
from memhub.store.protocol import Store
from tests.store.contract import U, insert, mem

WIDE = [1.0, 0.0, 0.0, 0.0, 0.0]


@pytest.fixture(params=["postgres", "memory"])
async def spaces(
    request: pytest.FixtureRequest, settings: MemhubSettings
) -> AsyncIterator[tuple[Store, Store]]:
    """The default space (3 dimensions) and the space ``wide`` (5) of one database."""
    if request.param == "memory":
        settings = settings.model_copy(update={"database_url": "memory://"})
    named_settings = settings.model_copy(update={"space": "wide"})
    kind = PostgresStore if request.param == "postgres" else InMemoryStore
    default: Store = await kind.open(settings)
    named: Store = await kind.open(named_settings)
    try:
        await default.ensure_embedding_space("test-model", 3)
        await named.ensure_embedding_space("wide-model", 5)
        yield default, named
    finally:
        await named.aclose()
        await default.aclose()


async def test_each_space_keeps_its_own_embedder_and_memories(
    spaces: tuple[Store, Store],
) -> None:
    default, named = spaces
    await insert(default, mem("likes tea"))
    await insert(named, mem("likes coffee", vector=WIDE))
    assert [m.memory for m in await default.list_memories(U, None, 10, False)] == ["likes tea"]
    assert [m.memory for m in await named.list_memories(U, None, 10, False)] == ["likes coffee"]
    with pytest.raises(ConfigurationError, match="space 'wide'") as refused:
        await named.ensure_embedding_space("test-model", 3)
    assert "5-dimensional vectors of 'wide-model'" in str(refused.value)
    await named.ensure_embedding_space("wide-model", 5)  # its own: accepted again


async def test_a_named_spaces_delete_all_stays_in_it(spaces: tuple[Store, Store]) -> None:
    default, named = spaces
    await insert(default, mem("likes tea"))
    await insert(named, mem("likes coffee", vector=WIDE))
    assert await named.delete_all(U) == 1
    assert await named.list_memories(U, None, 10, False) == []
    assert [m.memory for m in await default.list_memories(U, None, 10, False)] == ["likes tea"]
