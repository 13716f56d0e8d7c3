"""Ids and filter values that look like SQL placeholders or quoting stay plain values.

``a%%b`` once read, updated and deleted the memories of ``a%b`` (ids were inlined into
statements psycopg then formatted); these run every API call on both stores.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub.errors import MemoryNotFound

AWKWARD = [
    "a%b",
    "a%%b",
    "%s",
    "a%sb",
    "%(p0)s",
    "50%off",
    "it's",
    'say "hi"',
    "back\\slash",
    "back\\\\slash",
    "{}",
    "$1",
    "ünïcødé ☃ 😀",
    "x'); DROP TABLE memories; --",
]


@pytest.fixture(params=["postgres", "in-process"])
async def memory(
    request: pytest.FixtureRequest, settings: MemhubSettings
) -> AsyncIterator[AsyncMemory]:
    if request.param == "in-process":
        settings = settings.model_copy(update={"database_url": "memory://"})
    async with AsyncMemory(settings=settings) as memory:
        yield memory


def _text(user: str) -> str:
    return f"secret note of user {user!r}"


async def test_each_awkward_user_sees_only_their_own(memory: AsyncMemory) -> None:
    ids: dict[str, str] = {}
    for user in AWKWARD:
        added = await memory.add(
            _text(user), user_id=user, metadata={"tag": user}, infer=False, wait=True
        )
        (item,) = added["results"]
        ids[user] = str(item["id"])
    for user in AWKWARD:
        listed = (await memory.get_all(user_id=user))["results"]
        assert [i["memory"] for i in listed] == [_text(user)], user
        found = (await memory.search("secret note", user_id=user))["results"]
        assert {i["memory"] for i in found} == {_text(user)}, user
        tagged = (await memory.get_all(user_id=user, filters={"tag": user}))["results"]
        assert [i["id"] for i in tagged] == [ids[user]], user
        contains = await memory.get_all(user_id=user, filters={"tag": {"contains": user}})
        assert [i["id"] for i in contains["results"]] == [ids[user]], user
        others = [u for u in AWKWARD if u != user]
        by_value = await memory.get_all(user_id=user, filters={"tag": {"in": others}})
        assert by_value["results"] == [], user
        for other in others:
            assert await memory.get(ids[other], user_id=user) is None, (user, other)


async def test_doubled_percent_never_touches_single_percent(memory: AsyncMemory) -> None:
    kept = await memory.add("a%b's fact", user_id="a%b", infer=False, wait=True)
    kept_id = str(kept["results"][0]["id"])
    await memory.add("a%%b's fact", user_id="a%%b", infer=False, wait=True)
    with pytest.raises(MemoryNotFound):
        await memory.update(kept_id, "rewritten", user_id="a%%b")
    with pytest.raises(MemoryNotFound):
        await memory.delete(kept_id, user_id="a%%b")
    with pytest.raises(MemoryNotFound):
        await memory.history(kept_id, user_id="a%%b")
    deleted = await memory.delete_all(user_id="a%%b")
    assert deleted["deleted"] == 1
    remaining = (await memory.get_all(user_id="a%b"))["results"]
    assert [i["memory"] for i in remaining] == ["a%b's fact"]
    assert (await memory.get_all(user_id="a%%b"))["results"] == []


async def test_awkward_agent_and_run_ids_scope_too(memory: AsyncMemory) -> None:
    for run in ("r%s", "r%%s", "r's"):
        await memory.add(f"in {run}", user_id="u", run_id=run, agent_id="%", infer=False, wait=True)
    for run in ("r%s", "r%%s", "r's"):
        listed = (await memory.get_all(user_id="u", agent_id="%", run_id=run))["results"]
        assert [i["memory"] for i in listed] == [f"in {run}"]
    await memory.delete_all(user_id="u", run_id="r%%s")
    left = (await memory.get_all(user_id="u"))["results"]
    assert sorted(i["memory"] for i in left) == ["in r%s", "in r's"]
