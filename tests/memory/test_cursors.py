"""Keyset cursors (memory/cursors.py): one codec for every paged list, and ``get_all``'s
pages over it, on both back ends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub.errors import UsageError
from memhub.memory.cursors import (
    after_memory,
    before_change,
    change_cursor,
    decode_cursor,
    encode_cursor,
)
from memhub.testing import FakeEmbedder


def test_a_cursor_holds_its_key_and_stays_short() -> None:
    user = "ü" * 255  # the longest user id, outside ASCII
    cursor = encode_cursor(user)
    assert decode_cursor(cursor, 1) == (user,)
    assert len(cursor) <= 1_500, "over the REST API's cap on a cursor"
    assert "=" not in cursor and "/" not in cursor and "+" not in cursor  # as it is in a URL


@pytest.mark.parametrize(
    "cursor",
    ["", "not a cursor!", "bm90IGpzb24", encode_cursor("a", "b"), "WzFd", "eyJhIjogMX0"],
    ids=["empty", "not base64", "not JSON", "two fields", "a number", "an object"],
)
def test_a_cursor_of_another_shape_is_a_usage_error(cursor: str) -> None:
    with pytest.raises(UsageError, match="invalid cursor"):
        decode_cursor(cursor, 1)


def test_a_memory_cursor_needs_a_time_and_an_id() -> None:
    with pytest.raises(UsageError, match="invalid cursor"):
        after_memory(encode_cursor("yesterday", "not-a-uuid"))


def test_a_change_cursor_holds_the_changes_id() -> None:
    assert before_change(change_cursor(42)) == 42
    with pytest.raises(UsageError, match="invalid cursor"):
        before_change(encode_cursor("-1"))
    with pytest.raises(UsageError, match="invalid cursor"):
        before_change("42")  # the id itself is not a cursor


@pytest.fixture(params=["postgresql", "memory://"])
async def memory(request: pytest.FixtureRequest, settings: MemhubSettings) -> AsyncIterator[Any]:
    chosen = (
        settings
        if request.param == "postgresql"
        else settings.model_copy(update={"database_url": "memory://"})
    )
    async with AsyncMemory(settings=chosen, embedder=FakeEmbedder()) as opened:
        yield opened


async def test_get_all_pages_by_cursor_skip_nothing_and_repeat_nothing(
    memory: AsyncMemory,
) -> None:
    # One add: its five memories share one created_at, so only the id orders them.
    turns = [{"role": "user", "content": f"note number {n}"} for n in range(5)]
    await memory.add(turns, user_id="ada", infer=False)
    await memory.add("a later note", user_id="ada", infer=False)
    everything = (await memory.get_all(user_id="ada"))["results"]
    assert len(everything) == 6

    seen: list[str] = []
    pages = 0
    cursor: str | None = ""
    while cursor is not None:
        page = await memory.get_all(user_id="ada", limit=4, cursor=cursor)
        seen += [item["id"] for item in page["results"]]
        cursor = page["next_cursor"]
        pages += 1
    assert seen == [item["id"] for item in everything]
    assert pages == 2


async def test_without_a_cursor_get_all_keeps_mem0s_shape(memory: AsyncMemory) -> None:
    await memory.add("one note", user_id="ada", infer=False)
    assert set(await memory.get_all(user_id="ada", limit=1)) == {"results"}
    first = await memory.get_all(user_id="ada", limit=1, cursor="")
    assert set(first) == {"results", "next_cursor"} and first["next_cursor"] is not None
    last = await memory.get_all(user_id="ada", limit=1, cursor=first["next_cursor"])
    assert last == {"results": [], "next_cursor": None}


async def test_a_cursor_combines_with_filters(memory: AsyncMemory) -> None:
    for n in range(3):
        await memory.add(f"tagged {n}", user_id="ada", metadata={"tag": "x"}, infer=False)
    await memory.add("untagged", user_id="ada", infer=False)
    first = await memory.get_all(user_id="ada", filters={"tag": "x"}, limit=2, cursor="")
    rest = await memory.get_all(
        user_id="ada", filters={"tag": "x"}, limit=2, cursor=first["next_cursor"]
    )
    texts = [m["memory"] for m in first["results"] + rest["results"]]
    assert texts == ["tagged 2", "tagged 1", "tagged 0"] and rest["next_cursor"] is None


async def test_a_bad_cursor_is_refused_before_any_read(memory: AsyncMemory) -> None:
    with pytest.raises(UsageError, match="invalid cursor"):
        await memory.get_all(user_id="ada", cursor="garbage")
