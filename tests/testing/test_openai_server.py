"""ScriptedOpenAIServer, exercised through the real openai SDK over a real socket."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memhub.testing import (
    DelayedReply,
    HTTPErrorReply,
    RawReply,
    ScriptedOpenAIServer,
    deterministic_embedding,
    tool_call,
)

HELLO = [{"role": "user", "content": "say hello to me"}]


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as running:
        yield running


@pytest.fixture
async def client(server: ScriptedOpenAIServer) -> AsyncIterator[openai.AsyncOpenAI]:
    sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
    yield sdk
    await sdk.close()


async def ask(client: openai.AsyncOpenAI, **extra: Any) -> Any:
    return await client.chat.completions.create(model="m", messages=HELLO, **extra)  # type: ignore[arg-type]


async def test_text_reply(server: ScriptedOpenAIServer, client: openai.AsyncOpenAI) -> None:
    server.enqueue("hello there")
    response = await ask(client)
    assert response.object == "chat.completion"
    assert response.model == "m"
    assert response.choices[0].message.content == "hello there"
    assert response.choices[0].finish_reason == "stop"
    assert response.usage.prompt_tokens == 4
    assert response.usage.completion_tokens == 2
    assert response.usage.total_tokens == 6


async def test_replies_are_served_in_order_then_the_default(
    server: ScriptedOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue("one", "two")
    server.default = "fallback"
    texts = [(await ask(client)).choices[0].message.content for _ in range(3)]
    assert texts == ["one", "two", "fallback"]
    assert server.pending == 0


async def test_empty_script_is_a_clear_500_that_is_not_retried(
    server: ScriptedOpenAIServer,
) -> None:
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=3) as sdk:
        with pytest.raises(openai.InternalServerError, match="no scripted reply left"):
            await sdk.chat.completions.create(model="m", messages=HELLO)  # type: ignore[arg-type]
    assert len(server.chat_requests) == 1


async def test_tool_call_reply(server: ScriptedOpenAIServer, client: openai.AsyncOpenAI) -> None:
    server.enqueue(tool_call("remember", {"fact": "likes tea"}))
    choice = (await ask(client)).choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.type == "function"
    assert call.function.name == "remember"
    assert json.loads(call.function.arguments) == {"fact": "likes tea"}
    assert call.id


async def test_full_message_dict_reply_keeps_extra_fields(
    server: ScriptedOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(
        {
            "content": "done",
            "reasoning_content": "thought about it",
            "finish_reason": "length",
            "tool_calls": [
                {"id": "call_x", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        }
    )
    choice = (await ask(client)).choices[0]
    assert choice.finish_reason == "length"
    assert choice.message.content == "done"
    assert choice.message.model_extra["reasoning_content"] == "thought about it"
    assert choice.message.tool_calls[0].id == "call_x"


async def test_streaming_text_with_usage(
    server: ScriptedOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue("streamed reply in pieces")
    stream = await ask(client, stream=True, stream_options={"include_usage": True})
    chunks = [chunk async for chunk in stream]
    assert all(chunk.object == "chat.completion.chunk" for chunk in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "streamed reply in pieces"
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) == 4
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage.completion_tokens == 4


async def test_streaming_without_usage_has_no_usage_chunk(
    server: ScriptedOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue("short")
    stream = await ask(client, stream=True)
    chunks = [chunk async for chunk in stream]
    assert all(chunk.usage is None and chunk.choices for chunk in chunks)


async def test_streamed_tool_calls_accumulate_in_the_sdk_helper(
    server: ScriptedOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    arguments = {"fact": "Alice moved to Lyon in 2021", "confidence": 0.9}
    server.enqueue(tool_call("remember", arguments, content="Saving that."))
    async with client.chat.completions.stream(
        model="m",
        messages=HELLO,  # type: ignore[arg-type]
        stream_options={"include_usage": True},
    ) as stream:
        final = await stream.get_final_completion()
    message = final.choices[0].message
    assert message.content == "Saving that."
    assert message.tool_calls is not None
    assert message.tool_calls[0].function.name == "remember"
    assert json.loads(message.tool_calls[0].function.arguments) == arguments
    assert final.choices[0].finish_reason == "tool_calls"
    assert final.usage is not None


async def test_callable_reply_sees_the_request(
    server: ScriptedOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    def echo(request: dict[str, Any]) -> str:
        return str(request["messages"][-1]["content"]).upper()

    server.default = echo
    assert (await ask(client)).choices[0].message.content == "SAY HELLO TO ME"


async def test_failing_callable_is_reported_as_500(
    server: ScriptedOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    def broken(request: dict[str, Any]) -> str:
        raise AssertionError("prompt lacks the user's name")

    server.enqueue(broken, 42)  # type: ignore[arg-type]
    with pytest.raises(openai.InternalServerError, match="prompt lacks the user's name"):
        await ask(client)
    with pytest.raises(openai.InternalServerError, match="not a chat reply: 42"):
        await ask(client)


async def test_http_error_reply(server: ScriptedOpenAIServer, client: openai.AsyncOpenAI) -> None:
    server.enqueue(HTTPErrorReply(400, "response_format is not supported", {"x-custom": "1"}))
    with pytest.raises(openai.BadRequestError) as info:
        await ask(client)
    assert info.value.status_code == 400
    assert info.value.message.endswith("response_format is not supported")
    assert info.value.response.headers["x-custom"] == "1"


async def test_raw_reply_is_sent_verbatim(server: ScriptedOpenAIServer) -> None:
    server.enqueue(RawReply("not json", status=200, content_type="text/plain"))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k") as sdk:
        response = await sdk.chat.completions.with_raw_response.create(
            model="m",
            messages=HELLO,  # type: ignore[arg-type]
        )
    assert response.http_response.text == "not json"


async def test_delay_provokes_a_client_timeout(server: ScriptedOpenAIServer) -> None:
    server.enqueue(DelayedReply(5, "too late"))
    async with openai.AsyncOpenAI(
        base_url=server.base_url, api_key="k", timeout=0.3, max_retries=0
    ) as sdk:
        # the reply would come after 5 s: a timeout error, not "too late", is the 0.3 s limit
        with pytest.raises(openai.APITimeoutError):
            await sdk.chat.completions.create(model="m", messages=HELLO)  # type: ignore[arg-type]
    assert len(server.chat_requests) == 1


async def test_short_delay_then_reply(
    server: ScriptedOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(DelayedReply(0.05, "after a pause"))
    assert (await ask(client)).choices[0].message.content == "after a pause"


def test_stop_cuts_delays_short() -> None:
    """A reply an hour away: stop() and the waiting client both end within a minute's grace."""
    server = ScriptedOpenAIServer(DelayedReply(3600, "never")).start()
    url = server.base_url
    thread = threading.Thread(target=_post_quietly, args=(url,), daemon=True)
    thread.start()
    while not server.chat_requests:
        time.sleep(0.01)
    stopping = threading.Thread(target=server.stop, daemon=True)
    stopping.start()
    stopping.join(timeout=60)
    thread.join(timeout=60)
    assert not stopping.is_alive() and not thread.is_alive()


