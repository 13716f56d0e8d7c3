"""PostgreSQL's search runs its full-text statement while the query's vector is computed."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from memhub.engine import retrieve
from memhub.store.postgres import search as pg_search
from memhub.store.postgres.store import PostgresStore
from tests.store.contract import U, X, insert, mem

# conftest's store, PostgreSQL only: these tests look at its tables.
pytestmark = pytest.mark.parametrize("store", ["postgres"], indirect=True)


async def test_the_text_statement_finishes_before_the_vector_is_needed(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await insert(store, mem("tea with lemon", vector=X))
    text_done = asyncio.Event()
    real = pg_search.text_hits

    async def spied(*args: object, **kwargs: object) -> pg_search.TextHits:
        hits = await real(*args, **kwargs)  # type: ignore[arg-type]
        text_done.set()
        return hits

    monkeypatch.setattr(pg_search, "text_hits", spied)

    async def vector_after_text() -> np.ndarray:
        # Run one after the other, the text statement would wait for this vector: the search
        # would then fail here instead of finding the memory.
        await asyncio.wait_for(text_done.wait(), timeout=30)
        return np.asarray(X, np.float32)

    found = await retrieve.candidates(store, U, "lemon", vector_after_text(), 5, None, False)
    assert [(c.record.memory, c.text_rank, c.vector_rank) for c in found] == [
        ("tea with lemon", 1, 1)
    ]


async def test_a_text_hit_deleted_before_the_vector_statement_is_left_out(
    store: PostgresStore,
) -> None:
    ids = await insert(store, mem("tea with lemon", vector=X), mem("lemon cake", vector=X))
    async with store.database.connection() as conn:
        hits = await pg_search.text_hits(conn, U, "lemon", 5, None, False)
        assert len(hits.ids) == 2
        assert ids[1] is not None
        await store.delete_memory(U, ids[1], actor="test")
        found = await pg_search.vector_candidates(
            conn, U, np.asarray(X, np.float32), 5, None, False, hits
        )
    assert [c.record.memory for c in found] == ["tea with lemon"]


async def test_the_scope_text_index_exists(store: PostgresStore) -> None:
    async with store.database.connection() as conn:
        cur = await conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_words_scope_tsv'"
        )
        row = await cur.fetchone()
    assert row is not None
    assert "gin (user_id, agent_id, run_id, tsv)" in str(row[0])


async def test_new_memories_leave_no_gin_pending_list_for_search_to_read(
    store: PostgresStore,
) -> None:
    # A pending list is read in full by every search that uses its index (migration 0017).
    await insert(store, *(mem(f"memory number {i} about lemons", vector=X) for i in range(40)))
    async with store.database.connection() as conn:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        cur = await conn.execute(
            "SELECT c.relname, (pgstatginindex(c.oid)).pending_tuples FROM pg_index i"
            " JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam"
            " WHERE i.indrelid IN ('memories'::regclass, 'memory_words'::regclass)"
            " AND a.amname = 'gin' ORDER BY 1"
        )
        pending = dict(await cur.fetchall())  # type: ignore[arg-type]
    assert pending == {
        "memories_metadata": 0,
        "memories_source_turn_ids": 0,
        "memory_words_scope_tsv": 0,
        "memory_words_tsv": 0,
    }
