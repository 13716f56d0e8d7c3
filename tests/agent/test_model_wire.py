"""What local servers and small models do on the wire, and what the agent makes of it.

Doubles stand in where the real part cannot be scripted: ``ScriptedOpenAIServer`` answers
as Qwen2.5-Coder-1.5B did through llama-cpp-python (a tool call written as text in the
answer), and a raw socket server plays a model server killed mid-stream (it sends one chunk,
then resets the connection), which a real server cannot be made to do on cue.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from memhub import AsyncMemory
from memhub.agent import Agent, AgentMemoryConfig, OpenAIChatModel
from memhub.agent.text_tool_calls import looks_like_tool_call_start, tool_calls_in_text
from memhub.testing import ScriptedOpenAIServer, tool_call

USER = "customer-42"
META = {"userId": USER}
QUESTION = {"role": "user", "content": "I can't log into my dashboard again."}


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "search_memory", "arguments": {"query": "dashboard login"}}',
        '```json\n{"name": "search_memory", "parameters": {"query": "dashboard login"}}\n```',
        '<tool_call>\n{"name": "search_memory", "arguments": {"query": "dashboard login"}}\n'
        "</tool_call>",
        '[{"type": "function", "function": {"name": "search_memory", "arguments": '
        '"{\\"query\\": \\"dashboard login\\"}"}}]',
        # what Qwen2.5-Coder-1.5B wrote through llama.cpp's server for the second ticket
        '{{"name": "search_memory", "arguments": {"query": "dashboard login"}}}',
    ],
)
def test_tool_calls_written_as_text_are_recognised(text: str) -> None:
    (call,) = tool_calls_in_text(text)
    assert call.name == "search_memory"
    assert call.parsed_arguments() == {"query": "dashboard login"}


@pytest.mark.parametrize(
    "text",
    [
        "Try resetting your password.",
        'The config is {"name": "x", "arguments": {}} and then restart.',
        '{"name": "x", "arguments": {}} is what a tool call looks like.',
        '{"name": "Ada", "city": "Paris"}',  # JSON, but not a call
    ],
)
def test_answers_are_not_tool_calls(text: str) -> None:
    assert tool_calls_in_text(text) == ()


def test_only_an_answers_beginning_is_held_back() -> None:
    assert looks_like_tool_call_start('{"na')
    assert looks_like_tool_call_start("<tool_")
    assert not looks_like_tool_call_start("Sure, ")


def support_agent(model: OpenAIChatModel, memory: AsyncMemory) -> Agent:
    return Agent(
        "support",
        "You are a support agent.",
        model,
        memory=AgentMemoryConfig(client=memory, long_term_roles=("user", "assistant")),
    )


async def test_a_tool_call_in_the_answer_is_run_not_shown(
    llm: ScriptedOpenAIServer, model: OpenAIChatModel, memory: AsyncMemory
) -> None:
    # What Qwen2.5-Coder-1.5B answered through llama-cpp-python's server (issue 25).
    llm.enqueue(
        '{"name": "forget", "arguments": {"memory_id": "dashboard_login"}}',
        "Please try resetting your Okta session.",
    )
    result = await support_agent(model, memory).generate(
        messages=[QUESTION], metadata=META, thread_id="ticket-1"
    )
    assert result.text == "Please try resetting your Okta session."
    assert "forget" not in result.text and result.steps == 2
    tool_reply = [m for m in result.messages if m.role == "tool"]
    assert tool_reply, "the call was run (and refused by the tool), not passed to the user"


async def test_a_streamed_tool_call_in_text_is_never_streamed_to_the_user(
    llm: ScriptedOpenAIServer, model: OpenAIChatModel, memory: AsyncMemory
) -> None:
    llm.enqueue(
        '{"name": "search_memory", "arguments": {"query": "dashboard"}}', "Reset your session."
    )
    shown = [
        chunk.text
        async for chunk in support_agent(model, memory).stream(
            messages=[QUESTION], metadata=META, thread_id="ticket-1"
        )
        if chunk.kind == "text"
    ]
    assert "".join(shown) == "Reset your session."


async def test_an_empty_answer_is_asked_again_with_the_tools_withheld(
    llm: ScriptedOpenAIServer, model: OpenAIChatModel, memory: AsyncMemory
) -> None:
    # Qwen2.5-Coder-1.5B through llama.cpp's server answered a tool round with nothing.
    for streaming in (False, True):
        llm.enqueue(tool_call("search_memory", {"query": "dashboard"}), "", "Reset your session.")
        before = len(llm.chat_requests)
        agent = support_agent(model, memory)
        if streaming:
            chunks = [
                c async for c in agent.stream(messages=[QUESTION], metadata=META, thread_id="t")
            ]
            shown = "".join(c.text for c in chunks if c.kind == "text")
            result = chunks[-1].result
            assert shown == "Reset your session."
        else:
            result = await agent.generate(messages=[QUESTION], metadata=META, thread_id="t")
        assert result is not None
        assert (result.text, result.steps) == ("Reset your session.", 3)
        sent = [r.json for r in llm.chat_requests[before:]]
        assert ["tools" in r for r in sent] == [True, True, False]
        assert [m.content for m in result.messages if m.role == "assistant"][-1] == result.text


ECHO = (
    '\n\n<memhub:memories thread="t">\nMemories about this user...\n'
    '<memory id="2a23" date="2026-12-01">I can\'t log into my dashboard again.</memory>\n'
    "</memhub:memories>"
)


async def test_an_echoed_memory_block_never_reaches_the_user(
    llm: ScriptedOpenAIServer, model: OpenAIChatModel, memory: AsyncMemory
) -> None:
    # What Qwen2.5-Coder-1.5B answered the second ticket of examples/support_agent.py with.
    call = '{{"name": "search_memory", "arguments": {"query": "dashboard login"}}}'
    llm.enqueue(call + ECHO, "It works again?" + ECHO[:60])
    result = await support_agent(model, memory).generate(
        messages=[QUESTION], metadata=META, thread_id="t"
    )
    assert result.text == "It works again?"  # the call was run; the block (even cut off) gone
    assert [m.role for m in result.messages].count("tool") == 1


async def test_the_last_step_offers_no_tools(
    llm: ScriptedOpenAIServer, model: OpenAIChatModel, memory: AsyncMemory
) -> None:
    """A model that calls tools at every step still answers: the last step cannot call."""
    llm.enqueue(tool_call("search_memory", {"query": "a"}), "Here is what I found.")
    agent = Agent(
        "support",
        "You are a support agent.",
        model,
        memory=AgentMemoryConfig(client=memory, long_term_roles=("user", "assistant")),
        max_steps=2,
    )
    result = await agent.generate(messages=[QUESTION], metadata=META, thread_id="t")
    assert (result.text, result.steps, result.finish_reason) == ("Here is what I found.", 2, "stop")
    assert ["tools" in r.json for r in llm.chat_requests] == [True, False]


async def test_tools_off_sends_no_tools(llm: ScriptedOpenAIServer, memory: AsyncMemory) -> None:
    llm.enqueue("Reset your session.")
    model = OpenAIChatModel("m", base_url=llm.base_url, max_retries=0, tools=False)
    try:
        result = await support_agent(model, memory).generate(
            messages=[QUESTION], metadata=META, thread_id="ticket-1"
        )
    finally:
        await model.aclose()
    assert result.text == "Reset your session."
    assert "tools" not in llm.chat_requests[0].json


@pytest.fixture
def killed_mid_stream() -> Iterator[str]:
    """A server that streams one chunk of an answer and then dies (connection reset)."""
    listener = socket.create_server(("127.0.0.1", 0))
    chunk = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": "Checking your"}, "finish_reason": None}],
    }

    def serve() -> None:
        conn, _ = listener.accept()
        conn.recv(65536)
        event = f"data: {json.dumps(chunk)}\n\n".encode()
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + f"{len(event):x}\r\n".encode() + event + b"\r\n"
        )
        time.sleep(0.2)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        conn.close()  # linger 0: a reset, as when the server process is killed

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    thread.join(timeout=5)
    listener.close()


async def test_a_server_killed_mid_stream_still_returns_and_persists_partial(
    killed_mid_stream: str, memory: AsyncMemory
) -> None:
    model = OpenAIChatModel("m", base_url=killed_mid_stream, max_retries=0)
    try:
        agent = support_agent(model, memory)
        chunks = [
            c async for c in agent.stream(messages=[QUESTION], metadata=META, thread_id="ticket-1")
        ]
    finally:
        await model.aclose()
    done = chunks[-1]
    assert done.kind == "done" and done.result is not None
    assert done.result.text == "Checking your"
    assert done.result.finish_reason == "interrupted"
    await memory.wait_idle()
    found = {
        m["memory"]: m["metadata"]["partial"]
        for m in (await memory.get_all(user_id=USER))["results"]
    }
    assert found == {QUESTION["content"]: True, "Checking your": True}
