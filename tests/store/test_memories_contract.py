"""The memories' contract, run unchanged on PostgreSQL and on ``memory://``.

The embedding space, inserting (duplicates, history, times, scope), listing, hybrid search
candidates, update, delete, erase.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import numpy as np
import pytest

from memhub.engine import retrieve
from memhub.errors import (
    ConfigurationError,
    Conflict,
    MemoryNotFound,
    ProviderError,
    StoreError,
    UsageError,
)
from memhub.filters import parse_filters
from memhub.store.protocol import Store
from memhub.store.records import NewJob, NewTurn, Scope, TextRanking
from tests.store.contract import U, V, X, Y, insert, mem, turns_and_their_memories


async def test_embedding_space_is_fixed_by_the_first_call(store: Store) -> None:
    await store.ensure_embedding_space("test-model", 3)
    with pytest.raises(ConfigurationError, match="memhub reembed") as info:
        await store.ensure_embedding_space("other", 3)
    assert "3-dimensional vectors of 'test-model'" in str(info.value)
    with pytest.raises(ConfigurationError, match="memhub reembed"):
        await store.ensure_embedding_space("test-model", 4)


async def test_vectors_of_another_dimension_are_refused(store: Store) -> None:
    with pytest.raises(UsageError, match="expected 3 dimensions, not 2"):
        await insert(store, mem("a", vector=[1.0, 0.0]))
    await insert(store, mem("a"))
    with pytest.raises(UsageError, match="dimensions"):
        await retrieve.candidates(store, U, "a", np.ones(4, np.float32), 5, None, False)


async def test_insert_skips_duplicates_of_current_memories_in_the_same_scope(
    store: Store,
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


async def test_insert_writes_add_history_and_defaults_times_to_now(store: Store) -> None:
    before = datetime.now(UTC)
    (mid,) = await insert(store, mem("likes tea", source_turn_ids=(4, 5)), actor="worker")
    after = datetime.now(UTC)
    assert mid is not None
    (event,) = await store.history(U, mid)
    assert (event.event, event.old_memory, event.new_memory) == ("ADD", None, "likes tea")
    assert event.actor == "worker" and event.turn_ids == (4, 5) and event.metadata == {}
    record = await store.get_memory(U, mid)
    assert record is not None and record.created_at.tzinfo is not None
    assert record.valid_from == record.created_at and record.updated_at is None
    assert before <= record.created_at <= after


async def test_given_times_are_kept_in_utc(store: Store) -> None:
    when = datetime(2023, 1, 2, 3, 4)
    (mid,) = await insert(store, mem("old fact", created_at=when, valid_from=when))
    record = await store.get_memory(None, mid)  # type: ignore[arg-type]
    assert record is not None and record.created_at == when.replace(tzinfo=UTC)


async def test_a_memory_needs_a_scope(store: Store) -> None:
    with pytest.raises(StoreError, match="memories_scoped"):
        await insert(store, mem("x", Scope()))


async def test_scope_narrows_by_each_id_it_sets(store: Store) -> None:
    (both,) = await insert(store, mem("a", Scope(user_id="u", agent_id="a")))
    assert both is not None
    assert await store.get_memory(U, both) is not None
    assert await store.get_memory(Scope(agent_id="a"), both) is not None
    assert await store.get_memory(None, both) is not None
    assert await store.get_memory(Scope(user_id="u", agent_id="b"), both) is None
    assert await store.get_memory(V, both) is None
    assert await store.list_memories(Scope(user_id="u", run_id="r"), None, 10, False) == []


async def test_list_memories_is_newest_first_with_limit_and_filters(store: Store) -> None:
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


async def test_same_time_lists_by_id(store: Store) -> None:
    when = datetime(2024, 1, 1, tzinfo=UTC)
    ids = await insert(store, *(mem(f"m{n}", created_at=when) for n in range(5)))
    listed = await store.list_memories(U, None, 10, False)
    assert [r.id for r in listed] == sorted(i for i in ids if i is not None)


async def test_records_do_not_share_metadata_with_the_store(store: Store) -> None:
    (mid,) = await insert(store, mem("x", metadata={"tags": ["a"]}))
    record = await store.get_memory(U, mid)  # type: ignore[arg-type]
    assert record is not None
    record.metadata["tags"].append("b")
    again = await store.get_memory(U, mid)  # type: ignore[arg-type]
    assert again is not None and again.metadata == {"tags": ["a"]}


async def test_vector_search_ranks_by_cosine(store: Store) -> None:
    await insert(
        store,
        mem("east", vector=X),
        mem("north", vector=Y),
        mem("north east", vector=[2.0, 2.0, 0.0]),  # stored normalised
        mem("no vector", vector=None),
        mem("other user", V, vector=X),
    )
    found = await retrieve.candidates(store, U, "zzz", np.asarray(X, np.float32), 2, None, False)
    assert [(c.record.memory, c.vector_rank) for c in found] == [("east", 1), ("north east", 2)]
    assert found[0].vector_similarity == pytest.approx(1.0)
    assert found[1].vector_similarity == pytest.approx(2**-0.5, abs=1e-6)
    assert all(c.text_rank is None and c.text_score is None for c in found)
    everything = await retrieve.candidates(
        store, U, "zzz", -np.asarray(X, np.float32), 10, None, False
    )
    ranked = sorted(everything, key=lambda c: c.vector_rank or 0)  # the list's order is free
    assert [c.record.memory for c in ranked] == ["north", "north east", "east"]
    assert ranked[-1].vector_similarity == pytest.approx(-1.0)


async def test_search_merges_both_lists_without_duplicates(store: Store) -> None:
    await insert(store, mem("tea with lemon", vector=X), mem("coffee", vector=Y))
    found = await retrieve.candidates(
        store, U, "lemon tea", np.asarray(X, np.float32), 5, None, False
    )
    assert len({c.record.id for c in found}) == len(found) == 2
    tea = next(c for c in found if c.record.memory == "tea with lemon")
    assert (tea.vector_rank, tea.text_rank) == (1, 1)
    coffee = next(c for c in found if c.record.memory == "coffee")
    assert (coffee.vector_rank, coffee.text_rank, coffee.text_score) == (2, None, None)


async def test_filters_apply_before_ranking(store: Store) -> None:
    await insert(
        store,
        mem("best tea", vector=X, metadata={"keep": False}),
        mem("good tea", vector=[1.0, 1.0, 0.0], metadata={"keep": True}),
    )
    keep = parse_filters({"keep": True})
    found = await retrieve.candidates(store, U, "tea", np.asarray(X, np.float32), 1, keep, False)
    assert [(c.record.memory, c.vector_rank, c.text_rank) for c in found] == [("good tea", 1, 1)]


async def test_superseded_memories_only_when_asked(store: Store) -> None:
    (old,) = await insert(store, mem("lives in Paris"))
    assert old is not None
    async with store.apply_jobs([], "t", {}) as batch:
        new = await batch.supersede(U, old, mem("lives in Rome"), datetime(2024, 1, 1, tzinfo=UTC))
    query = np.asarray(X, np.float32)
    assert [
        c.record.id for c in await retrieve.candidates(store, U, "lives", query, 5, None, False)
    ] == [new]
    assert len(await retrieve.candidates(store, U, "lives", query, 5, None, True)) == 2
    assert [r.id for r in await store.list_memories(U, None, 5, False)] == [new]
    assert len(await store.list_memories(U, None, 5, True)) == 2
    (again,) = await insert(store, mem("lives in Paris"))  # only current ones are duplicates
    assert again is not None


async def test_update_changes_text_vector_and_metadata_with_history(store: Store) -> None:
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
    found = await retrieve.candidates(store, U, "oolong", np.asarray(Y, np.float32), 5, None, False)
    assert found[0].vector_similarity == pytest.approx(1.0) and found[0].text_rank == 1
    (dup,) = await insert(store, mem("likes tea", hash_="likes tea"))  # old hash is free again
    assert dup is not None


async def test_update_and_delete_outside_the_scope_raise(store: Store) -> None:
    (mid,) = await insert(store, mem("x"))
    assert mid is not None
    vector = np.asarray(X, np.float32)
    with pytest.raises(MemoryNotFound):
        await store.update_memory(V, mid, "y", "y", vector, None, "user")
    with pytest.raises(MemoryNotFound):
        await store.delete_memory(V, mid, "user")
    with pytest.raises(MemoryNotFound):
        await store.delete_memory(U, uuid4(), "user")


async def test_update_cannot_duplicate_a_current_memory(store: Store) -> None:
    (a, b) = await insert(store, mem("a"), mem("b"))
    assert a is not None and b is not None
    with pytest.raises(Conflict, match="duplicate"):  # as PostgreSQL's unique index answers
        await store.update_memory(U, b, "a", "a", np.asarray(X, np.float32), None, "user")
    record = await store.get_memory(U, b)
    assert record is not None and record.memory == "b"


async def test_delete_keeps_history_and_frees_the_hash(store: Store) -> None:
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
    found = await retrieve.candidates(store, U, "x", np.asarray(Y, np.float32), 5, None, False)
    assert [c.record.id for c in found] == [again]


async def test_delete_all_removes_the_scope_only(store: Store) -> None:
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


async def test_delete_all_maps_run_id_to_the_turns_session(store: Store) -> None:
    await store.append_turns([NewTurn("u", "r1", "user", "a")], None)
    await store.append_turns([NewTurn("u", "r2", "user", "b")], None)
    await store.delete_all(Scope(user_id="u", run_id="r1"))
    assert await store.recent_turns("u", "r1", 10) == []
    assert len(await store.recent_turns("u", "r2", 10)) == 1
    with pytest.raises(StoreError):
        await store.delete_all(Scope())


async def test_search_takes_a_vector_still_being_computed(store: Store) -> None:
    await insert(store, mem("tea with lemon", vector=X), mem("coffee", vector=Y))

    async def later() -> np.ndarray:
        await asyncio.sleep(0)
        return np.asarray(X, np.float32)

    given = await retrieve.candidates(
        store, U, "lemon tea", np.asarray(X, np.float32), 5, None, False
    )
    awaited = await retrieve.candidates(store, U, "lemon tea", later(), 5, None, False)
    assert awaited == given


async def test_a_failed_query_vector_fails_the_search_and_leaves_it_usable(store: Store) -> None:
    await insert(store, mem("tea with lemon", vector=X))

    async def broken() -> np.ndarray:
        await asyncio.sleep(0.01)
        raise ProviderError("the embedder is down")

    for _ in range(30):  # more than any pool: a leaked connection would exhaust it
        with pytest.raises(ProviderError, match="embedder is down"):
            await retrieve.candidates(store, U, "lemon", broken(), 5, None, False)
    found = await retrieve.candidates(store, U, "lemon", np.asarray(X, np.float32), 5, None, False)
    assert [c.record.memory for c in found] == ["tea with lemon"]


async def test_a_candidate_knows_the_turn_said_before_its_first_source_turn(store: Store) -> None:
    first, _, _ = await turns_and_their_memories(store)
    found = await retrieve.candidates(store, U, "tea", np.asarray(X, np.float32), 10, None, False)
    assert {c.record.memory: c.previous_turn_id for c in found} == {
        "tea first": None,  # the first turn of its session
        "tea second": first[0],
        "tea elsewhere": None,  # another session's turns do not count
        "tea later": first[1],  # its first source turn decides, across the other session
        "tea without turns": None,
    }


async def test_a_memory_is_found_by_the_words_of_the_memories_said_around_it(
    store: Store,
) -> None:
    said = ["What did you paint last weekend?", "A sunset over the lake.", "Lovely colours."]
    question, answer, reply = said
    (first,) = await store.append_turns([NewTurn("u", "s1", "user", said[0])], None)
    # another session's turn, said in between, is not in s1's window of turns
    (other,) = await store.append_turns([NewTurn("u", "s2", "user", "Did you paint?")], None)
    rest = await store.append_turns([NewTurn("u", "s1", "user", text) for text in said[1:]], None)
    turns = [first, *rest]
    ids = await insert(
        store, *(mem(text, source_turn_ids=(turn,)) for text, turn in zip(said, turns, strict=True))
    )
    await insert(store, mem("Did you paint?", source_turn_ids=(other,)))

    async def found(
        query: str, weight: float = 0.3, most: int = 64, turns: int = 2
    ) -> dict[str, float]:
        ranking = TextRanking(
            neighbour_words_weight=weight, neighbour_words_max=most, neighbour_words_turns=turns
        )
        hits = await store.text_hits(U, query, 10, None, False, ranking)
        texts = {m.id: m.memory for m in await store.list_memories(U, None, 10, False)}
        return {texts[i]: s for i, s in zip(hits.ids, hits.scores, strict=True)}

    # The answer shares no word with the question asked of it, but follows the words: it is
    # found by them at a share of their weight, and so is the turn after it, two turns on.
    scores = await found("lake")
    assert set(scores) == set(said)
    assert 0 < scores[question] < scores[answer] and 0 < scores[reply] < scores[answer]
    assert set(await found("lake", weight=0.0)) == {answer}
    assert set(await found("lake", turns=0)) == {answer}
    # one turn on each side: the question and the reply, each next to the answer
    assert set(await found("lake", turns=1)) == set(said)
    assert set(await found("weekend", turns=1)) == {question, answer}
    assert set(await found("weekend", turns=2)) == set(said)
    # a neighbour of more distinct words than the limit (paint, last, weekend) lends none
    assert set(await found("weekend", most=2)) == {question}
    # s2's turn holds "paint" of its own and lends it to no turn of s1: the reply, two turns
    # after the question in s1, is not found at one turn
    assert set(await found("paint", turns=1)) == {question, answer, "Did you paint?"}
    # a memory taken out of reads lends its words to none
    assert ids[1] is not None
    await store.retire_memory(U, ids[1], "model", "asked to forget")
    assert await found("lake") == {}


async def test_an_erased_turn_leaves_its_place_in_the_window(store: Store) -> None:
    # One session where the user's turns and an agent's alternate; erasing the agent's scope
    # takes its turns out of the middle. The window counts turns as they were said, so the
    # user's turns two places apart are not each other's neighbours at one turn, and are at
    # two (docs/retrieval.md, "The words said around a memory").
    said = [
        ("u", None, "What did you paint last weekend?"),
        ("u", "helper", "Noted."),
        ("u", None, "A sunset over the lake."),
    ]
    turns = await store.append_turns([NewTurn(u, "s1", "user", t, a) for u, a, t in said], None)
    helper = Scope(user_id="u", agent_id="helper")
    await insert(
        store,
        mem(said[0][2], source_turn_ids=(turns[0],)),
        mem(said[1][2], scope=helper, source_turn_ids=(turns[1],)),
        mem(said[2][2], source_turn_ids=(turns[2],)),
    )
    assert await store.delete_all(helper) == 1

    async def found(query: str, turns: int) -> set[str]:
        ranking = TextRanking(neighbour_words_turns=turns)
        hits = await store.text_hits(U, query, 10, None, False, ranking)
        texts = {m.id: m.memory for m in await store.list_memories(U, None, 10, False)}
        return {texts[i] for i in hits.ids}

    assert await found("lake", turns=1) == {said[2][2]}
    assert await found("lake", turns=2) == {said[0][2], said[2][2]}
    # a turn added after the erase follows the session's latest turn still held
    (later,) = await store.append_turns([NewTurn("u", "s1", "user", "Lovely colours.")], None)
    await insert(store, mem("Lovely colours.", source_turn_ids=(later,)))
    assert await found("lake", turns=1) == {said[2][2], "Lovely colours."}


async def test_a_memory_of_another_scope_lends_no_words(store: Store) -> None:
    # Contrived: the question's memory is another user's (a store never writes that), so only
    # the scope condition on the previous memory keeps its words out of u's search.
    said = ["What did you paint last weekend?", "A sunset over the lake."]
    turns = await store.append_turns([NewTurn("u", "s1", "user", text) for text in said], None)
    await insert(store, mem(said[0], scope=V, source_turn_ids=(turns[0],)))
    await insert(store, mem(said[1], source_turn_ids=(turns[1],)), mem("I paint on Sundays."))
    found = await retrieve.candidates(store, U, "paint", np.asarray(X, np.float32), 10, None, False)
    # the answer is found by its vector and scored on its own words alone: none is the query's
    scores = {c.record.memory: c.text_score for c in found}
    assert scores[said[1]] is None and scores["I paint on Sundays."] is not None


@pytest.mark.parametrize("gone", ["deleted", "expired"])
async def test_a_deleted_or_expired_memory_lends_no_words(store: Store, gone: str) -> None:
    said = ["What did you paint last weekend?", "A sunset over the lake."]
    turns = await store.append_turns([NewTurn("u", "s1", "user", text) for text in said], None)
    past = datetime.now(UTC) - timedelta(days=1)
    question = mem(said[0], source_turn_ids=(turns[0],))
    if gone == "expired":
        question = mem(said[0], source_turn_ids=(turns[0],), expires_at=past)
    ids = await insert(store, question, mem(said[1], source_turn_ids=(turns[1],)))
    # a third memory holds the word, so the word has a weight the answer could borrow
    await insert(store, mem("I paint on Sundays."))
    if gone == "deleted":
        assert ids[0] is not None
        await store.delete_memory(U, ids[0], "user")
    found = await retrieve.candidates(store, U, "paint", np.asarray(X, np.float32), 10, None, False)
    scores = {c.record.memory: c.text_score for c in found}
    assert scores[said[1]] is None and said[0] not in scores
