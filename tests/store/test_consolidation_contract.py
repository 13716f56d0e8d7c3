"""The apply phase's writes, run unchanged on PostgreSQL and on ``memory://``.

Commit on a normal end, rollback on an exception or a failed write, and each consolidation
write (insert, refine, supersede, forget, retire, usage) with its history.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memhub.engine import retrieve
from memhub.errors import MemoryNotFound, StoreError, UsageError
from memhub.store.protocol import Store
from memhub.store.records import JobPayload, Lane, NewJob, Scope
from tests.store.contract import INGEST, LEASE, U, V, X, Y, Z, insert, mem, queue


async def test_an_apply_commits_when_its_block_ends_normally(store: Store) -> None:
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


async def test_an_exception_rolls_the_apply_back(store: Store) -> None:
    (job_id,) = await queue(store, U)
    jobs = await store.claim_jobs(INGEST, 10, LEASE)
    with pytest.raises(RuntimeError):
        async with store.apply_jobs(jobs, "w", {}) as batch:
            await batch.insert_memories([mem("fact")], "worker")
            await batch.complete([job_id])
            raise RuntimeError("boom")
    assert await store.list_memories(U, None, 10, False) == []
    assert await store.pending_jobs() == 1


async def test_a_failed_write_dooms_the_apply(store: Store) -> None:
    (job_id,) = await queue(store, U)
    jobs = await store.claim_jobs(INGEST, 10, LEASE)
    async with store.apply_jobs(jobs, "w", {}) as batch:
        await batch.insert_memories([mem("kept?")], "worker")
        with pytest.raises(UsageError, match="dimensions"):
            await batch.insert_memories([mem("bad", vector=[1.0])], "worker")
        with pytest.raises(StoreError, match="aborted"):
            await batch.complete([job_id])
    assert await store.list_memories(U, None, 10, False) == []
    assert await store.pending_jobs() == 1


async def test_supersede_closes_the_old_fact_and_links_the_history(store: Store) -> None:
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


async def test_supersede_by_a_stored_fact_links_to_it(store: Store) -> None:
    old, existing = await insert(store, mem("lives in Paris"), mem("lives in Rome"))
    assert old is not None and existing is not None
    async with store.apply_jobs([], "t", {}) as batch:
        successor = await batch.supersede(U, old, mem("lives in Rome"), datetime.now(UTC))
    assert successor == existing
    event = (await store.history(U, old))[-1]
    assert event.event == "SUPERSEDE" and event.metadata == {"superseded_by": str(existing)}


async def test_refine_rewrites_in_place_unless_the_text_exists(store: Store) -> None:
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


async def test_forget_retires_the_fact_and_leaves_the_episodes(store: Store) -> None:
    fact, raw1, raw2, other = await insert(
        store,
        mem("likes tea"),
        mem("turn one", role="user", source_turn_ids=(1,)),
        mem("turn two", role="user", source_turn_ids=(2,)),
        mem("turn one", V, role="user", source_turn_ids=(1,)),
    )
    assert fact is not None
    async with store.apply_jobs([], "t", {}) as batch:
        await batch.forget(U, fact, [3])
    # consolidation never removes what was said: the episodes of the turns stay
    left = {r.id for r in await store.list_memories(Scope(), None, 10, False)}
    assert left == {raw1, raw2, other}
    # a model's forget retires: out of every read, superseded ones included, but kept
    assert fact not in {r.id for r in await store.list_memories(Scope(), None, 10, True)}
    assert await store.get_memory(U, fact) is None
    (retired,) = await store.retired_memories(U, 10)
    assert (retired.record.id, retired.actor) == (fact, "consolidation")
    event = (await store.history(U, fact))[-1]
    assert (event.event, event.old_memory, event.turn_ids) == ("RETIRE", "likes tea", (3,))


async def test_rollback_undoes_every_consolidation_write(store: Store) -> None:
    a, b, c = await insert(
        store,
        mem("a", vector=X),
        mem("b", vector=Y),
        mem("c", vector=[0.0, 1.0, 1.0], role="user", source_turn_ids=(1,)),
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
            await batch.enqueue(NewJob("consolidate", U), None, False)
            await batch.record_usage(
                U, "m", {"calls": 1, "prompt_tokens": 5, "completion_tokens": 2}, 1, 1, {}
            )
            raise RuntimeError("boom")
    after = {r.id: r for r in await store.list_memories(U, None, 10, True)}
    assert after == before
    assert {i: await store.history(U, i) for i in before} == histories
    found = await retrieve.candidates(store, U, "a", np.asarray(X, np.float32), 1, None, False)
    assert found[0].record.id == a and found[0].vector_similarity == pytest.approx(1.0)
    (again,) = await insert(store, mem("b2", vector=Z))  # the successor's hash is free
    assert again is not None
    assert await store.pending_jobs() == 0
    assert (await store.usage_stats())["llm_calls"] == 0


async def test_enqueued_jobs_and_usage_arrive_with_the_commit(store: Store) -> None:
    later = datetime.now(UTC) + timedelta(hours=1)
    async with store.apply_jobs([], "t", {}) as batch:
        await batch.enqueue(
            NewJob("consolidate", U, JobPayload.from_json({"turn_ids": [1]})), None, False
        )
        await batch.enqueue(NewJob("consolidate", V), later, False)
        await batch.record_usage(
            U, "m", {"calls": 2, "prompt_tokens": 30, "completion_tokens": 10}, 4, 1, {"ADD": 1}
        )
        assert await store.pending_jobs() == 0
        (newer,) = await queue(store, U)  # queued by someone else while the batch is open
    jobs = {(j.kind, j.scope.user_id): j for j in await store.list_jobs("queued", 10)}
    # ids are not compared: PostgreSQL hands them out at the insert, memory:// at the commit
    assert set(jobs) == {("ingest", "u"), ("consolidate", "u"), ("consolidate", "v")}
    assert jobs["ingest", "u"].id == newer
    assert jobs["consolidate", "u"].payload.to_json() == {"turn_ids": [1]}
    claimed = await store.claim_jobs(Lane(("consolidate",)), 10, LEASE)
    assert [j.scope for j in claimed] == [U]  # V's job waits until later
    stats = await store.usage_stats()
    assert stats["llm_calls"] == 2 and stats["turns"] == 4 and stats["tokens_per_turn"] == 10
