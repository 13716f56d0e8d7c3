"""The queue's contract, run unchanged on PostgreSQL and on the in-process ``memory://`` store.

Claim, lease expiry and reclaim, attempts counted at claim, parking, per-owner order, fair
claiming across owners, the consolidation window, and an erase racing a worker's apply.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import numpy as np
import pytest
from psycopg.types.json import Jsonb

from memhub.errors import Conflict
from memhub.store.inmemory.store import InMemoryStore
from memhub.store.postgres.store import PostgresStore
from memhub.store.protocol import Store
from memhub.store.records import JobPayload, Lane, Lease, NewJob, NewMemory, NewTurn, Scope

U, V = Scope(user_id="u"), Scope(user_id="v")
ORDERED = Lane(("ingest",))
UNORDERED = Lane(("ingest",), ordered=False)
CONSOLIDATE = Lane(("consolidate",), after_other_lanes=True)
A = Lease("worker-a", 60.0, 3)
B = Lease("worker-b", 60.0, 3)


async def queue(store: Store, scope: Scope, n: int = 1, kind: str = "ingest") -> list[int]:
    """Queue ``n`` jobs of ``scope``, each with one turn; returns the job ids."""
    before = {j.id for j in await store.list_jobs("queued", 100_000)}
    for _ in range(n):
        turn = NewTurn(user_id=scope.user_id or "", session_id="s", role="user", message="m")
        await store.append_turns([turn], NewJob(kind, scope))
    return sorted({j.id for j in await store.list_jobs("queued", 100_000)} - before)


def fact(text: str, scope: Scope = U) -> NewMemory:
    return NewMemory(
        id=uuid4(),
        scope=scope,
        memory=text,
        hash=text,
        embedding=np.asarray([1.0, 0.0, 0.0], dtype=np.float32),
        metadata={},
    )


def past() -> datetime:
    return datetime.now(UTC) - timedelta(seconds=1)


async def test_a_claim_leases_and_counts_the_attempt(store: Store) -> None:
    (job,) = await queue(store, U)
    (claimed,) = await store.claim_jobs(ORDERED, 10, A)
    assert (claimed.id, claimed.attempts) == (job, 1)
    assert await store.claim_jobs(ORDERED, 10, B) == [], "a leased job is nobody else's"
    async with store.apply_jobs([claimed], A.owner, {}) as batch:
        await batch.complete([job])
    assert await store.pending_jobs() == 0


async def test_an_expired_lease_is_claimed_again_and_the_old_owner_cannot_apply(
    store: Store,
) -> None:
    (job,) = await queue(store, U)
    short = Lease("worker-a", 0.2, 5)
    (mine,) = await store.claim_jobs(ORDERED, 10, short)
    await asyncio.sleep(0.4)
    (theirs,) = await store.claim_jobs(ORDERED, 10, B)
    assert (theirs.id, theirs.attempts) == (job, 2), "a crash counts as an attempt"
    with pytest.raises(Conflict, match="lease"):
        async with store.apply_jobs([mine], short.owner, {}) as batch:
            await batch.insert_memories([fact("late")], "worker")
    assert await store.list_memories(U, None, 10, False) == []


async def test_extending_a_lease_keeps_it(store: Store) -> None:
    await queue(store, U)
    # 3 s: time enough to extend the lease on a loaded machine, after which it is long over
    short = Lease("worker-a", 3.0, 5)
    (mine,) = await store.claim_jobs(ORDERED, 10, short)
    assert await store.extend_leases([mine.id], short.owner, 60.0) == 1
    await asyncio.sleep(3.2)
    assert await store.claim_jobs(ORDERED, 10, B) == []
    assert await store.extend_leases([mine.id], "someone-else", 60.0) == 0


async def test_an_owner_finds_every_lease_it_holds(store: Store) -> None:
    # A worker whose claim was cancelled after its statement committed never saw the jobs:
    # at its exit it asks the store which leases it holds, to give them back.
    first, second, other = await queue(store, U, 3)
    await store.claim_jobs(UNORDERED, 2, A)
    await store.claim_jobs(UNORDERED, 1, B)
    assert await store.leased_job_ids(A.owner) == [first, second]
    assert await store.leased_job_ids(B.owner) == [other]
    await store.release_jobs([first, second], A.owner, None, past(), 3)
    assert await store.leased_job_ids(A.owner) == []
    assert {j.id for j in await store.claim_jobs(UNORDERED, 10, B)} == {first, second}


async def test_failures_back_off_then_park_and_giving_back_refunds(store: Store) -> None:
    (job,) = await queue(store, U)
    (_claimed,) = await store.claim_jobs(ORDERED, 10, A)
    assert await store.release_jobs([job], A.owner, None, past(), A.max_attempts) == 0
    (again,) = await store.claim_jobs(ORDERED, 10, A)
    assert again.attempts == 1, "a job given back did not fail: its attempt is refunded"
    for attempt in (1, 2):
        if attempt == 2:
            (again,) = await store.claim_jobs(ORDERED, 10, A)
        assert await store.release_jobs([job], A.owner, f"boom {attempt}", past(), 3) == 0
    (last,) = await store.claim_jobs(ORDERED, 10, A)
    assert last.attempts == 3
    assert await store.release_jobs([job], A.owner, "boom 3", past(), 3) == 1
    (parked,) = await store.list_jobs("parked", 10)
    assert (parked.id, parked.attempts, parked.last_error) == (job, 3, "boom 3")
    assert await store.claim_jobs(ORDERED, 10, A) == []
    assert await store.requeue_parked(None) == 1
    assert [j.id for j in await store.claim_jobs(ORDERED, 10, A)] == [job]


async def test_a_lease_that_expires_on_the_last_attempt_parks_the_job(store: Store) -> None:
    (job,) = await queue(store, U)
    dying = Lease("worker-a", 0.1, 2)
    for _ in range(2):
        assert [j.id for j in await store.claim_jobs(ORDERED, 10, dying)] == [job]
        await asyncio.sleep(0.25)
    assert await store.claim_jobs(ORDERED, 10, dying) == []
    (parked,) = await store.list_jobs("parked", 10)
    assert parked.id == job and "lease expired" in (parked.last_error or "")


async def test_an_ordered_lane_hands_out_each_owners_jobs_in_order(store: Store) -> None:
    u1, u2 = await queue(store, U, 2)
    (v1,) = await queue(store, V)
    first = await store.claim_jobs(ORDERED, 1, A)
    assert [j.id for j in first] == [u1]
    second = await store.claim_jobs(ORDERED, 10, B)
    assert [j.id for j in second] == [v1], "u2 waits while u1 is leased"
    async with store.apply_jobs(first, A.owner, {}) as batch:
        await batch.complete([u1])
    assert [j.id for j in await store.claim_jobs(ORDERED, 10, A)] == [u2]


async def test_a_retry_backoff_holds_back_only_its_owner(store: Store) -> None:
    u1, _u2 = await queue(store, U, 2)
    (v1,) = await queue(store, V)
    claimed = await store.claim_jobs(ORDERED, 1, A)
    assert [j.id for j in claimed] == [u1]
    later = datetime.now(UTC) + timedelta(hours=1)
    await store.release_jobs([u1], A.owner, "boom", later, 5)
    assert [j.id for j in await store.claim_jobs(ORDERED, 10, A)] == [v1]
    await store.release_jobs([v1], A.owner, None, later, 5)
    await store.release_jobs([u1], A.owner, None, past(), 5)  # not leased: no effect
    assert await store.claim_jobs(ORDERED, 10, A) == [], "u2 stays behind u1"


async def test_claims_are_fair_across_owners(store: Store) -> None:
    await queue(store, U, 30)  # a large backlog queued first
    (v1,) = await queue(store, V)
    claimed = await store.claim_jobs(UNORDERED, 4, A)
    assert v1 in [j.id for j in claimed], "one owner's backlog cannot starve another"
    assert len(claimed) == 4


async def queue_turns(store: Store, scope: Scope, turns: int) -> int:
    """Queue one job of ``scope`` carrying ``turns`` turns (an import's shape); its id."""
    said = [
        NewTurn(user_id=scope.user_id or "", session_id="s", role="user", message=f"m{i}")
        for i in range(turns)
    ]
    before = {j.id for j in await store.list_jobs("queued", 100_000)}
    await store.append_turns(said, NewJob("ingest", scope))
    (job,) = {j.id for j in await store.list_jobs("queued", 100_000)} - before
    return job


async def test_a_claim_stops_at_its_turns_budget_so_a_small_owner_goes_next(
    store: Store,
) -> None:
    # U's import backlog (jobs of 300 turns) was queued first; V's 10-turn add comes after
    # U's first claim: V's job is in the very next claim, and no claim holds two of U's.
    backlog = [await queue_turns(store, U, 300) for _ in range(3)]
    first = await store.claim_jobs(UNORDERED, 64, A, turns=256)
    assert [j.id for j in first] == backlog[:1], "a claim is about one chunk of work"
    small = await queue_turns(store, V, 10)
    second = await store.claim_jobs(UNORDERED, 64, B, turns=256)
    assert small in [j.id for j in second]
    assert len([j for j in second if j.owner == U.owner]) <= 1
    assert sum(j.work for j in second) < 2 * 300


async def test_a_claim_for_some_owners_takes_only_theirs(store: Store) -> None:
    u1, *_ = await queue(store, U, 3)
    v1, v2 = await queue(store, V, 2)
    mine = await store.claim_jobs(UNORDERED, 10, A, owners=[V.owner, "nobody"])
    assert sorted(j.id for j in mine) == [v1, v2], "another owner's jobs are not taken"
    assert await store.claim_jobs(UNORDERED, 10, A, owners=[V.owner]) == []
    # the round robin's place is untouched: the next plain claim starts from the first owner
    assert [j.id for j in await store.claim_jobs(UNORDERED, 1, B)] == [u1]


async def test_a_claim_fills_up_from_the_owners_with_a_backlog(store: Store) -> None:
    # A claim reads a fair share per owner first (3 here); V has less, so U's and W's
    # fourth jobs fill the claim, as a round robin over their whole queues would.
    u = await queue(store, U, 5)
    (v1,) = await queue(store, V)
    w = await queue(store, Scope(user_id="w"), 5)
    claimed = await store.claim_jobs(UNORDERED, 9, A)
    assert sorted(j.id for j in claimed) == sorted([*u[:4], v1, *w[:4]])
    # Ordered: u, v and w are blocked by their leased heads, y has one job, x fills up.
    x = await queue(store, Scope(user_id="x"), 6)
    (y1,) = await queue(store, Scope(user_id="y"))
    rest = await store.claim_jobs(ORDERED, 6, B)
    assert sorted(j.id for j in rest) == sorted([*x[:5], y1])


async def test_an_unordered_lane_shares_an_owner_between_claims(store: Store) -> None:
    u1, u2, u3 = await queue(store, U, 3)
    first = await store.claim_jobs(UNORDERED, 1, A)
    second = await store.claim_jobs(UNORDERED, 10, B)
    assert [j.id for j in first] == [u1] and [j.id for j in second] == [u2, u3]


async def test_consolidation_joins_the_open_window_and_waits_for_ingestion(
    store: Store,
) -> None:
    # 3 s: time enough for the steps inside the window on a loaded machine
    window = datetime.now(UTC) + timedelta(seconds=3)
    async with store.apply_jobs([], "t", {}) as batch:
        await batch.enqueue(
            NewJob("consolidate", U, JobPayload.from_json({"turn_ids": [1]})), window, True
        )
    async with store.apply_jobs([], "t", {}) as batch:
        # ten seconds later by its own clock, but the window is open: it joins
        later = datetime.now(UTC) + timedelta(seconds=10)
        await batch.enqueue(
            NewJob("consolidate", U, JobPayload.from_json({"turn_ids": [2]})), later, True
        )
    assert await store.claim_jobs(CONSOLIDATE, 10, A) == [], "the window is still open"
    (ingest,) = await queue(store, U)  # a turn of the window not yet ingested
    await asyncio.sleep((window - datetime.now(UTC)).total_seconds() + 0.1)
    assert await store.claim_jobs(CONSOLIDATE, 10, A) == [], "waits for the window's turns"
    (claimed,) = await store.claim_jobs(ORDERED, 10, A)
    async with store.apply_jobs([claimed], A.owner, {}) as batch:
        await batch.complete([ingest])
    calls = await store.claim_jobs(CONSOLIDATE, 10, A)
    assert [j.payload.to_json()["turn_ids"] for j in calls] == [[1], [2]], "one window, one claim"


async def test_the_apply_checks_the_facts_it_read(store: Store) -> None:
    await queue(store, U)
    async with store.apply_jobs([], "t", {}) as batch:
        (fact_id,) = await batch.insert_memories([fact("likes tea")], "user")
    assert fact_id is not None
    (job,) = await store.claim_jobs(ORDERED, 10, A)
    with pytest.raises(Conflict, match="changed"):
        async with store.apply_jobs([job], A.owner, {fact_id: "likes coffee"}):
            pass
    async with store.apply_jobs([job], A.owner, {fact_id: "likes tea"}) as batch:
        await batch.complete([job.id])
    assert await store.pending_jobs() == 0


async def test_pending_turn_jobs_sees_only_those_turns(store: Store) -> None:
    turn = NewTurn(user_id="u", session_id="s", role="user", message="m")
    (mine,) = await store.append_turns([turn], NewJob("ingest", U))
    (other,) = await store.append_turns([turn], NewJob("ingest", U))
    assert await store.pending_turn_jobs(U, [mine], None) == 1
    assert await store.pending_turn_jobs(U, [mine], ["consolidate"]) == 0
    assert await store.pending_turn_jobs(V, [mine], None) == 0
    job = next(j for j in await store.claim_jobs(ORDERED, 1, A))
    async with store.apply_jobs([job], A.owner, {}) as batch:
        await batch.complete([job.id])
    assert await store.pending_turn_jobs(U, [mine], None) == 0
    assert await store.pending_turn_jobs(U, [other], None) == 1


async def test_an_erase_racing_an_apply_leaves_nothing(store: Store) -> None:
    await queue(store, U)
    (job,) = await store.claim_jobs(ORDERED, 10, A)
    applying = asyncio.Event()
    erase: asyncio.Task[int] | None = None
    async with store.apply_jobs([job], A.owner, {}) as batch:
        await batch.insert_memories([fact("landed first")], "worker")
        applying.set()
        erase = asyncio.ensure_future(store.delete_all(U))
        await asyncio.sleep(0.2)
        assert not erase.done(), "the erase waits for the scope's lock"
        await batch.complete([job.id])
    assert await erase == 1
    assert await store.list_memories(U, None, 10, True) == []
    assert await store.pending_jobs(U) == 0


async def test_an_erase_before_the_apply_makes_it_fail(store: Store) -> None:
    await queue(store, U)
    await queue(store, V)
    claimed = await store.claim_jobs(ORDERED, 10, A)
    mine = [j for j in claimed if j.scope == U]
    assert await store.delete_all(U) == 0
    with pytest.raises(Conflict, match="lease"):
        async with store.apply_jobs(mine, A.owner, {}) as batch:
            await batch.insert_memories([fact("too late")], "worker")
    assert await store.list_memories(U, None, 10, True) == []
    assert await store.pending_jobs(V) == 1, "other scopes keep their jobs"


async def _plant(store: Store, scope: Scope, raw: object) -> None:
    """A queued job whose stored JSON is ``raw`` (written by hand, or by another version)."""
    if isinstance(store, PostgresStore):
        async with store.database.connection() as conn:
            await conn.execute(
                "INSERT INTO memory_jobs (kind, user_id, payload) VALUES ('ingest', %s, %s)",
                (scope.user_id, Jsonb(raw)),
            )
    else:
        assert isinstance(store, InMemoryStore)
        store.jobs.add(NewJob("ingest", scope), raw, datetime.now(UTC))  # type: ignore[arg-type]


async def test_a_payload_that_does_not_read_is_claimed_with_the_reason(store: Store) -> None:
    await _plant(store, U, {"turn_ids": "not a list"})
    (good,) = await queue(store, V)
    claimed = {job.owner: job for job in await store.claim_jobs(ORDERED, 10, A)}
    bad = claimed["u"]
    assert bad.payload == JobPayload() and bad.attempts == 1
    assert bad.payload_error == f"job {bad.id}: payload turn_ids must be a list of integers"
    assert claimed["v"].id == good and claimed["v"].payload_error is None
    assert len(claimed["v"].payload.turns) == 1
    # the queue's own failure path: counted at claim, parked at the last attempt, with why
    error = f"TypeError: {bad.payload_error}"
    assert await store.release_jobs([bad.id], A.owner, error, past(), 1) == 1
    (parked,) = await store.list_jobs("parked", 10)
    assert (parked.id, parked.last_error) == (bad.id, error)
