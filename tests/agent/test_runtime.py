"""The runtime: cached resources, cleanup once (also after a failed call), on a real database.

The chat model is ``ScriptedOpenAIServer``, standing in because no capable model runs here.
"""

from __future__ import annotations

from typing import Any

import pytest

from memhub import AsyncMemory, MemhubSettings, UsageError
from memhub.agent import Agent, AgentMemoryConfig, OpenAIChatModel, create_runtime
from memhub.errors import ProviderError
from memhub.store.postgres.store import PostgresStore
from memhub.testing import HTTPErrorReply, ScriptedOpenAIServer


async def test_resources_are_loaded_lazily_and_cached_per_config() -> None:
    built: list[Any] = []

    async def factory(runtime: Any, config: Any) -> object:
        built.append(config)
        runtime.on_cleanup(lambda: built.append("closed"))
        return object()

    async with create_runtime() as runtime:
        runtime.register_resource("thing", factory)
        assert built == []
        a = await runtime.load("thing", {"x": 1, "y": 2})
        assert await runtime.load("thing", {"y": 2, "x": 1}) is a
        assert await runtime.load("thing", {"x": 2}) is not a
    assert built == [{"x": 1, "y": 2}, {"x": 2}, "closed", "closed"]
    await runtime.aclose()
    assert built.count("closed") == 2
    with pytest.raises(UsageError):
        await runtime.load("thing", {"x": 1})


async def test_unknown_resource_and_failing_hooks() -> None:
    calls: list[str] = []

    def broken() -> None:
        raise RuntimeError("boom")

    async with create_runtime() as runtime:
        with pytest.raises(UsageError, match="no resource factory"):
            await runtime.load("nope")
        runtime.on_cleanup(lambda: calls.append("first"))
        runtime.on_cleanup(broken)  # logged; the others still run
    assert calls == ["first"]


async def test_memory_resource_is_one_client_per_settings(settings: MemhubSettings) -> None:
    async with create_runtime() as runtime:
        first = await runtime.load("memory", settings)
        assert isinstance(first, AsyncMemory)
        assert await runtime.load("memory", settings.model_copy()) is first


async def test_cleanup_closes_the_pool_exactly_once_also_when_the_call_failed(
    llm: ScriptedOpenAIServer,
    model: OpenAIChatModel,
    settings: MemhubSettings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    closes: list[PostgresStore] = []
    original = PostgresStore.aclose

    async def counting_close(self: PostgresStore) -> None:
        closes.append(self)
        await original(self)

    monkeypatch.setattr(PostgresStore, "aclose", counting_close)
    llm.enqueue(HTTPErrorReply(500, "model down", {"x-should-retry": "false"}))
    agent = Agent("support", "Help.", model, memory=AgentMemoryConfig(provider_config=settings))
    runtime = create_runtime()
    with pytest.raises(ProviderError):
        async with runtime:
            await agent.generate(
                runtime=runtime,
                thread_id="t",
                messages=[{"role": "user", "content": "Hi"}],
                metadata={"user_id": "u"},
            )
    assert len(closes) == 1  # the pool the recall opened, closed with the runtime
    await runtime.aclose()
    assert len(closes) == 1


async def test_a_call_without_runtime_cleans_up_its_own(
    llm: ScriptedOpenAIServer,
    model: OpenAIChatModel,
    settings: MemhubSettings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    closes: list[object] = []
    original = PostgresStore.aclose

    async def counting_close(self: PostgresStore) -> None:
        closes.append(self)
        await original(self)

    monkeypatch.setattr(PostgresStore, "aclose", counting_close)
    llm.enqueue("Hello.")
    agent = Agent("a", "Help.", model, memory=AgentMemoryConfig(provider_config=settings))
    result = await agent.generate(
        thread_id="t", messages=[{"role": "user", "content": "Hi"}], metadata={"user_id": "u"}
    )
    assert result.persisted and len(closes) == 1
