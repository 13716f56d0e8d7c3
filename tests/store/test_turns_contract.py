"""The conversation turns' contract, run unchanged on PostgreSQL and on ``memory://``.

Ids in order, times in naive UTC as ARKOS stores them, all or nothing with the job, the
session's last turns oldest first, turns by id.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memhub.errors import UsageError
from memhub.store.protocol import Store
from memhub.store.records import JobPayload, NewJob, NewTurn
from tests.store.contract import U


async def test_append_turns_numbers_them_and_queues_the_job_with_their_ids(
    store: Store,
) -> None:
    turns = [NewTurn("u", "s", "user", "hi"), NewTurn("u", "s", "assistant", "hello")]
    ids = await store.append_turns(
        turns, NewJob("ingest", U, JobPayload.from_json({"infer": True}))
    )
    assert ids == [1, 2]
    assert await store.append_turns([NewTurn("u", "s", "user", "again")], None) == [3]
    (job,) = await store.list_jobs("queued", 10)
    assert job.payload.to_json() == {"infer": True, "turn_ids": [1, 2]}
    assert job.scope == U and job.attempts == 0 and job.created_at.tzinfo is not None


async def test_many_turns_in_one_call_keep_their_order_and_the_job_only_the_long_term_ones(
    store: Store,
) -> None:
    # PostgreSQL inserts them in one statement and pairs ids with turns by order: 60 turns,
    # every third short-term only, metadata on some, times on others.
    said = datetime(2024, 5, 1, 12, 0)
    turns = [
        NewTurn(
            "u",
            "s",
            "user" if n % 2 else "assistant",
            f"m{n}",
            metadata={"n": n} if n % 4 == 0 else None,
            created_at=said + timedelta(minutes=n) if n % 5 == 0 else None,
            long_term=n % 3 != 0,
        )
        for n in range(60)
    ]
    ids = await store.append_turns(turns, NewJob("ingest", U))
    assert ids == sorted(ids) and len(set(ids)) == 60
    stored = await store.recent_turns("u", "s", 100)
    assert [(t.id, t.message, t.role, t.metadata) for t in stored] == [
        (i, t.message, t.role, t.metadata) for i, t in zip(ids, turns, strict=True)
    ]
    assert stored[5].created_at == said + timedelta(minutes=5)
    (job,) = await store.list_jobs("queued", 10)
    assert job.payload.to_json() == {"turn_ids": [i for n, i in enumerate(ids) if n % 3 != 0]}


async def test_a_job_of_short_term_turns_only_has_no_turn_ids(store: Store) -> None:
    turns = [NewTurn("u", "s", "user", "hi", long_term=False)]
    await store.append_turns(turns, NewJob("ingest", U, JobPayload.from_json({"infer": False})))
    (job,) = await store.list_jobs("queued", 10)
    assert job.payload.to_json() == {"infer": False, "turn_ids": []}


async def test_turn_times_are_naive_utc(store: Store) -> None:
    said = datetime(2024, 5, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    await store.append_turns([NewTurn("u", "s", "user", "a", created_at=said)], None)
    before = datetime.now(UTC).replace(tzinfo=None)
    await store.append_turns([NewTurn("u", "s", "user", "b")], None)
    after = datetime.now(UTC).replace(tzinfo=None)
    first, second = await store.recent_turns("u", "s", 10)
    assert first.created_at == datetime(2024, 5, 1, 10, 0)
    assert second.created_at is not None and second.created_at.tzinfo is None
    assert before <= second.created_at <= after  # stamped now, in UTC


async def test_append_turns_is_all_or_nothing(store: Store) -> None:
    turns = [NewTurn("u", "s", "user", "fine"), NewTurn("u", "s", "user", "nul \x00")]
    with pytest.raises(UsageError, match="NUL"):
        await store.append_turns(turns, NewJob("ingest", U))
    assert await store.recent_turns("u", "s", 10) == []
    assert await store.pending_jobs() == 0


async def test_recent_turns_are_the_last_of_one_session_oldest_first(store: Store) -> None:
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
