"""Retired memories, run unchanged on PostgreSQL and on ``memory://``: what a model removes is
retired (out of every read, restorable), purged after the retention, erased by the user."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

import numpy as np
import pytest

from memhub.engine import retrieve
from memhub.errors import MemoryNotFound, NotRestorable
from memhub.filters import Filter, parse_filters
from memhub.memory.compat import as_of_filters
from memhub.store.protocol import Store
from tests.store.contract import U, V, X, Y, insert, mem


async def _visible(store: Store) -> set[str]:
    """Every memory any read returns: current, superseded, by text or vector search."""
    listed = await store.list_memories(U, None, 100, True)
    found = await retrieve.candidates(
        store, U, "tea", np.asarray(X, np.float32), 10, None, include_superseded=True
    )
    return {r.memory for r in listed} | {c.record.memory for c in found}


def _valid_at(moment: datetime) -> Filter:
    """The filter ``search(as_of=moment)`` applies."""
    return parse_filters(as_of_filters(moment, None))


async def test_retire_hides_restore_brings_back_with_history(store: Store) -> None:
    (tea,) = await insert(store, mem("likes tea"))
    assert tea is not None
    await store.retire_memory(U, tea, "agent:support", "forget tool: forget my tea")
    assert await _visible(store) == set()
    assert await store.get_memory(U, tea) is None
    (retired,) = await store.retired_memories(U, 10)
    assert (retired.record.memory, retired.actor) == ("likes tea", "agent:support")
    assert retired.reason == "forget tool: forget my tea"
    assert await store.retired_memories(V, 10) == []
    with pytest.raises(MemoryNotFound):  # another scope's id is not found, whatever its state
        await store.restore_memory(V, tea, "user")
    with pytest.raises(MemoryNotFound):  # retired memories cannot be edited
        await store.update_memory(U, tea, None, None, None, {"a": 1}, "user")

    restored = await store.restore_memory(U, tea, "user")
    assert restored.valid_to is None and await _visible(store) == {"likes tea"}
    events = [(e.event, e.actor) for e in await store.history(U, tea)]
    assert events == [("ADD", "w"), ("RETIRE", "agent:support"), ("RESTORE", "user")]
    with pytest.raises(NotRestorable, match="is current"):
        await store.restore_memory(U, tea, "user")


async def test_the_same_fact_can_be_said_again_after_it_was_retired(store: Store) -> None:
    (first,) = await insert(store, mem("likes tea"))
    assert first is not None
    await store.retire_memory(U, first, "consolidation", "asked")
    (again,) = await insert(store, mem("likes tea"))
    assert again is not None and again != first
    with pytest.raises(NotRestorable, match="equal memory is current"):
        await store.restore_memory(U, first, "user")


async def test_restoring_a_superseded_fact_retires_its_successor(store: Store) -> None:
    (paris,) = await insert(store, mem("lives in Paris"))
    assert paris is not None
    async with store.apply_jobs([], "t", {}) as batch:
        rome = await batch.supersede(U, paris, mem("lives in Rome"), datetime.now(UTC))
    async with store.apply_jobs([], "t", {}) as batch:
        oslo = await batch.supersede(U, rome, mem("lives in Oslo"), datetime.now(UTC))
    restored = await store.restore_memory(U, paris, "user")
    assert restored.valid_to is None and restored.superseded_by is None
    current = {r.memory for r in await store.list_memories(U, None, 10, False)}
    assert current == {"lives in Paris"}  # one current fact, not two
    (retired,) = await store.retired_memories(U, 10)
    assert retired.record.id == oslo and retired.reason == f"restored {paris}"
    assert (await store.history(U, paris))[-1].metadata == {"retired": str(oslo)}


async def test_restore_undoes_a_models_rewording(store: Store) -> None:
    """A model's UPDATE keeps the id and the earlier wording, as a version restore brings back."""
    said = datetime.now(UTC) - timedelta(hours=1)
    (allergy,) = await insert(
        store, mem("allergic to peanuts", source_turn_ids=(1,), valid_from=said)
    )
    assert allergy is not None
    vector = np.asarray(Y, np.float32)
    async with store.apply_jobs([], "t", {}) as batch:
        assert await batch.refine(U, allergy, "loves peanuts", "loves peanuts", vector, [2])
    event = (await store.history(U, allergy))[-1]
    assert (event.event, event.old_memory, event.new_memory) == (
        "UPDATE",
        "allergic to peanuts",
        "loves peanuts",
    )
    version = UUID(event.metadata["previous_version"])
    # the earlier wording reads nowhere: not current, and valid at no moment (as_of)
    assert {r.memory for r in await store.list_memories(U, None, 10, False)} == {"loves peanuts"}
    at_the_time = await retrieve.candidates(
        store,
        U,
        "peanuts",
        np.asarray(X, np.float32),
        10,
        _valid_at(said + timedelta(minutes=1)),
        include_superseded=True,
    )
    assert [c.record.memory for c in at_the_time] == ["loves peanuts"]
    kept = await store.get_memory(U, version)
    assert kept is not None and kept.superseded_by == allergy
    with pytest.raises(MemoryNotFound):
        await store.restore_memory(V, version, "user")

    restored = await store.restore_memory(U, version, "user")
    # the earlier wording comes back under the same id; the kept version is not needed now
    assert (restored.id, restored.memory) == (allergy, "allergic to peanuts")
    assert restored.source_turn_ids == (1,)
    current = await store.list_memories(U, None, 10, False)
    assert [(r.id, r.memory) for r in current] == [(allergy, "allergic to peanuts")]
    assert await store.get_memory(U, version) is None
    events = [(e.event, e.new_memory) for e in await store.history(U, allergy)]
    assert events[-2:] == [("UPDATE", "loves peanuts"), ("RESTORE", "allergic to peanuts")]
    (found,) = await retrieve.candidates(
        store, U, "unrelated", np.asarray(X, np.float32), 10, None, False
    )
    assert found.record.id == allergy and found.vector_rank == 1  # its vector came back
    assert await store.retired_memories(U, 10) == []  # nothing moved, nothing retired


