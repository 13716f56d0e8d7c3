"""Hybrid candidates on a real database: BM25 with per-scope IDF, both signals, scope and filters."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from memhub import MemhubSettings
from memhub.engine import retrieve
from memhub.engine.fusion import PRESETS, fuse
from memhub.filters import parse_filters
from memhub.store.postgres import memories as pg_memories
from memhub.store.postgres import search as pg_search
from memhub.store.postgres.store import PostgresStore
from memhub.store.records import NewMemory, Scope, TextRanking
from tests.store.contract import U, turns_and_their_memories

DIM = 8


def _vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
async def store(settings: MemhubSettings) -> AsyncIterator[PostgresStore]:
    store = await PostgresStore.open(settings)
    await store.ensure_embedding_space("test-random-8", DIM)
    yield store
    await store.aclose()


async def _insert(
    store: PostgresStore, texts: Sequence[str], user_id: str = "u", **metadata: object
) -> list[uuid.UUID]:
    memories = [
        NewMemory(
            id=uuid.uuid4(),
            scope=Scope(user_id=user_id),
            memory=text,
            hash=f"{user_id}-{n}-{text}",
            embedding=_vector(n),
            metadata=dict(metadata),
        )
        for n, text in enumerate(texts)
    ]
    # Straight through the SQL layer: these tests are about search, not the job queue.
    async with store.database.connection() as conn:
        ids = await pg_memories.insert_memories(conn, memories, actor="test")
    return [i for i in ids if i is not None]


async def _text_hits(store: PostgresStore, query: str, **kwargs: object) -> list[str]:
    scope = Scope(user_id=str(kwargs.pop("user_id", "u")))
    candidates = await retrieve.candidates(store, scope, query, _vector(99), 20, None, False)
    hits = sorted(
        (c for c in candidates if c.text_rank is not None), key=lambda c: c.text_rank or 0
    )
    return [c.record.memory for c in hits]


async def test_bm25_ranks_a_rare_word_match_above_a_common_word_match(
    store: PostgresStore,
) -> None:
    filler = [f"we talked about the weather again, day {n}" for n in range(30)]
    await _insert(store, [*filler, "the weather was nice", "my violin lesson went well"])
    hits = await _text_hits(store, "how was the weather at the violin lesson?")
    assert hits[0] == "my violin lesson went well"


async def test_document_frequency_is_counted_in_the_searched_scope(store: PostgresStore) -> None:
    # "piano" is everywhere for another user; for this one it is rare, and must rank so.
    await _insert(store, [f"piano practice {n}" for n in range(40)], user_id="other")
    await _insert(store, [f"cooking dinner {n}" for n in range(20)] + ["piano and cooking"])
    hits = await _text_hits(store, "piano cooking")
    assert hits[0] == "piano and cooking"


async def test_every_candidate_gets_both_signals_and_fused_scores_stay_in_range(
    store: PostgresStore,
) -> None:
    await _insert(store, [f"note {n} about gardening" for n in range(30)])
    candidates = await retrieve.candidates(
        store, Scope(user_id="u"), "gardening", _vector(3), 5, None, False
    )
    assert all(c.vector_similarity is not None for c in candidates)
    assert all(c.text_score is not None and c.text_score > 0 for c in candidates)
    for config in PRESETS.values():
        assert all(
            0.0 <= s.score <= 1.0 for s in fuse(candidates, config, candidates[0].record.created_at)
        )


@pytest.mark.parametrize(
    "query", ["", "the of and", "o'neil's back\\slash 'quoted' & | ! :* <->", "日本語のテキスト"]
)
async def test_odd_queries_neither_fail_nor_match_wrongly(store: PostgresStore, query: str) -> None:
    await _insert(store, ["o'neil's back\\slash is 'quoted'", "日本語のテキスト", "plain words"])
    candidates = await retrieve.candidates(
        store, Scope(user_id="u"), query, _vector(1), 10, None, False
    )
    assert len(candidates) == 3  # the vector side always finds all three


async def test_scope_filters_and_superseded_rows_bound_the_text_side(
    store: PostgresStore, db_url: str
) -> None:
    await _insert(store, ["tennis on sunday"], user_id="someone-else")
    await _insert(store, ["tennis with anna"], topic="sport")
    await _insert(store, ["tennis elbow again"], topic="health")
    old = await _insert(store, ["tennis lessons cancelled"])
    import psycopg

    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
        await conn.execute("UPDATE memories SET valid_to = now() WHERE id = %s", (old[0],))
    scope = Scope(user_id="u")
    found = await retrieve.candidates(store, scope, "tennis", _vector(5), 10, None, False)
    assert {c.record.memory for c in found} == {"tennis with anna", "tennis elbow again"}
    with_old = await retrieve.candidates(store, scope, "tennis", _vector(5), 10, None, True)
    assert "tennis lessons cancelled" in {c.record.memory for c in with_old}
    only_sport = await retrieve.candidates(
        store, scope, "tennis", _vector(5), 10, parse_filters({"topic": "sport"}), False
    )
    assert [c.record.memory for c in only_sport] == ["tennis with anna"]


async def test_ts_rank_ranking_stays_available(store: PostgresStore, db_url: str) -> None:
    await _insert(store, ["violin lesson", "weather report"])
    import psycopg
    from pgvector.psycopg import register_vector_async

    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
        await register_vector_async(conn)
        scope, ranking = Scope(user_id="u"), TextRanking(method="ts_rank", score_all=False)
        hits = await pg_search.text_hits(conn, scope, "violin", 5, None, False, ranking)
        raw = await pg_search.vector_candidates(
            conn, scope, _vector(2), 5, None, False, hits, ranking
        )
    found = retrieve.rank(raw)
    assert [c.record.memory for c in found if c.text_rank == 1] == ["violin lesson"]


async def test_the_previous_turn_is_stored_once_and_still_looked_up_for_older_memories(
    store: PostgresStore,
) -> None:
    # Migration 0018 stores each new memory's previous turn (0: none); a memory stored before
    # it (NULL) gets the same answer from the lookup search did before.
    first, _, _ = await turns_and_their_memories(store, _vector(1))
    async with store.database.connection() as conn:
        cur = await conn.execute("SELECT memory, previous_turn_id FROM memories")
        stored = dict(await cur.fetchall())
        await conn.execute("UPDATE memories SET previous_turn_id = NULL")
    assert stored == {
        "tea first": 0,
        "tea second": first[0],
        "tea elsewhere": 0,
        "tea later": first[1],
        "tea without turns": 0,
    }
    found = await retrieve.candidates(store, U, "tea", _vector(1), 10, None, False)
    assert {c.record.memory: c.previous_turn_id for c in found} == {
        "tea first": None,
        "tea second": first[0],
        "tea elsewhere": None,
        "tea later": first[1],
        "tea without turns": None,
    }


async def test_the_backfill_in_operations_md_stores_what_add_stores(
    store: PostgresStore,
) -> None:
    first, _, _ = await turns_and_their_memories(store, _vector(1))
    docs = (Path(__file__).parents[2] / "docs" / "operations.md").read_text(encoding="utf-8")
    found = re.search(r"`(UPDATE memories m SET previous_turn_id.*?)`", docs, re.DOTALL)
    assert found is not None
    backfill = " ".join(found.group(1).split())
    async with store.database.connection() as conn:
        cur = await conn.execute("SELECT memory, previous_turn_id FROM memories")
        stored = dict(await cur.fetchall())
        await conn.execute("UPDATE memories SET previous_turn_id = NULL")
        await conn.execute(backfill)  # type: ignore[call-overload]
        cur = await conn.execute("SELECT memory, previous_turn_id FROM memories")
        assert dict(await cur.fetchall()) == stored
    assert stored["tea later"] == first[1]
