"""The in-process store alone (no database): every protocol method, with PostgreSQL's rules."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone
from uuid import UUID, uuid4

import numpy as np
import pytest

from memhub.config import MemhubSettings
from memhub.errors import ConfigurationError, Conflict, MemoryNotFound, StoreError
from memhub.filters import parse_filters
from memhub.store.inmemory import InMemoryStore
from memhub.store.inmemory_text import bm25_scores, stem, terms
from memhub.store.protocol import Store
from memhub.store.records import Lane, Lease, NewJob, NewMemory, NewTurn, Scope

U = Scope(user_id="u")
V = Scope(user_id="v")
X, Y, Z = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]
INGEST = Lane(("ingest",))


@pytest.fixture
async def store() -> InMemoryStore:
    s = InMemoryStore()
    await s.ensure_embedding_space("test-model", 3)
    return s


def mem(
    text: str,
    scope: Scope = U,
    vector: Sequence[float] | None = X,
    hash_: str | None = None,
    **kw: object,
) -> NewMemory:
    return NewMemory(
        id=uuid4(),
        scope=scope,
        memory=text,
        hash=hash_ or text,
        embedding=None if vector is None else np.asarray(vector, dtype=np.float32),
        metadata=kw.pop("metadata", {}),  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )


async def insert(store: InMemoryStore, *memories: NewMemory, actor: str = "w") -> list[UUID | None]:
    async with store.apply_jobs([], "t", {}) as batch:
        return await batch.insert_memories(memories, actor)


async def queue(store: InMemoryStore, scope: Scope, n: int = 1) -> list[int]:
    """Queue ``n`` jobs of ``scope``; returns their ids."""
    before = {j.id for j in await store.list_jobs("queued", 10_000)}
    for _ in range(n):
        turn = NewTurn(user_id=scope.user_id or "x", session_id="s", role="user", message="m")
        await store.append_turns([turn], NewJob("ingest", scope))
    return sorted({j.id for j in await store.list_jobs("queued", 10_000)} - before)


def test_it_satisfies_the_store_protocol() -> None:
    store: Store = InMemoryStore()  # mypy checks the structural match
    assert store is not None


async def test_open_ignores_the_url_and_aclose_is_harmless() -> None:
    store = await InMemoryStore.open(MemhubSettings(database_url="memory://"))
    await store.aclose()
    await store.aclose()


# -- embedding space -----------------------------------------------------------------------
async def test_embedding_space_is_fixed_by_the_first_call(store: InMemoryStore) -> None:
    await store.ensure_embedding_space("test-model", 3)
    with pytest.raises(ConfigurationError, match="memhub reembed") as info:
        await store.ensure_embedding_space("other", 3)
    assert "3-dimensional vectors of 'test-model'" in str(info.value)
    with pytest.raises(ConfigurationError, match="memhub reembed"):
        await store.ensure_embedding_space("test-model", 4)


async def test_vectors_of_another_dimension_are_refused(store: InMemoryStore) -> None:
    with pytest.raises(StoreError, match="expected 3 dimensions, not 2"):
        await insert(store, mem("a", vector=[1.0, 0.0]))
    with pytest.raises(StoreError, match="expected 3 dimensions"):
        await store.search_candidates(U, "a", np.ones(4, np.float32), 5, None, False)


async def test_vectors_need_an_embedding_space() -> None:
    with pytest.raises(StoreError, match="ensure_embedding_space"):
        await insert(InMemoryStore(), mem("a"))


# -- conversations -------------------------------------------------------------------------
async def test_append_turns_numbers_them_and_queues_the_job_with_their_ids(
    store: InMemoryStore,
) -> None:
    turns = [NewTurn("u", "s", "user", "hi"), NewTurn("u", "s", "assistant", "hello")]
    ids = await store.append_turns(turns, NewJob("ingest", U, {"infer": True}))
    assert ids == [1, 2]
    assert await store.append_turns([NewTurn("u", "s", "user", "again")], None) == [3]
    (job,) = await store.list_jobs("queued", 10)
    assert job.payload == {"infer": True, "turn_ids": [1, 2]}
    assert job.scope == U and job.attempts == 0 and job.created_at.tzinfo is not None


async def test_turn_times_are_naive_utc(store: InMemoryStore) -> None:
    said = datetime(2024, 5, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    await store.append_turns([NewTurn("u", "s", "user", "a", created_at=said)], None)
    await store.append_turns([NewTurn("u", "s", "user", "b")], None)
    first, second = await store.recent_turns("u", "s", 10)
    assert first.created_at == datetime(2024, 5, 1, 10, 0)
    assert second.created_at is not None and second.created_at.tzinfo is None
    assert abs(second.created_at - datetime.now(UTC).replace(tzinfo=None)) < timedelta(seconds=5)


async def test_append_turns_is_all_or_nothing(store: InMemoryStore) -> None:
    turns = [NewTurn("u", "s", "user", "fine"), NewTurn("u", "s", "user", "nul \x00")]
    with pytest.raises(StoreError, match="NUL"):
        await store.append_turns(turns, NewJob("ingest", U))
    with pytest.raises(StoreError, match="JSON"):
        await store.append_turns(
            [NewTurn("u", "s", "user", "ok")], NewJob("ingest", U, {"x": object()})
        )
    assert await store.recent_turns("u", "s", 10) == []
    assert await store.pending_jobs() == 0


async def test_recent_turns_are_the_last_of_one_session_oldest_first(store: InMemoryStore) -> None:
    for n in range(5):
        await store.append_turns([NewTurn("u", "s", "user", f"m{n}", metadata={"n": n})], None)
    await store.append_turns([NewTurn("u", "other", "user", "x")], None)
    await store.append_turns([NewTurn("v", "s", "user", "y")], None)
    recent = await store.recent_turns("u", "s", 3)
    assert [t.message for t in recent] == ["m2", "m3", "m4"]
    assert recent[0].metadata == {"n": 2}
    assert recent[0].metadata is not None
    recent[0].metadata["n"] = 99
    assert (await store.recent_turns("u", "s", 3))[0].metadata == {"n": 2}


# -- inserting and reading memories --------------------------------------------------------
async def test_insert_skips_duplicates_of_current_memories_in_the_same_scope(
    store: InMemoryStore,
) -> None:
    first = await insert(store, mem("likes tea"), mem("likes tea"))
    assert first[0] is not None and first[1] is None
    again = await insert(
        store,
        mem("likes tea"),
        mem("likes tea", V),
        mem("likes tea", Scope(user_id="u", agent_id="a")),
    )
    assert again[0] is None and again[1] is not None and again[2] is not None
    assert len(await store.list_memories(U, None, 10, False)) == 2


async def test_insert_writes_add_history_and_defaults_times_to_now(store: InMemoryStore) -> None:
    (mid,) = await insert(store, mem("likes tea", source_turn_ids=(4, 5)), actor="worker")
    assert mid is not None
    (event,) = await store.history(U, mid)
    assert (event.event, event.old_memory, event.new_memory) == ("ADD", None, "likes tea")
    assert event.actor == "worker" and event.turn_ids == (4, 5) and event.metadata == {}
    record = await store.get_memory(U, mid)
    assert record is not None and record.created_at.tzinfo is not None
    assert record.valid_from == record.created_at and record.updated_at is None
    assert abs(record.created_at - datetime.now(UTC)) < timedelta(seconds=5)


async def test_given_times_are_kept_in_utc(store: InMemoryStore) -> None:
    when = datetime(2023, 1, 2, 3, 4)
    (mid,) = await insert(store, mem("old fact", created_at=when, valid_from=when))
    record = await store.get_memory(None, mid)  # type: ignore[arg-type]
    assert record is not None and record.created_at == when.replace(tzinfo=UTC)


async def test_a_memory_needs_a_scope(store: InMemoryStore) -> None:
    with pytest.raises(StoreError, match="memories_scoped"):
        await insert(store, mem("x", Scope()))


async def test_scope_narrows_by_each_id_it_sets(store: InMemoryStore) -> None:
    (both,) = await insert(store, mem("a", Scope(user_id="u", agent_id="a")))
    assert both is not None
    assert await store.get_memory(U, both) is not None
    assert await store.get_memory(Scope(agent_id="a"), both) is not None
    assert await store.get_memory(None, both) is not None
    assert await store.get_memory(Scope(user_id="u", agent_id="b"), both) is None
    assert await store.get_memory(V, both) is None
    assert await store.list_memories(Scope(user_id="u", run_id="r"), None, 10, False) == []


async def test_list_memories_is_newest_first_with_limit_and_filters(store: InMemoryStore) -> None:
    base = datetime(2024, 1, 1, tzinfo=UTC)
    await insert(
        store,
        mem("one", created_at=base, metadata={"topic": "food"}),
        mem("three", created_at=base + timedelta(days=2), metadata={"topic": "work"}),
        mem("two", created_at=base + timedelta(days=1), metadata={"topic": "food"}),
    )
    listed = await store.list_memories(U, None, 10, False)
    assert [r.memory for r in listed] == ["three", "two", "one"]
    assert [r.memory for r in await store.list_memories(U, None, 2, False)] == ["three", "two"]
    food = parse_filters({"topic": "food", "created_at": {"gte": "2024-01-02"}})
    assert [r.memory for r in await store.list_memories(U, food, 10, False)] == ["two"]


async def test_same_time_lists_by_id(store: InMemoryStore) -> None:
    when = datetime(2024, 1, 1, tzinfo=UTC)
    ids = await insert(store, *(mem(f"m{n}", created_at=when) for n in range(5)))
    listed = await store.list_memories(U, None, 10, False)
    assert [r.id for r in listed] == sorted(i for i in ids if i is not None)


async def test_records_do_not_share_metadata_with_the_store(store: InMemoryStore) -> None:
    (mid,) = await insert(store, mem("x", metadata={"tags": ["a"]}))
    record = await store.get_memory(U, mid)  # type: ignore[arg-type]
    assert record is not None
    record.metadata["tags"].append("b")
    again = await store.get_memory(U, mid)  # type: ignore[arg-type]
    assert again is not None and again.metadata == {"tags": ["a"]}


# -- search ----------------------------------------------------------------------------------
async def test_vector_search_ranks_by_cosine(store: InMemoryStore) -> None:
    await insert(
        store,
        mem("east", vector=X),
        mem("north", vector=Y),
        mem("north east", vector=[2.0, 2.0, 0.0]),  # stored normalised
        mem("no vector", vector=None),
        mem("other user", V, vector=X),
    )
    found = await store.search_candidates(U, "zzz", np.asarray(X, np.float32), 2, None, False)
    assert [(c.record.memory, c.vector_rank) for c in found] == [("east", 1), ("north east", 2)]
    assert found[0].vector_similarity == pytest.approx(1.0)
    assert found[1].vector_similarity == pytest.approx(2**-0.5, abs=1e-6)
    assert all(c.text_rank is None and c.text_score is None for c in found)
    everything = await store.search_candidates(
        U, "zzz", -np.asarray(X, np.float32), 10, None, False
    )
    assert [c.record.memory for c in everything] == ["north", "north east", "east"]
    assert everything[-1].vector_similarity == pytest.approx(-1.0)


async def test_text_search_ranks_like_ts_rank(store: InMemoryStore) -> None:
    await insert(
        store,
        mem("Alice went hiking in the Alps", vector=Z),
        mem("Bob hikes and hikes and hikes", vector=Z),
        mem("Alice likes hiking with Bob", vector=Z),
        mem("nothing relevant", vector=Z),
    )
    query = np.asarray(X, np.float32)
    found = await store.search_candidates(U, "Alice's hike with Bob", query, 10, None, False)
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
    only_stop = await store.search_candidates(U, "the and of", query, 10, None, False)
    assert all(c.text_rank is None for c in only_stop)


async def test_search_merges_both_lists_without_duplicates(store: InMemoryStore) -> None:
    await insert(store, mem("tea with lemon", vector=X), mem("coffee", vector=Y))
    found = await store.search_candidates(U, "lemon tea", np.asarray(X, np.float32), 5, None, False)
    assert len({c.record.id for c in found}) == len(found) == 2
    tea = next(c for c in found if c.record.memory == "tea with lemon")
    assert (tea.vector_rank, tea.text_rank) == (1, 1)
    coffee = next(c for c in found if c.record.memory == "coffee")
    assert (coffee.vector_rank, coffee.text_rank, coffee.text_score) == (2, None, None)


async def test_filters_apply_before_ranking(store: InMemoryStore) -> None:
    await insert(
        store,
        mem("best tea", vector=X, metadata={"keep": False}),
        mem("good tea", vector=[1.0, 1.0, 0.0], metadata={"keep": True}),
    )
    keep = parse_filters({"keep": True})
    found = await store.search_candidates(U, "tea", np.asarray(X, np.float32), 1, keep, False)
    assert [(c.record.memory, c.vector_rank, c.text_rank) for c in found] == [("good tea", 1, 1)]


async def test_superseded_memories_only_when_asked(store: InMemoryStore) -> None:
    (old,) = await insert(store, mem("lives in Paris"))
    assert old is not None
    async with store.apply_jobs([], "t", {}) as batch:
        new = await batch.supersede(U, old, mem("lives in Rome"), datetime(2024, 1, 1, tzinfo=UTC))
    query = np.asarray(X, np.float32)
    assert [
        c.record.id for c in await store.search_candidates(U, "lives", query, 5, None, False)
    ] == [new]
    assert len(await store.search_candidates(U, "lives", query, 5, None, True)) == 2
    assert [r.id for r in await store.list_memories(U, None, 5, False)] == [new]
    assert len(await store.list_memories(U, None, 5, True)) == 2
    (again,) = await insert(store, mem("lives in Paris"))  # only current ones are duplicates
    assert again is not None


# -- update, delete, history -----------------------------------------------------------------
async def test_update_changes_text_vector_and_metadata_with_history(store: InMemoryStore) -> None:
    (mid,) = await insert(store, mem("likes tea", metadata={"a": 1}))
    assert mid is not None
    record = await store.update_memory(
        U, mid, "likes green tea", "h2", np.asarray(Y, np.float32), None, "user"
    )
    assert (record.memory, record.hash, record.metadata) == ("likes green tea", "h2", {"a": 1})
    assert record.updated_at is not None
    record = await store.update_memory(
        None, mid, "likes oolong", "h3", np.asarray(Y, np.float32), {"b": 2}, "user"
    )
    assert record.metadata == {"b": 2}
    events = await store.history(U, mid)
    assert [(e.event, e.old_memory, e.new_memory) for e in events] == [
        ("ADD", None, "likes tea"),
        ("UPDATE", "likes tea", "likes green tea"),
        ("UPDATE", "likes green tea", "likes oolong"),
    ]
    found = await store.search_candidates(U, "oolong", np.asarray(Y, np.float32), 5, None, False)
    assert found[0].vector_similarity == pytest.approx(1.0) and found[0].text_rank == 1
    (dup,) = await insert(store, mem("likes tea", hash_="likes tea"))  # old hash is free again
    assert dup is not None


async def test_update_and_delete_outside_the_scope_raise(store: InMemoryStore) -> None:
    (mid,) = await insert(store, mem("x"))
    assert mid is not None
    vector = np.asarray(X, np.float32)
    with pytest.raises(MemoryNotFound):
        await store.update_memory(V, mid, "y", "y", vector, None, "user")
    with pytest.raises(MemoryNotFound):
        await store.delete_memory(V, mid, "user")
    with pytest.raises(MemoryNotFound):
        await store.delete_memory(U, uuid4(), "user")


async def test_update_cannot_duplicate_a_current_memory(store: InMemoryStore) -> None:
    (a, b) = await insert(store, mem("a"), mem("b"))
    assert a is not None and b is not None
    with pytest.raises(Conflict, match="duplicate"):  # as PostgreSQL's unique index answers
        await store.update_memory(U, b, "a", "a", np.asarray(X, np.float32), None, "user")
    record = await store.get_memory(U, b)
    assert record is not None and record.memory == "b"


async def test_delete_keeps_history_and_frees_the_hash(store: InMemoryStore) -> None:
    (mid,) = await insert(store, mem("x"))
    assert mid is not None
    await store.delete_memory(None, mid, "user")
    assert await store.get_memory(None, mid) is None
    events = await store.history(U, mid)
    assert [(e.event, e.old_memory, e.new_memory, e.actor) for e in events][-1] == (
        "DELETE",
        "x",
        None,
        "user",
    )
    assert await store.history(V, mid) == []
    (again,) = await insert(store, mem("x", vector=Y))
    found = await store.search_candidates(U, "x", np.asarray(Y, np.float32), 5, None, False)
    assert [c.record.id for c in found] == [again]


async def test_delete_all_removes_the_scope_only(store: InMemoryStore) -> None:
    ids = await insert(store, mem("u1"), mem("u2"), mem("v1", V))
    await store.append_turns([NewTurn("u", "s", "user", "hi")], NewJob("ingest", U))
    await store.append_turns([NewTurn("v", "s", "user", "hi")], NewJob("ingest", V))
    assert await store.delete_all(U) == 2
    assert await store.list_memories(U, None, 10, False) == []
    assert await store.history(None, ids[0]) == []  # type: ignore[arg-type]
    assert await store.recent_turns("u", "s", 10) == []
    assert await store.pending_jobs(U) == 0
    assert [r.memory for r in await store.list_memories(V, None, 10, False)] == ["v1"]
    assert len(await store.history(None, ids[2])) == 1  # type: ignore[arg-type]
    assert len(await store.recent_turns("v", "s", 10)) == 1 and await store.pending_jobs(V) == 1


async def test_delete_all_maps_run_id_to_the_turns_session(store: InMemoryStore) -> None:
    await store.append_turns([NewTurn("u", "r1", "user", "a")], None)
    await store.append_turns([NewTurn("u", "r2", "user", "b")], None)
    await store.delete_all(Scope(user_id="u", run_id="r1"))
    assert await store.recent_turns("u", "r1", 10) == []
    assert len(await store.recent_turns("u", "r2", 10)) == 1
    with pytest.raises(StoreError):
        await store.delete_all(Scope())


async def test_reset_removes_everything_and_restarts_ids(store: InMemoryStore) -> None:
    await insert(store, mem("x"))
    await store.append_turns([NewTurn("u", "s", "user", "hi")], NewJob("ingest", U))
    await store.reset()
    assert await store.list_memories(U, None, 10, False) == []
    assert await store.pending_jobs() == 0
    assert await store.append_turns([NewTurn("u", "s", "user", "hi")], None) == [1]
    await store.ensure_embedding_space("test-model", 3)  # the embedding space survives


# -- jobs (the queue's rules are in tests/store/test_queue_contract.py, for both stores) ----
LEASE = Lease("w", 60.0, 3)


async def test_an_apply_commits_when_its_block_ends_normally(store: InMemoryStore) -> None:
    (job_id,) = await queue(store, U)
    jobs = await store.claim_jobs(INGEST, 10, LEASE)
    async with store.apply_jobs(jobs, "w", {}) as batch:
        await batch.insert_memories([mem("fact")], "worker")
        await batch.complete([job_id])
        assert await store.pending_jobs() == 1  # completion applies at the commit
    assert [r.memory for r in await store.list_memories(U, None, 10, False)] == ["fact"]
    assert await store.pending_jobs() == 0
    with pytest.raises(StoreError, match="closed"):
        await batch.complete([job_id])


async def test_an_exception_rolls_the_apply_back(store: InMemoryStore) -> None:
    (job_id,) = await queue(store, U)
    jobs = await store.claim_jobs(INGEST, 10, LEASE)
    with pytest.raises(RuntimeError):
        async with store.apply_jobs(jobs, "w", {}) as batch:
            await batch.insert_memories([mem("fact")], "worker")
            await batch.complete([job_id])
            raise RuntimeError("boom")
    assert await store.list_memories(U, None, 10, False) == []
    assert await store.pending_jobs() == 1


async def test_a_failed_write_dooms_the_apply(store: InMemoryStore) -> None:
    (job_id,) = await queue(store, U)
    jobs = await store.claim_jobs(INGEST, 10, LEASE)
    async with store.apply_jobs(jobs, "w", {}) as batch:
        await batch.insert_memories([mem("kept?")], "worker")
        with pytest.raises(StoreError):
            await batch.insert_memories([mem("bad", vector=[1.0])], "worker")
        with pytest.raises(StoreError, match="aborted"):
            await batch.complete([job_id])
    assert await store.list_memories(U, None, 10, False) == []
    assert await store.pending_jobs() == 1


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


async def test_two_applies_inserting_the_same_fact_keep_one(store: InMemoryStore) -> None:
    async with store.apply_jobs([], "a", {}) as a, store.apply_jobs([], "b", {}) as b:
        assert (await a.insert_memories([mem("same")], "w"))[0] is not None
        assert (await b.insert_memories([mem("same")], "w"))[0] is None
    assert len(await store.list_memories(U, None, 10, False)) == 1


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
async def test_supersede_closes_the_old_fact_and_links_the_history(store: InMemoryStore) -> None:
    (old,) = await insert(store, mem("lives in Paris", source_turn_ids=(1,)))
    assert old is not None
    closed = datetime(2024, 3, 1, tzinfo=UTC)
    async with store.apply_jobs([], "t", {}) as batch:
        new = await batch.supersede(U, old, mem("lives in Rome", source_turn_ids=(2,)), closed)
    record = await store.get_memory(U, old)
    assert record is not None and record.valid_to == closed and record.superseded_by == new
    events = await store.history(U, new)
    assert [(e.memory_id, e.event) for e in events] == [
        (old, "ADD"),
        (old, "SUPERSEDE"),  # the closing event first: history reads in the order of events
        (new, "ADD"),
    ]
    assert events[1].metadata == {"superseded_by": str(new)} and events[1].turn_ids == (2,)
    assert (events[1].old_memory, events[1].new_memory) == ("lives in Paris", "lives in Rome")


async def test_supersede_by_a_stored_fact_links_to_it(store: InMemoryStore) -> None:
    old, existing = await insert(store, mem("lives in Paris"), mem("lives in Rome"))
    assert old is not None and existing is not None
    async with store.apply_jobs([], "t", {}) as batch:
        successor = await batch.supersede(U, old, mem("lives in Rome"), datetime.now(UTC))
    assert successor == existing
    event = (await store.history(U, old))[-1]
    assert event.event == "SUPERSEDE" and event.metadata == {"superseded_by": str(existing)}


async def test_refine_rewrites_in_place_unless_the_text_exists(store: InMemoryStore) -> None:
    a, b = await insert(store, mem("likes tea", source_turn_ids=(1,)), mem("likes coffee"))
    assert a is not None and b is not None
    vector = np.asarray(Y, np.float32)
    async with store.apply_jobs([], "t", {}) as batch:
        assert await batch.refine(U, a, "likes green tea", "h-green", vector, [7])
        assert not await batch.refine(U, a, "likes coffee", "likes coffee", vector, [8])
        with pytest.raises(MemoryNotFound):
            await batch.refine(V, a, "x", "x", vector, [9])
        await batch.complete([])  # the transaction is still usable
    record = await store.get_memory(U, a)
    assert record is not None
    assert (record.memory, record.source_turn_ids) == ("likes green tea", (1, 7))
    event = (await store.history(U, a))[-1]
    assert (event.event, event.actor, event.turn_ids) == ("UPDATE", "consolidation", (7,))


async def test_forget_and_retire_turn_memories(store: InMemoryStore) -> None:
    fact, _raw1, raw2, other = await insert(
        store,
        mem("likes tea"),
        mem("turn one", memory_type="turn", source_turn_ids=(1,)),
        mem("turn two", memory_type="turn", source_turn_ids=(2,)),
        mem("turn one", V, memory_type="turn", source_turn_ids=(1,)),
    )
    assert fact is not None
    async with store.apply_jobs([], "t", {}) as batch:
        await batch.forget(U, fact, [3])
        assert await batch.retire_turn_memories(U, [1, 5]) == 1
    left = {r.id for r in await store.list_memories(Scope(), None, 10, False)}
    assert left == {raw2, other}
    event = (await store.history(U, fact))[-1]
    assert (event.event, event.old_memory, event.turn_ids) == ("DELETE", "likes tea", (3,))


async def test_rollback_undoes_every_consolidation_write(store: InMemoryStore) -> None:
    a, b, c = await insert(
        store,
        mem("a", vector=X),
        mem("b", vector=Y),
        mem("c", vector=[0.0, 1.0, 1.0], memory_type="turn", source_turn_ids=(1,)),
    )
    assert a is not None and b is not None and c is not None
    before = {r.id: r for r in await store.list_memories(U, None, 10, True)}
    histories = {i: await store.history(U, i) for i in before}
    with pytest.raises(RuntimeError):
        async with store.apply_jobs([], "t", {}) as batch:
            await batch.insert_memories([mem("d")], "w")
            await batch.refine(U, a, "a2", "a2", np.asarray(Z, np.float32), [2])
            await batch.supersede(U, b, mem("b2", vector=Z), datetime.now(UTC))
            await batch.forget(U, a, [3])
            await batch.retire_turn_memories(U, [1])
            await batch.enqueue(NewJob("consolidate", U), None, False)
            await batch.record_usage(
                U, "m", {"calls": 1, "prompt_tokens": 5, "completion_tokens": 2}, 1, 1, {}
            )
            raise RuntimeError("boom")
    after = {r.id: r for r in await store.list_memories(U, None, 10, True)}
    assert after == before
    assert {i: await store.history(U, i) for i in before} == histories
    found = await store.search_candidates(U, "a", np.asarray(X, np.float32), 1, None, False)
    assert found[0].record.id == a and found[0].vector_similarity == pytest.approx(1.0)
    (again,) = await insert(store, mem("b2", vector=Z))  # the successor's hash is free
    assert again is not None
    assert await store.pending_jobs() == 0
    assert (await store.usage_stats())["llm_calls"] == 0


async def test_enqueued_jobs_and_usage_arrive_with_the_commit(store: InMemoryStore) -> None:
    later = datetime.now(UTC) + timedelta(hours=1)
    async with store.apply_jobs([], "t", {}) as batch:
        await batch.enqueue(NewJob("consolidate", U, {"turn_ids": [1]}), None, False)
        await batch.enqueue(NewJob("consolidate", V), later, False)
        await batch.record_usage(
            U, "m", {"calls": 2, "prompt_tokens": 30, "completion_tokens": 10}, 4, 1, {"ADD": 1}
        )
        assert await store.pending_jobs() == 0
        (newer,) = await queue(store, U)  # queued by someone else while the batch is open
    jobs = await store.list_jobs("queued", 10)
    # ids are handed out at the commit (a plain reference; PostgreSQL's come at the insert)
    assert [j.kind for j in jobs] == ["ingest", "consolidate", "consolidate"]
    assert jobs[0].id == newer and jobs[1].payload == {"turn_ids": [1]}
    claimed = await store.claim_jobs(Lane(("consolidate",)), 10, LEASE)
    assert [j.scope for j in claimed] == [U]  # V's job waits until later
    stats = await store.usage_stats()
    assert stats["llm_calls"] == 2 and stats["turns"] == 4 and stats["tokens_per_turn"] == 10


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
    found = await store.search_candidates(U, "tea", np.asarray(X, np.float32), 1, None, False)
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
