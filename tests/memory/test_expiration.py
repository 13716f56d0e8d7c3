"""Mem0's ``add(..., expiration_date=...)``: an expired memory is not returned, then purged."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime, timedelta

import pytest

from memhub import AsyncMemory, MemoryNotFound, UsageError
from memhub.memory.inputs import parse_expiration


async def test_an_expired_memory_is_not_returned_and_is_purged_later(memory: AsyncMemory) -> None:
    tomorrow = (date.today() + timedelta(days=1)).isoformat()
    add = {"user_id": "exp", "infer": False, "wait": True}
    kept = (await memory.add("I live in Oslo.", **add))["results"][0]["id"]
    trip = (await memory.add("My trip to Rome.", **add, expiration_date=tomorrow))["results"][0]
    soon = datetime.now(UTC) + timedelta(seconds=3)
    dentist = await memory.add("My dentist appointment is on Friday.", **add, expiration_date=soon)
    gone = dentist["results"][0]["id"]
    past = await memory.add("An old plan.", **add, expiration_date="2000-01-01")
    assert await memory.get(past["results"][0]["id"]) is None  # expired the moment it was added
    assert await memory.get(gone) is not None
    found = await memory.search("dentist appointment", user_id="exp", limit=5)
    assert gone in [m["id"] for m in found["results"]]

    await asyncio.sleep((soon - datetime.now(UTC)).total_seconds() + 0.3)
    assert await memory.get(gone) is None
    found = await memory.search("dentist appointment", user_id="exp", limit=5)
    assert gone not in [m["id"] for m in found["results"]]
    listed = await memory.get_all(user_id="exp")
    assert {m["id"] for m in listed["results"]} == {kept, trip["id"]}

    store = (await memory._services()).store
    assert await store.purge_expired(100) == 2  # the dentist and the old plan
    assert await store.purge_expired(100) == 0
    events = await memory.history(gone)
    assert [(e["event"], e["actor"]) for e in events] == [
        ("ADD", "add"),
        ("DELETE", "expiry"),
    ]  # add() writes the row


def test_a_date_is_the_last_day_and_a_datetime_the_instant() -> None:
    assert parse_expiration("2031-05-17") == datetime(2031, 5, 18, tzinfo=UTC)
    assert parse_expiration(date(2031, 5, 17)) == datetime(2031, 5, 18, tzinfo=UTC)
    assert parse_expiration("2031-05-17T08:30:00Z") == datetime(2031, 5, 17, 8, 30, tzinfo=UTC)
    assert parse_expiration(None) is None
    with pytest.raises(UsageError):
        parse_expiration("2031-13-01")


async def test_update_sets_the_expiry_as_add_does(memory: AsyncMemory) -> None:
    """Mem0's ``update(..., expiration_date=...)``: the new date holds, the text stays."""
    add = {"user_id": "exp-up", "infer": False, "wait": True}
    plan = (await memory.add("My flight to Lima is on Monday.", **add))["results"][0]["id"]
    other = (await memory.add("I live in Quito.", **add))["results"][0]["id"]

    answer = await memory.update(plan, expiration_date="2000-01-01", user_id="exp-up")
    assert answer["result"]["memory"] == "My flight to Lima is on Monday."
    assert await memory.get(plan) is None  # expired: no longer returned
    assert await memory.get(other) is not None

    later = (date.today() + timedelta(days=30)).isoformat()
    renamed = await memory.update(other, "I live in Lima.", expiration_date=later)
    assert renamed["result"]["memory"] == "I live in Lima."
    assert (await memory.get(other) or {})["memory"] == "I live in Lima."


async def test_update_with_a_bad_expiry_writes_nothing(memory: AsyncMemory) -> None:
    add = {"user_id": "exp-bad", "infer": False, "wait": True}
    kept = (await memory.add("I play the oboe.", **add))["results"][0]["id"]
    with pytest.raises(UsageError, match="expiration_date"):
        await memory.update(kept, "I play the flute.", expiration_date="2031-13-01")
    assert (await memory.get(kept) or {})["memory"] == "I play the oboe."
    with pytest.raises(MemoryNotFound):
        await memory.update("00000000-0000-4000-8000-000000000000", expiration_date="2031-01-01")