def _post_quietly(url: str) -> None:
    # no client timeout that could end the wait in the delay's place
    sdk = openai.OpenAI(base_url=url, api_key="k", max_retries=0, timeout=3600)
    try:
        sdk.chat.completions.create(model="m", messages=HELLO)  # type: ignore[arg-type]
    except openai.OpenAIError:
        pass
    finally:
        sdk.close()


async def test_requests_are_recorded(
    server: ScriptedOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue("a")
    await ask(client, temperature=0.5)
    await client.models.list()
    assert [(r.method, r.path) for r in server.requests] == [
        ("POST", "/v1/chat/completions"),
        ("GET", "/v1/models"),
    ]
    chat = server.chat_requests[0]
    assert chat.headers["authorization"] == "Bearer test-key"
    assert chat.json["temperature"] == 0.5
    assert chat.messages == HELLO
    assert server.last_messages == HELLO
    server.reset()
    assert server.requests == []
    with pytest.raises(LookupError):
        _ = server.last_messages


async def test_models_endpoint(server: ScriptedOpenAIServer, client: openai.AsyncOpenAI) -> None:
    page = await client.models.list()
    assert [model.id for model in page.data] == ["scripted-model", "scripted-embedding"]


async def test_unknown_route_is_404(
    server: ScriptedOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    with pytest.raises(openai.NotFoundError, match="no route"):
        await client.completions.create(model="m", prompt="legacy")


async def test_embeddings_are_deterministic_unit_vectors(
    server: ScriptedOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    first = await client.embeddings.create(model="e", input=["tea", "coffee"])
    again = await client.embeddings.create(model="e", input="tea", encoding_format="float")
    tea, coffee = (item.embedding for item in first.data)
    assert len(tea) == server.embedding_dim == 16
    assert math.isclose(sum(x * x for x in tea), 1.0, rel_tol=1e-5)
    assert again.data[0].embedding == pytest.approx(tea, abs=1e-6)
    assert tea != pytest.approx(coffee)
    assert tea == pytest.approx(deterministic_embedding("tea", 16), abs=1e-6)
    assert first.usage.prompt_tokens == 2


async def test_embedding_dimensions_can_be_requested(
    server: ScriptedOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    response = await client.embeddings.create(model="e", input="tea", dimensions=384)
    assert len(response.data[0].embedding) == 384


async def test_embedding_requests_can_be_scripted_to_fail(
    server: ScriptedOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue_embeddings(HTTPErrorReply(503, "warming up"))
    with pytest.raises(openai.InternalServerError, match="warming up"):
        await client.embeddings.create(model="e", input="tea")
    assert len((await client.embeddings.create(model="e", input="tea")).data) == 1
    assert len(server.embedding_requests) == 2


def test_base_url_needs_a_started_server() -> None:
    with pytest.raises(RuntimeError, match="not started"):
        _ = ScriptedOpenAIServer().base_url


def test_servers_get_distinct_ports_and_restart() -> None:
    with ScriptedOpenAIServer() as one, ScriptedOpenAIServer() as two:
        assert one.base_url != two.base_url
        assert one.base_url.startswith("http://127.0.0.1:")
        assert one.base_url.endswith("/v1")
    one.start()
    one.stop()
    one.stop()  # idempotent


@given(st.text(max_size=30), st.integers(min_value=1, max_value=64))
def test_deterministic_embedding_is_unit_length(text: str, dimension: int) -> None:
    vector = deterministic_embedding(text, dimension)
    assert len(vector) == dimension
    assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, rel_tol=1e-9)
    assert vector == deterministic_embedding(text, dimension)
