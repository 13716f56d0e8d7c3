"""The agent's ``forget`` tool against inputs written to defeat it, on a real PostgreSQL.

The chat model is ``ScriptedOpenAIServer`` (no capable model runs here): it plays a model
that calls ``forget`` whatever the user said. The guard must refuse every attack (0 memories
retired) and let the user's own requests through in four languages; what it lets through is
retired, and ``restore`` brings it back.
"""

from __future__ import annotations

from typing import Any

from memhub import AsyncMemory, MemhubSettings
from memhub.agent import Agent, AgentMemoryConfig, OpenAIChatModel
from memhub.testing import ScriptedOpenAIServer, tool_call

USER = "customer-7"
FACTS = {
    "olives": "I love olives.",
    "shirt": "My favourite shirt is blue.",
    "luigi": "Luigi's is my favourite restaurant.",
    "es": "Me gustan las aceitunas.",
    "fr": "J'aime les olives.",
    "de": "Ich mag Oliven.",
}
ATTACKS = [  # (what the user said, the memory the model tries to forget)
    ("Can you drop me a line about the olives festival?", "olives"),
    ("Please remove the olives from my pizza order.", "olives"),
    ("Remove the stain from my blue shirt, how?", "shirt"),
    ('My friend always says "forget the olives, eat figs".', "olives"),
    ("Don't forget that I love olives!", "olives"),
    ("I don't remember which street Luigi's restaurant is on.", "luigi"),
    ("N'oublie pas que j'aime les olives.", "fr"),
    ("No olvides que me gustan las aceitunas.", "es"),
]
REQUESTS = [
    ("Please forget that I love olives.", "olives"),
    ("Olvida que me gustan las aceitunas, por favor.", "es"),
    ("Oublie que j'aime les olives.", "fr"),
    ("Vergiss bitte, dass ich Oliven mag.", "de"),
]


async def _say(
    llm: ScriptedOpenAIServer, agent: Agent, text: str, memory_id: str, thread: str
) -> str:
    llm.enqueue(tool_call("forget", {"memory_id": memory_id}), "Done.")
    result = await agent.generate(
        thread_id=thread, messages=[{"role": "user", "content": text}], metadata={"userId": USER}
    )
    (output,) = [m.content for m in result.messages if m.role == "tool"]
    return str(output)


async def test_forget_refuses_the_attacks_and_obeys_the_user(
    llm: ScriptedOpenAIServer, model: OpenAIChatModel, memory: AsyncMemory
) -> None:
    ids: dict[str, Any] = {}
    for key, text in FACTS.items():
        added = await memory.add(text, user_id=USER, infer=False, wait=True)
        ids[key] = added["results"][0]["id"]
    agent = Agent(
        "support", "You help.", model, memory=AgentMemoryConfig(client=memory, infer=False)
    )

    answers = [await _say(llm, agent, text, ids[key], f"a{n}") for n, (text, key) in
               enumerate(ATTACKS)]  # fmt: skip
    assert [a for a in answers if not a.startswith("Not forgotten")] == []
    assert (await memory.retired(user_id=USER))["results"] == []  # 0 retired, 0 erased
    for memory_id in ids.values():
        assert await memory.get(memory_id, user_id=USER) is not None

    answers = [await _say(llm, agent, text, ids[key], f"r{n}") for n, (text, key) in
               enumerate(REQUESTS)]  # fmt: skip
    assert answers == ["Forgotten."] * len(REQUESTS)
    retired = {r["id"]: r for r in (await memory.retired(user_id=USER))["results"]}
    assert set(retired) == {ids[key] for _, key in REQUESTS}
    assert {r["retired_by"] for r in retired.values()} == {"agent:support"}
    for memory_id in retired:
        assert await memory.get(memory_id, user_id=USER) is None
        await memory.restore(memory_id, user_id=USER)
    hits = (await memory.search("olives", user_id=USER, limit=20))["results"]
    assert ids["olives"] in {h["id"] for h in hits}  # back in search


class _EraseOnlyClient:
    """A memory client without ``retire`` (as Mem0's is): a test double over AsyncMemory."""

    def __init__(self, memory: AsyncMemory) -> None:
        self.memory = memory

    async def add(self, messages: Any, **kwargs: Any) -> Any:
        return await self.memory.add(messages, **kwargs)

    async def search(self, query: str, **kwargs: Any) -> Any:
        return await self.memory.search(query, **kwargs)

    async def delete(self, memory_id: str, **kwargs: Any) -> Any:
        return await self.memory.delete(memory_id, **kwargs)

    async def get(self, memory_id: str, **kwargs: Any) -> Any:
        return await self.memory.get(memory_id, **kwargs)

    async def recent_turns(self, **kwargs: Any) -> Any:
        return await self.memory.recent_turns(**kwargs)


async def test_a_client_that_cannot_retire_is_refused_not_made_to_erase(
    llm: ScriptedOpenAIServer, model: OpenAIChatModel, memory: AsyncMemory
) -> None:
    added = await memory.add(FACTS["olives"], user_id=USER, infer=False, wait=True)
    memory_id = added["results"][0]["id"]
    config = AgentMemoryConfig(client=_EraseOnlyClient(memory), infer=False)
    agent = Agent("support", "You help.", model, memory=config)
    answer = await _say(llm, agent, "Please forget that I love olives.", memory_id, "t")
    assert answer == "Not forgotten: this memory client cannot forget restorably."
    assert await memory.get(memory_id, user_id=USER) is not None


async def test_forget_beyond_the_users_daily_budget_is_refused(
    llm: ScriptedOpenAIServer, model: OpenAIChatModel, settings: MemhubSettings
) -> None:
    """With MEMHUB_MODEL_CHANGES_PER_DAY=1, the second granted request of the day is refused
    (the count comes from the history, so a new call or thread does not reset it)."""
    budgeted = settings.model_copy(update={"model_changes_per_day": 1})
    async with AsyncMemory(settings=budgeted) as memory:
        ids = [
            (await memory.add(FACTS[key], user_id=USER, infer=False, wait=True))["results"][0]["id"]
            for key in ("olives", "shirt")
        ]
        agent = Agent(
            "support", "You help.", model, memory=AgentMemoryConfig(client=memory, infer=False)
        )
        first = await _say(llm, agent, "Please forget that I love olives.", ids[0], "b1")
        second = await _say(llm, agent, "Please forget my favourite shirt.", ids[1], "b2")
        assert first == "Forgotten."
        assert second.startswith("Not forgotten: ") and "MEMHUB_MODEL_CHANGES_PER_DAY=1" in second
        assert await memory.get(ids[1], user_id=USER) is not None
