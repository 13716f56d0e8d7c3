"""Engine test fixtures: the scripted OpenAI-compatible server that stands in for the LLM.

No capable model runs here, so every engine test that needs an LLM talks to this real HTTP
server (a real socket, the real ``openai`` client) scripted turn by turn.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memhub.testing import ScriptedOpenAIServer


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAIServer]:
    """A scripted OpenAI-compatible chat server, stopped after the test."""
    with ScriptedOpenAIServer() as server:
        yield server
