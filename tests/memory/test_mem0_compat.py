"""Mem0 drop-in behaviour: ids at once, Mem0 1.x and 2.x call forms, metadata kept as given,
and as-of recall across a supersession.

Where an LLM is needed it is ``ScriptedOpenAIServer`` (memhub.testing): a scripted
OpenAI-compatible server on a real socket, standing in because no capable model runs here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from memhub import AsyncMemory, MemhubSettings, Memory, UsageError
from memhub.testing import ScriptedOpenAIServer


def test_readme_snippet_returns_the_new_memory_id(settings: MemhubSettings) -> None:
    with Memory(settings=settings) as m:
        memory_id = m.add("I hate olives", user_id="zed")["results"][0]["id"]
        m.wait_idle()
        got = m.get(memory_id)
    assert got is not None and got["memory"] == "I hate olives" and got["role"] == "user"


async def test_mem0_2x_filters_and_top_k(memory: AsyncMemory) -> None:
    for n, text in enumerate(["I like tea.", "I like coffee.", "I play chess."]):
        await memory.add(text, user_id="c1", infer=False, metadata={"n": n})
    await memory.add("I like tea too.", user_id="c2", infer=False)
    await memory.wait_idle()

    two = await memory.search("what do I like", filters={"user_id": "c1"}, top_k=2)
    assert len(two["results"]) == 2 and {r["user_id"] for r in two["results"]} == {"c1"}
    one = await memory.search("tea", filters={"user_id": "c1", "n": 0}, limit=5)
    assert [r["memory"] for r in one["results"]] == ["I like tea."]
    listed = await memory.get_all(filters={"user_id": "c1"}, top_k=10)
    assert len(listed["results"]) == 3
    assert len((await memory.get_all(user_id="c1", limit=1))["results"]) == 1
    assert (await memory.delete_all(filters={"user_id": "c2"}))["deleted"] >= 1
    assert (await memory.get_all(user_id="c2"))["results"] == []


async def test_threshold_drops_weak_hits(memory: AsyncMemory) -> None:
    await memory.add(["I like tea.", "The invoice is overdue."], user_id="t", infer=False)
    await memory.wait_idle()
    everything = (await memory.search("tea", user_id="t"))["results"]
    cut = everything[0]["score"]
    kept = (await memory.search("tea", user_id="t", threshold=cut))["results"]
    assert kept and all(r["score"] >= cut for r in kept) and len(kept) < len(everything)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"user_id": "a", "filters": {"user_id": "b"}}, "given twice"),
        ({"filters": {"user_id": {"in": ["a", "b"]}}}, "one id"),
        ({"user_id": "a", "limit": 3, "top_k": 5}, "disagree"),
        ({"filters": {"category": "x"}}, "one of user_id"),
    ],
)
async def test_ambiguous_calls_are_usage_errors(
    memory: AsyncMemory, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        await memory.search("x", **kwargs)  # type: ignore[arg-type]


async def test_delete_all_refuses_filters_beyond_the_scope(memory: AsyncMemory) -> None:
    with pytest.raises(UsageError, match="only scope ids"):
        await memory.delete_all(filters={"user_id": "a", "category": "x"})


async def test_caller_metadata_is_never_overwritten(memory: AsyncMemory) -> None:
    meta = {"session_id": "caller-session", "role": "caller-role", "source": "import"}
    added = await memory.add(
        [{"role": "assistant", "content": "Your order shipped."}],
        user_id="m",
        run_id="r1",
        metadata=meta,
        infer=False,
        wait=True,
    )
    (item,) = added["results"]
    assert item["metadata"] == meta and item["role"] == "assistant"
    assert (await memory.get(item["id"]))["metadata"] == meta  # type: ignore[index]


async def test_remember_roles_keeps_other_messages_short_term_only(memory: AsyncMemory) -> None:
    added = await memory.add(
        [
            {"role": "user", "content": "I moved to Oslo."},
            {"role": "assistant", "content": "Nice!"},
        ],
        user_id="r",
        run_id="thread",
        infer=False,
        remember_roles=["user"],
    )
    assert [r["memory"] for r in added["results"]] == ["I moved to Oslo."]
    await memory.wait_idle()
    assert [m["memory"] for m in (await memory.get_all(user_id="r"))["results"]] == [
        "I moved to Oslo."
    ]
    turns = await memory.recent_turns(user_id="r", session_id="thread")
    assert [t.content for t in turns] == ["I moved to Oslo.", "Nice!"]


async def test_role_is_a_column_filters_can_use(memory: AsyncMemory) -> None:
    said = [{"role": "user", "content": "Hi, I'm Ann."}, {"role": "assistant", "content": "Hi!"}]
    await memory.add(said, user_id="f", infer=False, wait=True)
    replies = await memory.get_all(user_id="f", filters={"role": "assistant"})
    assert [m["memory"] for m in replies["results"]] == ["Hi!"]
    hits = await memory.search("Ann", user_id="f", filters={"role": {"ne": "assistant"}})
    assert [m["memory"] for m in hits["results"]] == ["Hi, I'm Ann."]


# -- with an LLM (scripted) ------------------------------------------------------------------


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture
async def llm_memory(settings: MemhubSettings, llm: ScriptedOpenAIServer) -> AsyncMemory:
    quiet = settings.model_copy(
        update={
            "llm_base_url": llm.base_url,
            "llm_model": "scripted-model",
            "llm_max_retries": 0,
            "worker": "off",
            "consolidation_delay": 0.0,
        }
    )
    return AsyncMemory(settings=quiet)


def ops(*operations: dict[str, object]) -> str:
    return json.dumps({"operations": list(operations)})


async def test_infer_with_an_llm_returns_mem0_async_mode_shape(
    llm_memory: AsyncMemory, llm: ScriptedOpenAIServer
) -> None:
    async with llm_memory as memory:
        queued = await memory.add("I live in Berlin.", user_id="ada")
        (event,) = queued["results"]
        assert event["status"] == "PENDING" and "queued" in event["message"]
        assert isinstance(event["event_id"], str) and "id" not in event
        raw = await memory.add("Note: call Bob.", user_id="ada", infer=False)
        assert raw["results"][0]["event"] == "ADD" and "id" in raw["results"][0]
        await memory.delete_all(user_id="ada")


async def test_as_of_search_across_a_supersession(
    llm_memory: AsyncMemory, llm: ScriptedOpenAIServer
) -> None:
    async with llm_memory as memory:
        llm.enqueue(ops({"op": "ADD", "text": "Ada lives in Berlin.", "turns": [1]}))
        await memory.add("I live in Berlin.", user_id="ada", timestamp="2023-05-08T10:00:00Z")
        await memory.wait_idle()
        llm.enqueue(
            lambda req: ops(
                {"op": "SUPERSEDE", "id": "1", "text": "Ada lives in Paris.", "turns": [1]}
            )
        )
        await memory.add("I moved to Paris.", user_id="ada", timestamp="2024-02-01T09:00:00Z")
        await memory.wait_idle()

        async def lives(as_of: object) -> list[str]:
            found = await memory.search(
                "Where does Ada live?", user_id="ada", as_of=as_of, filters={"kind": "fact"}
            )
            return [r["memory"] for r in found["results"]]

        assert await lives(datetime(2023, 12, 1, tzinfo=UTC)) == ["Ada lives in Berlin."]
        assert await lives("2024-03-01T00:00:00Z") == ["Ada lives in Paris."]
        assert await lives("2020-01-01") == []  # before anything was said
        facts = await memory.search("live", user_id="ada", filters={"kind": "fact"})
        assert [r["memory"] for r in facts["results"]] == ["Ada lives in Paris."]
        # what was said stays, dated: the earlier turn is still an episode of 2023
        said = await memory.search("live", user_id="ada", filters={"kind": "episode"})
        dated = {r["memory"]: r["valid_from"][:10] for r in said["results"]}
        assert dated == {"I live in Berlin.": "2023-05-08", "I moved to Paris.": "2024-02-01"}


async def test_update_takes_mem0_2x_text_keyword(memory: AsyncMemory) -> None:
    added = await memory.add("I live in Rome.", user_id="u", infer=False, wait=True)
    memory_id = added["results"][0]["id"]
    await memory.update(memory_id, text="I live in Milan.")
    assert (await memory.get(memory_id))["memory"] == "I live in Milan."  # type: ignore[index]
    with pytest.raises(UsageError):
        await memory.update(memory_id)


async def test_a_retry_under_an_idempotency_key_returns_the_same_ids(memory: AsyncMemory) -> None:
    first = await memory.add("I keep bees.", user_id="i", infer=False, idempotency_key="k1")
    again = await memory.add("I keep bees.", user_id="i", infer=False, idempotency_key="k1")
    other = await memory.add("I keep bees.", user_id="j", infer=False, idempotency_key="k1")
    assert first["results"][0]["id"] == again["results"][0]["id"] != other["results"][0]["id"]
    await memory.wait_idle()
    (stored,) = (await memory.get_all(user_id="i"))["results"]
    assert stored["id"] == first["results"][0]["id"]
