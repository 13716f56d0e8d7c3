"""The in-process store alone: what the contract suites (``test_*_contract.py``) do not cover."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from memhub.config import MemhubSettings
from memhub.engine import retrieve
from memhub.errors import StoreError
from memhub.store.inmemory.store import InMemoryStore
from memhub.store.inmemory.text import bm25_scores, stem, terms
from memhub.store.protocol import Store
from memhub.store.records import JobPayload, Lane, NewJob, NewTurn, Scope
from tests.store.contract import INGEST, LEASE, U, V, X, Y, Z, insert, mem, queue


@pytest.fixture
async def store() -> InMemoryStore:
    s = InMemoryStore()
    await s.ensure_embedding_space("test-model", 3)
    return s


def test_it_satisfies_the_store_protocol() -> None:
    store: Store = InMemoryStore()  # mypy checks the structural match
    assert store is not None


async def test_open_ignores_the_url_and_aclose_is_harmless() -> None:
    store = await InMemoryStore.open(MemhubSettings(database_url="memory://"))
    await store.aclose()
    await store.aclose()


# -- embedding space -----------------------------------------------------------------------


async def test_vectors_need_an_embedding_space() -> None:
    with pytest.raises(StoreError, match="ensure_embedding_space"):
        await insert(InMemoryStore(), mem("a"))


# -- conversations -------------------------------------------------------------------------


# -- inserting and reading memories --------------------------------------------------------


# -- search ----------------------------------------------------------------------------------


async def test_text_search_ranks_like_ts_rank(store: InMemoryStore) -> None:
    await insert(
        store,
        mem("Alice went hiking in the Alps", vector=Z),
        mem("Bob hikes and hikes and hikes", vector=Z),
        mem("Alice likes hiking with Bob", vector=Z),
        mem("nothing relevant", vector=Z),
    )
    query = np.asarray(X, np.float32)
    found = await retrieve.candidates(store, U, "Alice's hike with Bob", query, 10, None, False)
    by_text = sorted((c for c in found if c.text_rank), key=lambda c: c.text_rank or 0)
    assert [c.record.memory for c in by_text] == [
        "Alice likes hiking with Bob",  # all three query terms
        "Bob hikes and hikes and hikes",  # two terms, shortest memory
        "Alice went hiking in the Alps",
    ]
    assert [c.text_rank for c in by_text] == [1, 2, 3]
    assert by_text[0].text_score is not None and by_text[1].text_score is not None
    assert by_text[0].text_score > by_text[1].text_score
    # only stop words: no text query at all
    only_stop = await retrieve.candidates(store, U, "the and of", query, 10, None, False)
    assert all(c.text_rank is None for c in only_stop)


# -- update, delete, history -----------------------------------------------------------------


async def test_reset_removes_everything_and_restarts_ids(store: InMemoryStore) -> None:
    await insert(store, mem("x"))
    await store.append_turns([NewTurn("u", "s", "user", "hi")], NewJob("ingest", U))
    await store.reset()
    assert await store.list_memories(U, None, 10, False) == []
    assert await store.pending_jobs() == 0
    assert await store.append_turns([NewTurn("u", "s", "user", "hi")], None) == [1]
    await store.ensure_embedding_space("test-model", 3)  # the embedding space survives


# -- jobs (the queue's rules are in tests/store/test_queue_contract.py, for both stores) ----


async def test_last_error_is_truncated(store: InMemoryStore) -> None:
    (job_id,) = await queue(store, U)
    await store.claim_jobs(INGEST, 10, LEASE)
    await store.release_jobs([job_id], "w", "x" * 5000, datetime.now(UTC), 5)
    (job,) = await store.list_jobs("queued", 10)
    assert job.last_error == "x" * 4000


async def test_pending_jobs_narrow_by_each_id(store: InMemoryStore) -> None:
    await queue(store, Scope(user_id="u", agent_id="a"))
    await queue(store, Scope(user_id="u", run_id="r"))
    await queue(store, V)
    assert await store.pending_jobs() == 3
    assert await store.pending_jobs(U) == 2
    assert await store.pending_jobs(Scope(user_id="u", agent_id="a")) == 1
    assert await store.pending_jobs(Scope(run_id="r")) == 1
    assert await store.pending_jobs(Scope(agent_id="zz")) == 0


async def test_list_jobs_by_status_in_id_order(store: InMemoryStore) -> None:
    ids = await queue(store, U, 3)
    assert [j.id for j in await store.list_jobs("queued", 2)] == ids[:2]
    assert await store.list_jobs("parked", 10) == []


async def test_reset_during_an_apply_drops_its_writes(store: InMemoryStore) -> None:
    (job_id,) = await queue(store, U)
    jobs = await store.claim_jobs(INGEST, 10, LEASE)
    async with store.apply_jobs(jobs, "w", {}) as batch:
        await batch.insert_memories([mem("fact")], "worker")
        await store.reset()
        await batch.complete([job_id])
    assert await store.list_memories(U, None, 10, False) == []


# -- the text scorer -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("words", "stem_"),
    [
        (["hike", "hikes", "hiking", "hiked"], "hik"),
        (["run", "runs", "running"], "run"),
        (["city", "cities"], "city"),
        (["study", "studies", "studied"], "study"),
        (["box", "boxes"], "box"),
        (["play", "plays", "played", "playing"], "play"),
        (["class"], "class"),
        (["virus"], "virus"),
    ],
)
def test_stemmer_joins_inflections(words: list[str], stem_: str) -> None:
    assert {stem(w) for w in words} == {stem_}


# -- consolidation inside a batch ----------------------------------------------------------


async def test_each_lane_keeps_its_own_order(store: InMemoryStore) -> None:
    (ingest,) = await queue(store, U)
    async with store.apply_jobs([], "t", {}) as batch:
        await batch.enqueue(NewJob("consolidate", U), None, False)
    assert [j.id for j in await store.claim_jobs(INGEST, 10, LEASE)] == [ingest]
    second = await store.claim_jobs(Lane(("consolidate",)), 10, LEASE)
    assert [j.kind for j in second] == ["consolidate"]  # not held back by ingest


def test_bm25_matches_the_sql_formula() -> None:
    docs = [terms("alice hiking alps"), terms("bob hiking"), terms("carol")]
    scores = bm25_scores(docs, terms("alice bob"))
    # n = 3; alice and bob each match one memory: idf = ln(1 + 2.5 / 1.5)
    idf = np.log(1 + 2.5 / 1.5)
    avgdl = (3 + 2) / 2
    assert scores[0] == pytest.approx(idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 3 / avgdl)))
    assert scores[1] == pytest.approx(idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / avgdl)))
    assert scores[2] is None


async def test_every_candidate_carries_both_signals(store: InMemoryStore) -> None:
    await insert(store, mem("coffee black", vector=X), mem("green tea", vector=Y))
    found = await retrieve.candidates(store, U, "tea", np.asarray(X, np.float32), 1, None, False)
    signals = {c.record.memory: (c.vector_rank, c.text_rank) for c in found}
    assert signals == {"coffee black": (1, None), "green tea": (2, 1)}
    tea = next(c for c in found if c.record.memory == "green tea")
    assert tea.vector_similarity == pytest.approx(0.0) and tea.text_score is not None


async def test_an_excluding_lane_takes_unknown_kinds() -> None:
    store = InMemoryStore()
    await store.append_turns([], NewJob(kind="mystery", scope=Scope(user_id="u")))
    assert await store.claim_jobs(Lane(("consolidate",)), 10, LEASE) == []
    claimed = await store.claim_jobs(Lane(("consolidate",), exclude=True), 10, LEASE)
    assert [job.kind for job in claimed] == ["mystery"]


async def test_job_counts_by_status() -> None:
    store = InMemoryStore()
    await store.append_turns([], NewJob(kind="mystery", scope=Scope(user_id="u")))
    assert await store.job_counts() == {"queued": 1, "parked": 0}
    (job,) = await store.claim_jobs(Lane(("consolidate",), exclude=True), 1, LEASE)
    await store.release_jobs([job.id], "w", "boom", datetime.now(UTC), max_attempts=1)
    assert await store.job_counts() == {"queued": 0, "parked": 1}


# Not in the contract suite: PostgreSQL makes the second insert wait for the first's commit
# (the unique index), which one task holding both transactions would wait for forever.
async def test_two_applies_inserting_the_same_fact_keep_one(store: InMemoryStore) -> None:
    async with store.apply_jobs([], "a", {}) as a, store.apply_jobs([], "b", {}) as b:
        assert (await a.insert_memories([mem("same")], "w"))[0] is not None
        assert (await b.insert_memories([mem("same")], "w"))[0] is None
    assert len(await store.list_memories(U, None, 10, False)) == 1


async def test_a_job_payload_that_is_not_json_is_refused(store: InMemoryStore) -> None:
    with pytest.raises(StoreError, match="JSON"):
        await store.append_turns(
            [NewTurn("u", "s", "user", "ok")],
            NewJob("ingest", U, JobPayload.from_json({"x": object()})),
        )
    assert await store.recent_turns("u", "s", 10) == []
    assert await store.pending_jobs() == 0
