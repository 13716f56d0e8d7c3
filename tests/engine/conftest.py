"""Engine test fixtures: the scripted OpenAI-compatible server that stands in for the LLM.

No capable model runs here, so every engine test that needs an LLM talks to this real HTTP
server (a real socket, the real ``openai`` client) scripted turn by turn.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub.engine.text import memory_hash
from memhub.store.records import NewMemory, Scope
from memhub.testing import ScriptedOpenAIServer


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAIServer]:
    """A scripted OpenAI-compatible chat server, stopped after the test."""
    with ScriptedOpenAIServer() as server:
        yield server


def scripted(settings: MemhubSettings, llm: ScriptedOpenAIServer, **changes: Any) -> MemhubSettings:
    """``settings`` on ``llm`` with an in-process worker that polls fast and retries at once.

    The second, per-turn question (engine/gaps.py) is off unless a test turns it on
    (``llm_fill_gaps=True``, tests/engine/test_gaps.py): the others script one consolidation
    call and count what it sent.
    """
    return settings.model_copy(
        update={
            "llm_base_url": llm.base_url,
            "llm_model": "scripted-model",
            "llm_timeout": 2.0,
            "llm_max_retries": 0,
            "worker": "thread",
            "worker_poll_interval": 0.05,
            "consolidation_delay": 0.0,
            "job_retry_base_seconds": 0.01,
            "llm_fill_gaps": False,
            **changes,
        }
    )


async def store_facts(memory: AsyncMemory, user_id: str, *texts: str) -> list[str]:
    """Store ``texts`` as the user's facts, as consolidation writes an ADD; returns their ids.

    ``add(..., infer=False)`` stores episodes (what was said), which consolidation never shows
    the model as stored facts nor changes; a test of what a model may do to stored facts
    seeds them here (real store, real embedder), without a scripted extraction call each.
    """
    services = await memory._services()
    vectors = await services.embedder.embed(list(texts))
    facts = [
        NewMemory(uuid.uuid4(), Scope(user_id=user_id), text, memory_hash(text), vector, {})
        for text, vector in zip(texts, vectors, strict=True)
    ]
    async with services.store.apply_jobs([], "test", {}) as batch:
        ids = await batch.insert_memories(facts, actor="consolidation")
    return [str(i) for i in ids]


@pytest.fixture
def llm_settings(settings: MemhubSettings, llm: ScriptedOpenAIServer) -> MemhubSettings:
    return scripted(settings, llm, job_max_attempts=2)


@pytest.fixture
async def memory(llm_settings: MemhubSettings) -> AsyncIterator[AsyncMemory]:
    async with AsyncMemory(settings=llm_settings) as m:
        yield m
