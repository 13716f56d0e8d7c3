"""Consolidation for users whose ids hold ``%``, quotes or backslashes: never parked.

The LLM is the scripted OpenAI-compatible server of ``memhub.testing`` (no capable model runs
here); everything else is real: PostgreSQL, the worker, the default embedder.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub.testing import ScriptedOpenAIServer

USERS = ["50%off", "a%%b", "%s", "o'brien \\ co"]


@pytest.fixture
async def memory(settings: MemhubSettings, llm: ScriptedOpenAIServer) -> AsyncIterator[AsyncMemory]:
    llm_settings = settings.model_copy(
        update={
            "llm_base_url": llm.base_url,
            "llm_model": "scripted-model",
            "llm_timeout": 5.0,
            "llm_max_retries": 0,
            "worker": "off",
            "consolidation_delay": 0.0,
            "job_retry_base_seconds": 0.01,
            "job_max_attempts": 2,
        }
    )
    async with AsyncMemory(settings=llm_settings) as m:
        yield m


def _supersede(request: dict[str, Any]) -> str:
    prompt = request["messages"][-1]["content"]
    match = re.search(r"\[(\d+)\] \(since [^)]*\) \"Lives in Berlin.\"", prompt)
    assert match, prompt
    op = {"op": "SUPERSEDE", "id": match.group(1), "text": "Lives in Paris.", "turns": [1]}
    return json.dumps({"operations": [op]})


async def test_awkward_users_consolidate_and_supersede(
    memory: AsyncMemory, llm: ScriptedOpenAIServer
) -> None:
    for user in USERS:
        add = {"op": "ADD", "text": "Lives in Berlin.", "turns": [1]}
        llm.enqueue(json.dumps({"operations": [add]}))
        await memory.add("I live in Berlin.", user_id=user)
        await memory.wait_idle()
        llm.enqueue(_supersede)
        await memory.add("I moved to Paris.", user_id=user)
        await memory.wait_idle()
    for user in USERS:
        current = (await memory.get_all(user_id=user, filters={"kind": "fact"}))["results"]
        assert [item["memory"] for item in current] == ["Lives in Paris."], user
    assert len(llm.chat_requests) == 2 * len(USERS)  # no retries: nothing failed
