"""The Mem0-style API on a real PostgreSQL with the real default embedder."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import psycopg
import pytest

from memhub import (
    AsyncMemory,
    MemhubSettings,
    MemoryNotFound,
    SystemMessage,
    UsageError,
    UserMessage,
)


@pytest.fixture
async def pg_memory(settings: MemhubSettings) -> AsyncIterator[AsyncMemory]:
    """PostgreSQL only, for tests that also check the rows themselves."""
    async with AsyncMemory(settings=settings) as m:
        yield m


async def test_add_then_search_returns_mem0_shaped_results(memory: AsyncMemory) -> None:
    added = await memory.add(
        [
            {"role": "user", "content": "I love hiking in the Alps every summer."},
            {"role": "assistant", "content": "That sounds wonderful!"},
            {"role": "user", "content": "My sister Anna lives in Vienna."},
        ],
        user_id="alice",
        metadata={"source": "chat"},
        infer=False,
        wait=True,
    )
    assert {r["memory"] for r in added["results"]} == {
        "I love hiking in the Alps every summer.",
        "That sounds wonderful!",
        "My sister Anna lives in Vienna.",
    }
    assert all(r["event"] == "ADD" for r in added["results"])
    found = await memory.search("Where does my sister live?", user_id="alice", limit=2)
    top = found["results"][0]
    assert top["memory"] == "My sister Anna lives in Vienna."
    assert set(top) >= {
        "id",
        "memory",
        "hash",
        "metadata",
        "score",
        "created_at",
        "updated_at",
        "user_id",
    }
    assert top["user_id"] == "alice"
    assert top["metadata"] == {"source": "chat"} and top["role"] == "user"
    assert 0.0 <= top["score"] <= 1.0
    assert len(found["results"]) == 2
    assert found["results"][0]["score"] >= found["results"][1]["score"]


async def test_add_is_queued_and_durable_before_processing(
    settings: MemhubSettings, db_url: str
) -> None:
    # No worker and no wait in search: what add() wrote before any job ran.
    quiet = settings.model_copy(update={"worker": "off", "search_wait_timeout": 0})
    async with AsyncMemory(settings=quiet) as memory:
        ack = await memory.add("I have a cat named Miso.", user_id="bob", infer=False)
        (queued,) = ack["results"]
        assert queued["memory"] == "I have a cat named Miso." and queued["event"] == "ADD"
        assert queued["status"] == ack["status"] == "PENDING" and len(ack["queued_turn_ids"]) == 1
        stored = await memory.get(queued["id"])  # the id resolves at once
        assert stored is not None and stored["memory"] == "I have a cat named Miso."
        async with await psycopg.AsyncConnection.connect(db_url) as conn:
            cur = await conn.execute(
                "SELECT count(*), count(embedding) FROM memories WHERE user_id = 'bob'"
            )
            assert await cur.fetchone() == (1, 0)  # its vector is the job's to fill in
            cur = await conn.execute("SELECT count(*) FROM memory_jobs WHERE user_id = 'bob'")
            assert await cur.fetchone() == (1,)
        by_words = (await memory.search("cat", user_id="bob"))["results"]
        assert [hit["id"] for hit in by_words] == [queued["id"]]
        await memory.wait_idle()
        hits = (await memory.search("what pet do I have", user_id="bob"))["results"]
        assert hits[0]["memory"] == "I have a cat named Miso."
        assert hits[0]["id"] == queued["id"]


async def test_identical_turns_are_each_kept_with_their_metadata(memory: AsyncMemory) -> None:
    # Mem0 keeps them too; LoCoMo's repeated turns lost their dialogue ids when memhub did not.
    first = await memory.add("I like green tea.", user_id="carol", infer=False, metadata={"n": 1})
    second = await memory.add("I like green tea.", user_id="carol", infer=False, metadata={"n": 2})
    await memory.wait_idle()
    stored = {m["id"]: m["metadata"] for m in (await memory.get_all(user_id="carol"))["results"]}
    assert stored == {first["results"][0]["id"]: {"n": 1}, second["results"][0]["id"]: {"n": 2}}


async def test_get_update_delete_and_history(memory: AsyncMemory) -> None:
    await memory.add("I live in Berlin.", user_id="erin", infer=False, wait=True)
    (item,) = (await memory.get_all(user_id="erin"))["results"]
    got = await memory.get(item["id"])
    assert got is not None and got["memory"] == "I live in Berlin."
    await memory.update(item["id"], "I live in Paris.", user_id="erin")
    assert (await memory.search("which city", user_id="erin"))["results"][0][
        "memory"
    ] == "I live in Paris."
    await memory.delete(item["id"], user_id="erin")
    assert await memory.get(item["id"]) is None
    events = await memory.history(item["id"])
    assert [(e["event"], e["old_memory"], e["new_memory"]) for e in events] == [
        ("ADD", None, "I live in Berlin."),
        ("UPDATE", "I live in Berlin.", "I live in Paris."),
        ("DELETE", "I live in Paris.", None),
    ]


async def test_by_id_calls_respect_a_given_scope(memory: AsyncMemory) -> None:
    await memory.add("Secret of frank.", user_id="frank", infer=False, wait=True)
    (item,) = (await memory.get_all(user_id="frank"))["results"]
    assert await memory.get(item["id"], user_id="grace") is None
    with pytest.raises(MemoryNotFound):
        await memory.update(item["id"], "hijacked", user_id="grace")
    with pytest.raises(MemoryNotFound):
        await memory.delete(item["id"], user_id="grace")
    assert (await memory.get(item["id"], user_id="frank"))["memory"] == "Secret of frank."  # type: ignore[index]


async def test_delete_all_removes_everything_of_the_user(
    pg_memory: AsyncMemory, db_url: str
) -> None:
    memory = pg_memory
    for user in ("hank", "ivy"):
        await memory.add(f"{user} likes chess.", user_id=user, infer=False, wait=True)
        await memory.add(f"{user} has a dog.", user_id=user, infer=False, wait=True)
    result = await memory.delete_all(user_id="hank")
    assert result["deleted"] == 2
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        for table in ("memories", "memory_history", "memory_jobs", "conversation_context"):
            cur = await conn.execute(f"SELECT count(*) FROM {table} WHERE user_id = 'hank'")
            assert await cur.fetchone() == (0,), table
        cur = await conn.execute("SELECT count(*) FROM memories WHERE user_id = 'ivy'")
        assert await cur.fetchone() == (2,)


async def test_delete_all_keeps_other_users(memory: AsyncMemory) -> None:
    await memory.add("mine", user_id="one", infer=False, wait=True)
    await memory.add("yours", user_id="two", infer=False, wait=True)
    assert (await memory.delete_all(user_id="one"))["deleted"] == 1
    assert (await memory.get_all(user_id="one"))["results"] == []
    assert [r["memory"] for r in (await memory.get_all(user_id="two"))["results"]] == ["yours"]


async def test_agent_and_run_scopes(memory: AsyncMemory) -> None:
    await memory.add("Always answer in French.", agent_id="bot", infer=False, wait=True)
    await memory.add("We discussed the budget.", user_id="jo", run_id="r1", infer=False, wait=True)
    await memory.add(
        "We discussed the holidays.", user_id="jo", run_id="r2", infer=False, wait=True
    )
    assert [r["memory"] for r in (await memory.get_all(agent_id="bot"))["results"]] == [
        "Always answer in French."
    ]
    assert [r["memory"] for r in (await memory.get_all(user_id="jo", run_id="r1"))["results"]] == [
        "We discussed the budget."
    ]
    assert len((await memory.get_all(user_id="jo"))["results"]) == 2


async def test_original_timestamps_are_kept(memory: AsyncMemory) -> None:
    await memory.add(
        "We met in 2019.", user_id="kim", infer=False, timestamp="2019-05-08T13:56:00Z", wait=True
    )
    (item,) = (await memory.get_all(user_id="kim"))["results"]
    assert item["created_at"].startswith("2019-05-08T13:56:00")
    assert item["valid_from"].startswith("2019-05-08T13:56:00")


async def test_reset_clears_everything(memory: AsyncMemory) -> None:
    await memory.add("one", user_id="lee", infer=False, wait=True)
    await memory.reset()
    assert (await memory.get_all(user_id="lee"))["results"] == []


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: m.add("hi"), "one of user_id, agent_id or run_id is required"),
        (lambda m: m.add("", user_id="u"), "must not be empty"),
        (lambda m: m.add([], user_id="u"), "must not be empty"),
        (lambda m: m.add(42, user_id="u"), "messages must be"),
        (lambda m: m.add("x" * 40_000, user_id="u"), "the limit is 32000"),
        (lambda m: m.add("nul\x00", user_id="u"), "NUL"),
        (lambda m: m.add("bad \ud800 text", user_id="u"), "not valid UTF-8"),
        (lambda m: m.add("hi", user_id="u", metadata={"user_id": "other"}), "cannot set scope ids"),
        (lambda m: m.add({"role": "wizard", "content": "x"}, user_id="u"), "unknown message role"),
        (
            lambda m: m.add({"role": "tool", "content": "x", "tool_call_id": 5}, user_id="u"),
            "invalid tool message",
        ),
        (lambda m: m.search("", user_id="u"), "must not be empty"),
        (lambda m: m.search("q"), "one of user_id"),
        (lambda m: m.search("q", user_id="u", limit=0), "limit must be between"),
        (lambda m: m.search("q", user_id="u", limit=10**6), "limit must be between"),
        (lambda m: m.search("q", user_id="u", filters={"a": {"regex": "x"}}), "regex"),
        (lambda m: m.search("q", user_id="u", threshold=2), "threshold"),
        (lambda m: m.get("not-a-uuid"), "not a UUID"),
        (lambda m: m.delete_all(), "one of user_id"),
    ],
)
async def test_bad_input_is_a_clear_error_and_writes_nothing(
    pg_memory: AsyncMemory, db_url: str, call: object, message: str
) -> None:
    memory = pg_memory
    with pytest.raises(UsageError, match=message):
        await call(memory)  # type: ignore[operator]
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        cur = await conn.execute(
            "SELECT (SELECT count(*) FROM conversation_context) + (SELECT count(*) FROM memory_jobs)"
        )
        assert await cur.fetchone() == (0,)


async def test_missing_memory_is_not_found(memory: AsyncMemory) -> None:
    with pytest.raises(MemoryNotFound):
        await memory.delete(uuid.uuid4())
    with pytest.raises(MemoryNotFound):
        await memory.history(uuid.uuid4())


async def test_arkos_retrieve_long_memory_on_the_seed_example(settings: MemhubSettings) -> None:
    async with AsyncMemory(
        user_id="alice_test", session_id="session_test", settings=settings
    ) as memory:
        assert await memory.add_memory(SystemMessage(content="My favorite color is blue"))
        assert await memory.add_memory(UserMessage(content="I work as a nurse in Lyon."))
        context = await memory.retrieve_short_memory(turns=2)
        result = await memory.retrieve_long_memory(context)
        assert result.content.startswith("retrieved memories:\n")
        assert "system: My favorite color is blue" in result.content
        question = [UserMessage(content="What is my favorite color?")]
        hits = (await memory.retrieve_long_memory(question, mem0_limit=1)).content.splitlines()
        assert hits == ["retrieved memories:", "system: My favorite color is blue"]
        empty = AsyncMemory(user_id="nobody", settings=settings)
        assert (await empty.retrieve_long_memory(question)).content == ""
        await empty.aclose()


async def test_wait_returns_what_its_turns_became_in_a_large_scope(memory: AsyncMemory) -> None:
    # More than 1,000 newer memories in the scope: the historic import must still come back.
    await memory.add([f"recent note {n}" for n in range(1005)], user_id="big", infer=False)
    await memory.wait_idle()
    added = await memory.add(
        ["We met in Lisbon.", "We met in Lisbon."],
        user_id="big",
        infer=False,
        timestamp="2019-05-08T13:56:00Z",
        wait=True,
    )
    assert [r["memory"] for r in added["results"]] == ["We met in Lisbon.", "We met in Lisbon."]
    assert added["results"][0]["created_at"].startswith("2019-05-08")
