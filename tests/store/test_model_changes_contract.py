"""The model changes, run unchanged on PostgreSQL and on ``memory://``: every retire, supersede
and reword a model made, newest first, counted for the budget, and undone in one step under the
same memory id with its history continuous."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

import numpy as np
import pytest

from memhub.errors import MemoryNotFound, NotRestorable
from memhub.store.protocol import Store
from memhub.store.records import NewTurn
from tests.store.contract import U, V, Y, insert, mem


async def _three_changes(store: Store) -> tuple[UUID, UUID, UUID, UUID]:
    """tea retired by an agent, Paris superseded by Rome, peanuts reworded: by models."""
    tea, paris, peanuts, cat = await insert(
        store, mem("likes tea"), mem("lives in Paris"), mem("allergic to peanuts"), mem("has a cat")
    )
    assert tea and paris and peanuts and cat
    await store.retire_memory(U, tea, "agent:support", "forget tool: forget my tea", [3])
    async with store.apply_jobs([], "t", {}) as batch:
        rome = await batch.supersede(
            U, paris, mem("lives in Rome", source_turn_ids=(4,)), datetime.now(UTC)
        )
        vector = np.asarray(Y, np.float32)
        assert await batch.refine(U, peanuts, "loves peanuts", "loves peanuts", vector, [5])
    await store.retire_memory(U, cat, "user", "the user's own retire")  # a person: not listed
    return tea, paris, peanuts, rome


async def test_the_list_holds_every_model_change_newest_first(store: Store) -> None:
    tea, paris, peanuts, rome = await _three_changes(store)
    changes = await store.model_changes(U, 10)
    assert [(c.event, c.memory_id) for c in changes] == [
        ("UPDATE", peanuts),
        ("SUPERSEDE", paris),
        ("RETIRE", tea),
    ]
    update, supersede, retire = changes
    assert (update.before, update.after, update.actor) == (
        "allergic to peanuts",
        "loves peanuts",
        "consolidation",
    )
    assert update.turn_ids == (5,) and not update.undone
    assert (supersede.after, supersede.successor_id, supersede.turn_ids) == (
        "lives in Rome",
        rome,
        (4,),
    )
    assert (retire.actor, retire.reason, retire.turn_ids) == (
        "agent:support",
        "forget tool: forget my tea",
        (3,),
    )
    assert await store.model_changes(V, 10) == []  # another user's list is its own
    page = await store.model_changes(U, 1, before=update.id)
    assert [c.id for c in page] == [supersede.id]


async def test_the_budget_counts_one_users_model_changes_in_a_window(store: Store) -> None:
    await _three_changes(store)
    hour_ago = datetime.now(UTC) - timedelta(hours=1)
    assert await store.count_model_changes("u", hour_ago) == 3  # the user's own retire: not
    assert await store.count_model_changes("v", hour_ago) == 0
    assert await store.count_model_changes("u", datetime.now(UTC) + timedelta(hours=1)) == 0
    async with store.apply_jobs([], "t", {}) as batch:  # the apply phase counts the same
        assert await batch.count_model_changes("u", hour_ago) == 3


async def test_each_change_is_undone_in_one_step_under_the_same_id(store: Store) -> None:
    tea, paris, peanuts, rome = await _three_changes(store)
    update, supersede, retire = await store.model_changes(U, 10)
    with pytest.raises(MemoryNotFound):  # another user's change is not found
        await store.undo_model_change(V, update.id, "user")

    reworded = await store.undo_model_change(U, update.id, "user")
    assert (reworded.id, reworded.memory) == (peanuts, "allergic to peanuts")
    reopened = await store.undo_model_change(U, supersede.id, "user")
    assert (reopened.id, reopened.memory, reopened.valid_to) == (paris, "lives in Paris", None)
    restored = await store.undo_model_change(U, retire.id, "user")
    assert (restored.id, restored.valid_to) == (tea, None)

    current = {r.memory for r in await store.list_memories(U, None, 10, False)}
    assert current == {"likes tea", "lives in Paris", "allergic to peanuts"}
    assert [r.record.id for r in await store.retired_memories(U, 10)][:1] == [rome]
    events = await store.history(U, peanuts)
    assert [(e.event, e.new_memory, e.metadata.get("undoes")) for e in events] == [
        ("ADD", "allergic to peanuts", None),
        ("UPDATE", "loves peanuts", None),
        ("RESTORE", "allergic to peanuts", update.id),
    ]
    listed = await store.model_changes(U, 10)
    # Rome, retired as Paris came back, was retired by the person's undo: not a model change
    assert [(c.id, c.undone) for c in listed] == [(c.id, True) for c in (update, supersede, retire)]
    with pytest.raises(NotRestorable, match="undone already"):
        await store.undo_model_change(U, update.id, "user")


async def test_undo_refuses_what_is_no_model_change_or_changed_since(store: Store) -> None:
    (peanuts,) = await insert(store, mem("allergic to peanuts"))
    assert peanuts is not None
    added = (await store.history(U, peanuts))[0]
    with pytest.raises(NotRestorable, match="not a model's change"):
        await store.undo_model_change(U, added.id, "user")
    vector = np.asarray(Y, np.float32)
    async with store.apply_jobs([], "t", {}) as batch:
        assert await batch.refine(U, peanuts, "loves peanuts", "loves peanuts", vector, [5])
    async with store.apply_jobs([], "t", {}) as batch:
        assert await batch.refine(U, peanuts, "eats peanuts", "eats peanuts", vector, [6])
    second, first = await store.model_changes(U, 10)
    with pytest.raises(NotRestorable, match="changed after"):
        await store.undo_model_change(U, first.id, "user")
    await store.undo_model_change(U, second.id, "user")
    back = await store.undo_model_change(U, first.id, "user")
    assert (back.id, back.memory) == (peanuts, "allergic to peanuts")


async def test_a_forget_retires_the_episodes_that_said_it_listed_not_counted(
    store: Store,
) -> None:
    paris, said, other, elsewhere, fact = await insert(
        store,
        mem("lives in Paris", source_turn_ids=(1,)),
        mem("I live in Paris.", role="user", source_turn_ids=(1,)),
        mem("I have a dog.", role="user", source_turn_ids=(2,)),
        mem("I live in Paris.", scope=V, role="user", source_turn_ids=(1,)),
        mem("likes tea", source_turn_ids=(1,)),  # a fact of that turn: not an episode
    )
    assert paris and said and other and elsewhere and fact
    async with store.apply_jobs([], "t", {}) as batch:
        await batch.forget(U, paris, [3], "asked (turn 3)")
        assert await batch.retire_episodes(U, [1, 3], "asked (turn 3)", paris) == 1
    current = {r.memory for r in await store.list_memories(U, None, 10, False)}
    assert current == {"I have a dog.", "likes tea"}
    assert {r.memory for r in await store.list_memories(V, None, 10, False)} == {"I live in Paris."}
    episode, forget = await store.model_changes(U, 10)
    assert (episode.memory_id, episode.event, episode.reason) == (said, "RETIRE", "asked (turn 3)")
    assert forget.memory_id == paris
    hour_ago = datetime.now(UTC) - timedelta(hours=1)
    assert await store.count_model_changes("u", hour_ago) == 1  # the forget, once
    back = await store.undo_model_change(U, episode.id, "user")
    assert (back.id, back.valid_to) == (said, None)


async def test_the_budget_counts_per_conversation_by_the_turns_cited(store: Store) -> None:
    first = await store.append_turns([NewTurn("u", "s1", "user", "a")] * 2, None)
    other = await store.append_turns([NewTurn("u", "s2", "user", "c")], None)
    tea, paris, cat = await insert(store, mem("likes tea"), mem("lives in Paris"), mem("cat"))
    assert tea and paris and cat
    await store.retire_memory(U, tea, "agent:a", "x", [first[0]])
    await store.retire_memory(U, cat, "agent:a", "x", [other[0]])
    async with store.apply_jobs([], "t", {}) as batch:
        await batch.supersede(
            U, paris, mem("lives in Rome", source_turn_ids=(first[1],)), datetime.now(UTC)
        )
    hour_ago = datetime.now(UTC) - timedelta(hours=1)
    counts = [await store.count_model_changes("u", hour_ago, s) for s in ("s1", "s2", "s3")]
    assert counts == [2, 1, 0]
    assert await store.count_model_changes("v", hour_ago, "s1") == 0
    async with store.apply_jobs([], "t", {}) as batch:
        assert await batch.count_model_changes("u", hour_ago, "s1") == 2
