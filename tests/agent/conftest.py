"""Fixtures of the agent tests: a scripted chat server, its model, a memory on the test database."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub.agent import OpenAIChatModel
from memhub.testing import ScriptedOpenAIServer


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAIServer]:
    """A scripted OpenAI-compatible server standing in for the chat model."""
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture
async def model(llm: ScriptedOpenAIServer) -> AsyncIterator[OpenAIChatModel]:
    chat = OpenAIChatModel("scripted-model", base_url=llm.base_url, max_retries=0, timeout=10)
    yield chat
    await chat.aclose()


@pytest.fixture
async def memory(settings: MemhubSettings) -> AsyncIterator[AsyncMemory]:
    async with AsyncMemory(settings=settings) as m:
        yield m


@pytest.fixture(autouse=True)
def _memory_switched_on(monkeypatch: pytest.MonkeyPatch) -> None:
    # The kill switch is read per call; a developer's shell must not turn these tests off.
    monkeypatch.delenv("MEMHUB_MEMORY_ENABLED", raising=False)
    monkeypatch.delenv("MEM0_ENABLED", raising=False)
