"""One chat client under both users: consolidation's LLM and the agent's chat model.

The server is ``ScriptedOpenAIServer``, the only stand-in allowed: no model runs here.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memhub.agent import OpenAIChatModel
from memhub.errors import ConfigurationError, ProviderHTTPError
from memhub.llm.openai_chat import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, OpenAIChatClient
from memhub.llm.openai_compat import OpenAICompatibleLLM
from memhub.messages import UserMessage
from memhub.testing import HTTPErrorReply, ScriptedOpenAIServer


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as running:
        yield running


def test_both_adapters_share_the_client_and_its_defaults(server: ScriptedOpenAIServer) -> None:
    llm = OpenAICompatibleLLM("m", base_url=server.base_url)
    model = OpenAIChatModel("m", base_url=server.base_url)
    for chat in (llm.chat, model.chat):
        assert isinstance(chat, OpenAIChatClient)
        assert chat.timeout == DEFAULT_TIMEOUT
        assert chat._client.max_retries == DEFAULT_MAX_RETRIES
        assert chat.base_url == server.base_url.rstrip("/")


@pytest.mark.parametrize("build", [OpenAICompatibleLLM, OpenAIChatModel])
def test_both_refuse_the_same_bad_settings(build: type) -> None:
    with pytest.raises(ConfigurationError, match="api_key"):
        build("gpt-4o-mini")  # OpenAI itself, and no key
    with pytest.raises(ConfigurationError, match="http"):
        build("m", base_url="localhost:8000/v1")
    with pytest.raises(ConfigurationError, match="max_tokens"):
        build("m", base_url="http://localhost:8000/v1", max_tokens=0)


async def test_agent_requests_carry_the_token_limit_like_the_llms(
    server: ScriptedOpenAIServer,
) -> None:
    server.enqueue("hello")
    model = OpenAIChatModel("m", base_url=server.base_url, max_tokens=32, max_retries=0)
    response = await model.complete([UserMessage(content="Hi")], [])
    await model.aclose()
    assert response.content == "hello"
    assert server.chat_requests[0].json["max_tokens"] == 32


async def test_errors_name_the_model_and_server_the_same_way(
    server: ScriptedOpenAIServer,
) -> None:
    server.enqueue(HTTPErrorReply(400, {"error": {"message": "bad"}}))
    model = OpenAIChatModel("m", base_url=server.base_url, max_retries=0)
    with pytest.raises(ProviderHTTPError, match=r"chat model 'm' at http://.* HTTP 400"):
        await model.complete([UserMessage(content="Hi")], [])
    await model.aclose()
