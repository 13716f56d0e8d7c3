"""Passages of long memories (migration 0026), run unchanged on PostgreSQL and ``memory://``.

A memory stored with passages scores as its best passage on the vector signal and says which
passage that is; its passages go when it is deleted or its text changes; a memory without
passages is scored exactly as before.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import psycopg
import pytest

from memhub.engine import retrieve
from memhub.store.postgres.store import PostgresStore
from memhub.store.protocol import Store
from memhub.store.records import Passage, PassageHit
from tests.store.contract import U, V, X, Y, Z, insert, mem

LONG = "First part about tea. " * 10 + "Tail part about sailing boats."


def _long(scope=U):  # type: ignore[no-untyped-def]
    """A long memory whose own vector is X (its first passage) and whose tail's is Z."""
    tail = LONG.index("Tail")
    return replace(
        mem(LONG, scope, X),
        passages=(
            Passage(0, 0, tail, np.asarray(X, np.float32)),
            Passage(1, tail - 5, len(LONG), np.asarray(Z, np.float32)),
        ),
    )


async def test_a_long_memory_scores_as_its_best_passage_and_names_it(store: Store) -> None:
    (long_id,) = await insert(store, _long())
    (short_id,) = await insert(store, mem("short", U, Y))
    found = await retrieve.candidates(store, U, "zzz", np.asarray(Z, np.float32), 5, None, False)
    by_id = {c.record.id: c for c in found}
    assert by_id[long_id].vector_similarity == 1.0 and by_id[long_id].vector_rank == 1
    assert by_id[long_id].passage == PassageHit(1, LONG.index("Tail") - 5, len(LONG))
    assert by_id[short_id].passage is None and by_id[short_id].vector_similarity == 0.0
    near_start = await retrieve.candidates(store, U, "z", np.asarray(X, np.float32), 5, None, False)
    assert {c.record.id: c.passage for c in near_start}[long_id] == PassageHit(
        0, 0, LONG.index("Tail")
    )


async def test_a_long_memory_is_found_by_its_tail_among_nearer_memories(store: Store) -> None:
    """Only k memories come by their own vectors; the tail's passage brings the long one."""
    await insert(store, *(mem(f"near {n}", U, [0.0, 1.0, 0.1 * n]) for n in range(1, 6)))
    (long_id,) = await insert(store, replace(_long(), embedding=np.asarray(X, np.float32)))
    query = np.asarray([0.0, 0.2, 1.0], np.float32)
    found = await retrieve.candidates(store, U, "zzz", query, 2, None, False)
    assert long_id in {c.record.id for c in found}


async def test_passages_are_in_their_memorys_scope_only(store: Store) -> None:
    await insert(store, _long(V))
    (short_id,) = await insert(store, mem("short", U, Y))
    found = await retrieve.candidates(store, U, "zzz", np.asarray(Z, np.float32), 5, None, False)
    assert [c.record.id for c in found] == [short_id]


async def test_passages_go_with_a_deleted_memory_or_a_changed_text(store: Store) -> None:
    (deleted,) = await insert(store, _long())
    (updated,) = await insert(store, replace(_long(), hash="other"))
    assert deleted is not None and updated is not None
    await store.delete_memory(U, deleted, "user")
    await store.update_memory(U, updated, "new text", "new", np.asarray(Y, np.float32), None, "u")
    found = await retrieve.candidates(store, U, "zzz", np.asarray(Z, np.float32), 5, None, False)
    assert [(c.record.id, c.passage, c.vector_similarity) for c in found] == [(updated, None, 0.0)]
    # the same text with new metadata keeps its passages
    (kept,) = await insert(store, _long(V))
    assert kept is not None
    await store.update_memory(V, kept, None, None, None, {"a": 1}, "user")
    found = await retrieve.candidates(store, V, "zzz", np.asarray(Z, np.float32), 5, None, False)
    assert found[0].passage is not None and found[0].passage.ordinal == 1


async def test_a_long_memorys_first_passage_is_found_and_named_by_the_memorys_own_vector(
    store: Store,
) -> None:
    """The first passage's vector is the memory's own: PostgreSQL stores it once (the
    passage row keeps its span without a vector), and search still names that passage when
    the query is nearest the text's start."""
    (long_id,) = await insert(store, _long())
    query = np.asarray(X, np.float32)
    (found,) = await retrieve.candidates(store, U, "zzz", query, 5, None, False)
    assert (found.record.id, found.vector_similarity) == (long_id, 1.0)
    assert found.passage == PassageHit(0, 0, LONG.index("Tail"))


async def test_postgres_stores_the_first_passages_vector_once(store: Store, db_url: str) -> None:
    if not isinstance(store, PostgresStore):
        pytest.skip("a PostgreSQL storage detail; the in-process store keeps vectors in a matrix")
    (long_id,) = await insert(store, _long())
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        cur = await conn.execute(
            "SELECT ordinal, embedding IS NULL FROM memory_passages WHERE memory_id = %s"
            " ORDER BY ordinal",
            (long_id,),
        )
        assert await cur.fetchall() == [(0, True), (1, False)]
