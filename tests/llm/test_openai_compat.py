"""OpenAICompatibleLLM through the real openai SDK against ScriptedOpenAIServer."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from memhub.errors import ConfigurationError, ProviderHTTPError, ProviderOutputError, UsageError
from memhub.llm import ChatMessage, Usage
from memhub.llm.openai_compat import OpenAICompatibleLLM
from memhub.testing import DelayedReply, HTTPErrorReply, RawReply, ScriptedOpenAIServer


class Facts(BaseModel):
    facts: list[str]


ASK: list[ChatMessage] = [{"role": "user", "content": "Alice lives in Paris. Extract facts."}]
GOOD = '{"facts": ["Alice lives in Paris"]}'


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as running:
        yield running


@pytest.fixture
async def llm(server: ScriptedOpenAIServer) -> AsyncIterator[OpenAICompatibleLLM]:
    client = OpenAICompatibleLLM("test-model", base_url=server.base_url, timeout=5.0)
    yield client
    await client.aclose()


@pytest.fixture
def retry_waits(caplog: pytest.LogCaptureFixture) -> Callable[[], list[float]]:
    """The seconds the openai SDK decided to wait before each retry, as it logs them.

    What backoff was chosen is the behaviour under test; how long the test took is not (on a
    loaded machine it is anything).
    """
    caplog.set_level(logging.INFO, logger="openai")

    def waits() -> list[float]:
        retries = [r for r in caplog.records if r.getMessage().startswith("Retrying request in")]
        return [float(r.args[0]) for r in retries]  # type: ignore[index]

    return waits


def words(request_messages: list[dict[str, Any]]) -> int:
    return sum(len(m["content"].split()) for m in request_messages)


async def test_schema_response_is_parsed(
    server: ScriptedOpenAIServer, llm: OpenAICompatibleLLM
) -> None:
    server.enqueue(GOOD)
    result = await llm.generate_structured(ASK, Facts)
    assert result.value == Facts(facts=["Alice lives in Paris"])
    assert result.raw == GOOD
    request = server.chat_requests[0].json
    assert request["model"] == "test-model"
    assert request["temperature"] == 0.0
    assert request["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Facts", "schema": Facts.model_json_schema(), "strict": False},
    }
    assert result.usage == Usage(words(request["messages"]), len(GOOD.split()), 1)


@pytest.mark.parametrize(
    "reply",
    [
        f"```json\n{GOOD}\n```",
        f"<think>The user wants facts. {{maybe}}</think>\n{GOOD}",
        f"Here you go:\n{GOOD}\nLet me know if you need more!",
    ],
)
async def test_wrapped_output_is_parsed_without_repair(
    server: ScriptedOpenAIServer, llm: OpenAICompatibleLLM, reply: str
) -> None:
    server.enqueue(reply)
    result = await llm.generate_structured(ASK, Facts)
    assert result.value == Facts(facts=["Alice lives in Paris"])
    assert result.usage.calls == 1
    assert len(server.chat_requests) == 1


async def test_garbage_then_valid_costs_one_repair_call(
    server: ScriptedOpenAIServer, llm: OpenAICompatibleLLM
) -> None:
    server.enqueue("I am not JSON at all", GOOD)
    result = await llm.generate_structured(ASK, Facts)
    assert result.value == Facts(facts=["Alice lives in Paris"])
    first, second = (r.json for r in server.chat_requests)
    assert second["messages"][-2] == {"role": "assistant", "content": "I am not JSON at all"}
    assert "corrected JSON" in second["messages"][-1]["content"]
    assert second["response_format"]["type"] == "json_schema"
    prompt = words(first["messages"]) + words(second["messages"])
    assert result.usage == Usage(prompt_tokens=prompt, completion_tokens=6 + 5, calls=2)


async def test_garbage_twice_raises_with_raw(
    server: ScriptedOpenAIServer, llm: OpenAICompatibleLLM
) -> None:
    server.enqueue("garbage one", '{"facts": "still wrong"}')
    with pytest.raises(ProviderOutputError) as info:
        await llm.generate_structured(ASK, Facts)
    assert info.value.raw == '{"facts": "still wrong"}'
    assert len(server.chat_requests) == 2


async def test_server_error_is_retried(
    server: ScriptedOpenAIServer, llm: OpenAICompatibleLLM
) -> None:
    server.enqueue(HTTPErrorReply(500, "overloaded"), GOOD)
    result = await llm.generate_structured(ASK, Facts)
    assert result.value.facts == ["Alice lives in Paris"]
    assert len(server.chat_requests) == 2
    assert result.usage.calls == 1  # HTTP retries are not completions


async def test_rate_limit_is_retried_honouring_retry_after(
    server: ScriptedOpenAIServer, llm: OpenAICompatibleLLM, retry_waits: Callable[[], list[float]]
) -> None:
    # The first call confirms the response_format (until then a failure is retried at once,
    # by memhub, not the SDK); the second's 429 is the SDK's retry with its wait.
    server.enqueue(GOOD, HTTPErrorReply(429, "slow down", {"retry-after-ms": "20"}), GOOD)
    await llm.generate_structured(ASK, Facts)
    result = await llm.generate_structured(ASK, Facts)
    assert result.value.facts == ["Alice lives in Paris"]
    assert len(server.chat_requests) == 3
    assert retry_waits() == [0.02]  # the 20 ms hint, not the 0.5 s backoff


async def test_persistent_server_errors_raise_after_retries(server: ScriptedOpenAIServer) -> None:
    server.default = HTTPErrorReply(503, "down", {"retry-after-ms": "1"})
    async with OpenAICompatibleLLM("m", base_url=server.base_url, max_retries=2) as llm:
        with pytest.raises(ProviderHTTPError, match="503") as info:
            await llm.generate_structured(ASK, Facts)
    assert info.value.status_code == 503
    assert len(server.chat_requests) == 3


async def test_client_errors_are_not_retried(
    server: ScriptedOpenAIServer, llm: OpenAICompatibleLLM
) -> None:
    server.enqueue(HTTPErrorReply(401, "bad key"))
    with pytest.raises(ProviderHTTPError, match="bad key") as info:
        await llm.complete(ASK)
    assert info.value.status_code == 401
    assert len(server.chat_requests) == 1


def reject_formats(*rejected: str) -> Any:
    """A reply that refuses the given response_format types like a server without support."""

    def reply(request: dict[str, Any]) -> Any:
        kind = (request.get("response_format") or {}).get("type")
        if kind in rejected:
            return HTTPErrorReply(400, f"response_format type {kind} is not supported")
        return GOOD

    return reply


async def test_auto_falls_back_to_json_object_and_remembers(
    server: ScriptedOpenAIServer, llm: OpenAICompatibleLLM
) -> None:
    server.default = reject_formats("json_schema")
    first = await llm.generate_structured(ASK, Facts)
    assert first.value.facts == ["Alice lives in Paris"]
    assert llm.structured_output == "json_object"
    await llm.generate_structured(ASK, Facts)
    kinds = [r.json["response_format"]["type"] for r in server.chat_requests]
    assert kinds == ["json_schema", "json_object", "json_object"]


async def test_auto_falls_back_to_prompt_only(
    server: ScriptedOpenAIServer, llm: OpenAICompatibleLLM
) -> None:
    server.default = reject_formats("json_schema", "json_object")
    result = await llm.generate_structured(ASK, Facts)
    assert result.value.facts == ["Alice lives in Paris"]
    assert llm.structured_output == "none"
    assert "response_format" not in server.chat_requests[-1].json
    assert "JSON schema" in server.chat_requests[-1].json["messages"][0]["content"]


async def test_auto_falls_back_on_422(
    server: ScriptedOpenAIServer, llm: OpenAICompatibleLLM
) -> None:
    server.enqueue(HTTPErrorReply(422, "response_format: json_schema is not supported"), GOOD)
    await llm.generate_structured(ASK, Facts)
    assert llm.structured_output == "json_object"


# A double of llama-cpp-python 0.3.36's server (`python -m llama_cpp.server`): its request model
# allows response_format types 'text' and 'json_object' only, and its error handler turns the
# pydantic error into an HTTP 500 with this message (seen against the real server, issue 25).
LLAMA_CPP_PYTHON_REJECTION = (
    "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}]"
)


def like_llama_cpp_python(request: dict[str, Any]) -> Any:
    kind = (request.get("response_format") or {}).get("type")
    if kind not in (None, "text", "json_object"):
        return HTTPErrorReply(
            500, {"error": {"message": LLAMA_CPP_PYTHON_REJECTION, "type": "internal_server_error"}}
        )
    return GOOD


async def test_llama_cpp_python_500_falls_back_once_without_retries(
    server: ScriptedOpenAIServer, retry_waits: Callable[[], list[float]]
) -> None:
    server.default = like_llama_cpp_python
    async with OpenAICompatibleLLM("m", base_url=server.base_url, max_retries=3) as llm:
        for _ in range(3):
            result = await llm.generate_structured(ASK, Facts)
            assert result.value.facts == ["Alice lives in Paris"]
        assert llm.structured_output == "json_object"
    kinds = [r.json["response_format"]["type"] for r in server.chat_requests]
    # one rejected request (not four: the SDK's retries are skipped), then remembered
    assert kinds == ["json_schema", "json_object", "json_object", "json_object"]
    assert retry_waits() == []  # no retry backoff


async def test_a_500_that_is_not_a_rejection_is_retried_as_usual(
    server: ScriptedOpenAIServer,
) -> None:
    server.enqueue(HTTPErrorReply(500, "CUDA out of memory", {"retry-after-ms": "1"}), GOOD)
    async with OpenAICompatibleLLM("m", base_url=server.base_url, max_retries=2) as llm:
        result = await llm.generate_structured(ASK, Facts)
        assert result.value.facts == ["Alice lives in Paris"]
        assert llm.structured_output == "json_schema"
    assert len(server.chat_requests) == 2


async def test_unrelated_400_does_not_fall_back(
    server: ScriptedOpenAIServer, llm: OpenAICompatibleLLM
) -> None:
    server.enqueue(HTTPErrorReply(400, "model 'test-model' not found"))
    with pytest.raises(ProviderHTTPError, match="not found"):
        await llm.generate_structured(ASK, Facts)
    assert llm.structured_output == "json_schema"


async def test_explicit_mode_never_falls_back(server: ScriptedOpenAIServer) -> None:
    server.default = reject_formats("json_schema")
    async with OpenAICompatibleLLM(
        "m", base_url=server.base_url, structured_output="json_schema"
    ) as llm:
        with pytest.raises(ProviderHTTPError) as info:
            await llm.generate_structured(ASK, Facts)
    assert info.value.status_code == 400
    assert len(server.chat_requests) == 1


@pytest.mark.parametrize(("mode", "expected"), [("json_object", "json_object"), ("none", None)])
async def test_explicit_modes_send_their_format(
    server: ScriptedOpenAIServer, mode: Any, expected: str | None
) -> None:
    server.enqueue(GOOD)
    async with OpenAICompatibleLLM("m", base_url=server.base_url, structured_output=mode) as llm:
        await llm.generate_structured(ASK, Facts)
    assert (server.chat_requests[0].json.get("response_format") or {}).get("type") == expected


async def test_timeout_raises_promptly(server: ScriptedOpenAIServer) -> None:
    """The reply would come after 10 s: an answer instead of the error means no timeout."""
    server.enqueue(DelayedReply(10, GOOD))
    async with OpenAICompatibleLLM(
        "m", base_url=server.base_url, timeout=0.5, max_retries=0
    ) as llm:
        with pytest.raises(ProviderHTTPError, match=r"did not answer within 0\.5 s") as info:
            await llm.generate_structured(ASK, Facts)
    assert info.value.status_code is None
    assert len(server.chat_requests) == 1


async def test_timeout_is_retried(server: ScriptedOpenAIServer) -> None:
    server.enqueue(DelayedReply(10, "late"), GOOD)
    async with OpenAICompatibleLLM(
        "m", base_url=server.base_url, timeout=0.5, max_retries=1
    ) as llm:
        result = await llm.generate_structured(ASK, Facts)
    assert result.value.facts == ["Alice lives in Paris"]
    assert len(server.chat_requests) == 2


async def test_unreachable_server_raises_http_error() -> None:
    with ScriptedOpenAIServer() as gone:
        url = gone.base_url  # a port that nobody listens on once the server stops
    async with OpenAICompatibleLLM("m", base_url=url, max_retries=0) as llm:
        with pytest.raises(ProviderHTTPError, match="cannot reach"):
            await llm.complete(ASK)


async def test_non_json_body_raises_output_error(
    server: ScriptedOpenAIServer, llm: OpenAICompatibleLLM
) -> None:
    server.enqueue(RawReply("<html>proxy error</html>", content_type="text/html"))
    with pytest.raises(ProviderOutputError, match="not return a chat completion") as info:
        await llm.complete(ASK)
    assert info.value.raw == "<html>proxy error</html>"


async def test_malformed_json_body_raises_output_error(
    server: ScriptedOpenAIServer, llm: OpenAICompatibleLLM
) -> None:
    server.enqueue(RawReply('{"choices": [', content_type="application/json"))
    with pytest.raises(ProviderOutputError):
        await llm.complete(ASK)


async def test_complete_returns_text_and_usage(server: ScriptedOpenAIServer) -> None:
    server.enqueue("A short free-text answer.")
    async with OpenAICompatibleLLM(
        "m", base_url=server.base_url, temperature=0.7, max_tokens=64
    ) as llm:
        completion = await llm.complete(ASK)
    assert completion.text == "A short free-text answer."
    assert completion.finish_reason == "stop"
    assert completion.usage == Usage(6, 4, 1)
    request = server.chat_requests[0].json
    assert request["temperature"] == 0.7
    assert request["max_tokens"] == 64
    assert "response_format" not in request
    assert server.chat_requests[0].headers["authorization"] == "Bearer not-needed"


async def test_api_key_is_sent(server: ScriptedOpenAIServer) -> None:
    server.enqueue("ok")
    async with OpenAICompatibleLLM("m", base_url=server.base_url, api_key="sk-test") as llm:
        await llm.complete(ASK)
    assert server.chat_requests[0].headers["authorization"] == "Bearer sk-test"


def test_openai_without_api_key_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="api_key"):
        OpenAICompatibleLLM("gpt-4o-mini")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"model": ""},
        {"base_url": "localhost:8000/v1"},
        {"timeout": 0},
        {"max_retries": -1},
        {"structured_output": "xml"},
        {"max_tokens": 0},
    ],
)
def test_bad_settings_are_configuration_errors(kwargs: dict[str, Any]) -> None:
    settings: dict[str, Any] = {"model": "m", "base_url": "http://localhost:1/v1", **kwargs}
    with pytest.raises(ConfigurationError):
        OpenAICompatibleLLM(**settings)


async def test_unknown_role_is_a_usage_error(llm: OpenAICompatibleLLM) -> None:
    messages: Any = [{"role": "tool", "content": "x"}]
    with pytest.raises(UsageError, match="tool"):
        await llm.complete(messages)
