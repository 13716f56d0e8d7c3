"""Memories written without a vector, and the ingest lane's fill; run unchanged on PostgreSQL
and ``memory://``.

``add()``, ARKOS's ``add_turn`` and ``memhub import`` write each turn's memory with its text,
type and expiry; the ingest lane reads what still lacks a vector (``texts_to_embed``) and
stores the vectors (``fill_vectors``), nothing more. A fill is for the text that was read:
a memory deleted or reworded meanwhile, or filled already (a retried job), is left as it is.
"""

from __future__ import annotations

from uuid import UUID

import numpy as np

from memhub.engine import retrieve
from memhub.store.protocol import Store
from memhub.store.records import EmbeddedText, FilledVector, Passage, TextToEmbed
from tests.store.contract import U, V, X, Y, Z, insert, mem


def _filled(memory_id: UUID | None, hash_: str, vector: list[float]) -> FilledVector:
    assert memory_id is not None
    return FilledVector(memory_id, hash_, EmbeddedText(np.asarray(vector, np.float32)))


async def _fill(store: Store, *filled: FilledVector) -> int:
    async with store.apply_jobs([], "t", {}) as batch:
        return await batch.fill_vectors(filled)


async def _similarity(store: Store, memory_id: UUID | None, vector: list[float]) -> float | None:
    query = np.asarray(vector, np.float32)
    found = await retrieve.candidates(store, U, "qqq", query, 10, None, False)
    return {c.record.id: c.vector_similarity for c in found}.get(memory_id)


async def test_only_memories_without_a_vector_are_to_embed_and_only_in_the_scope(
    store: Store,
) -> None:
    (bare,) = await insert(store, mem("bare", U, None))
    (done,) = await insert(store, mem("done", U, X))
    (elsewhere,) = await insert(store, mem("elsewhere", V, None))
    assert bare is not None and done is not None and elsewhere is not None
    texts = await store.texts_to_embed(U, [bare, done, elsewhere])
    assert texts == [TextToEmbed(bare, "bare", "bare")]


async def test_a_fill_stores_the_vector_of_the_text_read_once(store: Store) -> None:
    (bare,) = await insert(store, mem("bare", U, None))
    (reworded,) = await insert(store, mem("old words", U, None))
    (deleted,) = await insert(store, mem("gone", U, None))
    assert bare is not None and reworded is not None and deleted is not None
    await store.delete_memory(U, deleted, "user")
    filled = await _fill(
        store,
        _filled(bare, "bare", Z),
        _filled(reworded, "the hash of other words", Z),  # its text changed after the read
        _filled(deleted, "gone", Z),
    )
    assert filled == 1
    assert await _similarity(store, bare, Z) == 1.0
    assert await store.texts_to_embed(U, [bare, reworded, deleted]) == [
        TextToEmbed(reworded, "old words", "old words")
    ]
    # a retried job's fill changes nothing: the vector stays the first one
    assert await _fill(store, _filled(bare, "bare", Y)) == 0
    assert await _similarity(store, bare, Z) == 1.0


async def test_a_fill_stores_a_long_memorys_passages(store: Store) -> None:
    text = "First part about tea. " * 10 + "Tail part about sailing boats."
    tail = text.index("Tail")
    (long_id,) = await insert(store, mem(text, U, None))
    assert long_id is not None
    passages = (
        Passage(0, 0, tail, np.asarray(X, np.float32)),
        Passage(1, tail - 5, len(text), np.asarray(Z, np.float32)),
    )
    embedded = EmbeddedText(np.asarray(X, np.float32), passages)
    assert await _fill(store, FilledVector(long_id, text, embedded)) == 1
    query = np.asarray(Z, np.float32)
    (found,) = await retrieve.candidates(store, U, "qqq", query, 5, None, False)
    assert (found.record.id, found.vector_similarity) == (long_id, 1.0)
    assert found.passage is not None and found.passage.ordinal == 1
