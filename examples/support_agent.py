"""The agent-kit plan's support agent in Python: it remembers earlier tickets of a customer.

Run it against any OpenAI-compatible server (memhub's own database is embedded by default):

    # No LLM at all: memhub's scripted stand-in (see docs/agents.md)
    python -m memhub.testing.openai_server --port 8911 --script examples/fake_llm_replies.json &
    AGENT_BASE_URL=http://127.0.0.1:8911/v1 AGENT_MODEL=scripted-model \
        python examples/support_agent.py
    # OpenAI
    OPENAI_API_KEY=sk-... .venv/bin/python examples/support_agent.py
    # vLLM (`vllm serve Qwen/Qwen2.5-7B-Instruct`)
    AGENT_BASE_URL=http://localhost:8000/v1 AGENT_MODEL=Qwen/Qwen2.5-7B-Instruct \
        .venv/bin/python examples/support_agent.py
    # Ollama (`ollama pull llama3.1`)
    AGENT_BASE_URL=http://localhost:11434/v1 AGENT_MODEL=llama3.1 .venv/bin/python examples/support_agent.py
    # llama.cpp's server with the packaged Qwen2.5-Coder-1.5B (`python tools/llm_tier.py serve`
    # prints the URL); AGENT_TOOLS=0 for a server whose chat template has no tools
    AGENT_BASE_URL=http://127.0.0.1:PORT/v1 AGENT_MODEL=local \
        .venv/bin/python examples/support_agent.py
"""

from __future__ import annotations

import asyncio
import os

from memhub import AsyncMemory
from memhub.agent import (
    Agent,
    AgentMemoryConfig,
    AgentResult,
    CallContext,
    ChatModel,
    OpenAIChatModel,
    Runtime,
    build_config_from_env,
    create_runtime,
)


async def resolve_user(runtime: Runtime, call: CallContext) -> str | None:
    return call.metadata.get("userId")


async def resolve_thread_id(runtime: Runtime, call: CallContext) -> str | None:
    return call.thread_id or call.metadata.get("threadId")


def build_support_agent(model: ChatModel, memory: AsyncMemory) -> Agent:
    """The plan's ``support-specialist``, with a memory client passed in as it is."""
    return Agent(
        name="support-specialist",
        instructions="You are a helpful assistant that remembers previous tickets.",
        model=model,
        memory=AgentMemoryConfig(
            enable=True,
            client=memory,
            recall_limit=8,
            resolve_user=resolve_user,
            resolve_thread_id=resolve_thread_id,
            tags=["support"],
        ),
    )


async def first_ticket(agent: Agent, runtime: Runtime) -> AgentResult:
    return await agent.generate(
        runtime=runtime,
        thread_id="ticket-1876",
        messages=[{"role": "user", "content": "I can't log into my dashboard again."}],
        metadata={"userId": "customer-42"},
    )


async def next_ticket(agent: Agent, runtime: Runtime) -> AgentResult:
    return await agent.generate(
        runtime=runtime,
        thread_id="ticket-1901",
        messages=[{"role": "user", "content": "Is my dashboard login problem fixed now?"}],
        metadata={"userId": "customer-42"},
    )


def model_from_env() -> OpenAIChatModel:
    base_url = os.environ.get("AGENT_BASE_URL")  # unset: OpenAI
    api_key = os.environ.get("OPENAI_API_KEY") if base_url is None else None
    return OpenAIChatModel(
        os.environ.get("AGENT_MODEL", "gpt-4o-mini"),
        base_url=base_url,
        api_key=api_key,
        timeout=float(os.environ.get("AGENT_TIMEOUT", "600")),  # small local models are slow
        tools=os.environ.get("AGENT_TOOLS", "1") != "0",
    )


async def main() -> None:
    model = model_from_env()
    async with create_runtime() as runtime:
        # Loaded through the runtime: opened once, closed with it.
        memory: AsyncMemory = await runtime.load("memory", build_config_from_env())
        agent = build_support_agent(model, memory)
        print("ticket-1876:", (await first_ticket(agent, runtime)).text)
        await memory.wait_idle()  # only so the demo's next ticket surely sees the first one
        result = await next_ticket(agent, runtime)
        print("ticket-1901:", result.text)
        print("recalled:", [m["memory"] for m in result.memories])
    await model.aclose()


if __name__ == "__main__":
    asyncio.run(main())
