"""The plan's support agent (``examples/support_agent.py``) end to end, and ARKOS's pattern.

Real PostgreSQL and embedder; the chat model is ``ScriptedOpenAIServer``, standing in because
no capable model runs here; it records the prompts, so the recall is asserted on what the
model was shown.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from memhub import AsyncMemory, MemhubSettings, Memory, UserMessage
from memhub.agent import OpenAIChatModel, create_runtime
from memhub.agent.memory_flow import MEMORY_BLOCK_OPEN
from memhub.testing import ScriptedOpenAIServer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def test_second_ticket_recalls_the_first(
    llm: ScriptedOpenAIServer, model: OpenAIChatModel, settings: MemhubSettings
) -> None:
    example = load_example("support_agent")
    llm.enqueue(
        "Sorry to hear that! I reset your dashboard session; please log in again.",
        "Yes: after the session reset on ticket-1876 your dashboard login works.",
    )
    async with create_runtime() as runtime:
        memory: AsyncMemory = await runtime.load("memory", settings)
        agent = example.build_support_agent(model, memory)

        first = await example.first_ticket(agent, runtime)
        assert first.persisted and first.memories == []
        assert len(llm.chat_requests[0].messages) == 2  # nothing to recall yet: no block

        await memory.wait_idle()  # make the recall deterministic: ingestion has finished
        second = await example.next_ticket(agent, runtime)

    prompt = llm.last_messages
    assert [m["role"] for m in prompt] == ["system", "system", "user"]
    assert prompt[1]["content"].startswith(f'{MEMORY_BLOCK_OPEN} thread="ticket-1901">')
    assert "I can't log into my dashboard again." in prompt[1]["content"]
    recalled = {m["memory"]: m["metadata"]["thread_id"] for m in second.memories}
    assert recalled["I can't log into my dashboard again."] == "ticket-1876"
    assert second.text.startswith("Yes")


def test_arkos_add_context_get_context_pattern(settings: MemhubSettings) -> None:
    example = load_example("arkos_agent")
    with Memory(user_id="alice", settings=settings) as memory:
        agent = example.Agent(memory)
        agent.add_context([UserMessage(content="I'm allergic to peanuts.")])
        memory.start_new_session()
        agent.add_context([UserMessage(content="Suggest a snack with peanuts for my hike.")])
        context = agent.get_context(turns=5)
        short_only = agent.get_context(turns=5, include_long_term=False)
    assert context[0].role == "system"
    assert context[0].content.startswith("retrieved memories:")
    assert "allergic to peanuts" in context[0].content
    assert [m.content for m in context[1:]] == ["Suggest a snack with peanuts for my hike."]
    assert short_only == context[1:]