async def test_the_users_delete_takes_a_facts_earlier_wordings_along(store: Store) -> None:
    paris, tea = await insert(store, mem("lives in Paris"), mem("likes tea"))
    assert paris is not None and tea is not None
    vector = np.asarray(Y, np.float32)
    async with store.apply_jobs([], "t", {}) as batch:
        rome = await batch.supersede(U, paris, mem("lives in Rome"), datetime.now(UTC))
        assert await batch.refine(U, rome, "lives in Rome, Italy", "rome-italy", vector, [2])
        assert await batch.refine(U, tea, "likes green tea", "green-tea", vector, [3])
    wording = UUID((await store.history(U, rome))[-1].metadata["previous_version"])
    await store.delete_memory(U, rome, "user")
    assert await store.get_memory(U, wording) is None
    kept = await store.get_memory(U, paris)  # another fact, superseded: it stays, closed
    assert kept is not None and kept.valid_to is not None
    listed = {r.memory for r in await store.list_memories(U, None, 10, True)}
    assert listed == {"lives in Paris", "likes tea", "likes green tea"}


async def test_erased_memories_cannot_be_restored(store: Store) -> None:
    deleted, purged, kept = await insert(store, mem("a"), mem("b"), mem("c"))
    assert deleted is not None and purged is not None and kept is not None
    for memory_id in (deleted, purged, kept):
        await store.retire_memory(U, memory_id, "mcp", "delete_memory")
    await store.delete_memory(U, deleted, "user")  # the user's erase reaches retired rows
    cut = datetime.now(UTC) + timedelta(seconds=1)
    assert await store.purge_retired(cut, 1) == 1  # at most `limit`, oldest first
    assert await store.purge_retired(datetime.now(UTC) - timedelta(days=1), 10) == 0
    left = [r.record.id for r in await store.retired_memories(U, 10)]
    assert len(left) == 1 and left[0] in (purged, kept)
    gone = purged if left[0] == kept else kept
    for memory_id in (deleted, gone):
        with pytest.raises(NotRestorable, match="was erased"):
            await store.restore_memory(U, memory_id, "user")
    assert (await store.history(U, gone))[-1].event == "PURGE"
    assert await store.delete_all(U) >= 1
    with pytest.raises(MemoryNotFound):  # delete_all removes the history too
        await store.restore_memory(U, left[0], "user")


async def test_the_worker_purges_after_the_retention(store: Store) -> None:
    """The worker's maintenance step: retired longer ago than the retention are erased.

    FakeEmbedder (memhub.testing) stands in: the purge embeds nothing."""
    from memhub.engine.worker import Worker, WorkerConfig
    from memhub.testing import FakeEmbedder

    old, recent = await insert(store, mem("old"), mem("recent"))
    assert old is not None and recent is not None
    await store.retire_memory(U, old, "consolidation", "asked")
    keeping = Worker(store, FakeEmbedder(dimension=3), WorkerConfig(retired_retention_days=1))
    assert await keeping.maintenance.purge() == 0  # retired now: within a day's retention
    # an interval no test run outlasts: the second purge below is refused by it, not by luck
    purging = Worker(
        store,
        FakeEmbedder(dimension=3),
        WorkerConfig(retired_retention_days=0, purge_interval=86_400),
    )
    await store.retire_memory(U, recent, "consolidation", "asked")
    assert await purging.maintenance.purge() == 2
    assert await store.retired_memories(U, 10) == []
    (later,) = await insert(store, mem("later"))
    assert later is not None
    await store.retire_memory(U, later, "consolidation", "asked")
    assert await purging.run_once() == 0  # its periodic step runs at most once per interval
    assert len(await store.retired_memories(U, 10)) == 1
    assert await purging.maintenance.purge(force=True) == 1
