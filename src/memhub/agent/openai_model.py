"""``OpenAIChatModel``: agents on any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama...).

Requests go through :class:`memhub.llm.openai_chat.OpenAIChatClient`, the chat client
consolidation uses too (same defaults, checks and error translation); this module maps
memhub messages and tool calls to and from the wire. ``memhub.agent`` imports it (and so the
``openai`` SDK) only when the class is first asked for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import openai

from memhub.agent.memory_flow import without_memory_blocks
from memhub.agent.model import ModelChunk, ModelResponse, ToolCall, ToolSpec, Usage
from memhub.agent.text_tool_calls import tool_calls_in_text
from memhub.errors import ProviderHTTPError, ProviderOutputError
from memhub.llm.openai_chat import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, OpenAIChatClient
from memhub.messages import Message

__all__ = ["OpenAIChatModel"]


class OpenAIChatModel:
    """A :class:`~memhub.agent.ChatModel` over ``/v1/chat/completions``, tool calls included.

    Args:
        model: The model name as the server knows it (``gpt-4o-mini``, ``qwen2.5:7b``...).
        base_url: The server's ``/v1`` URL, e.g. ``http://localhost:8000/v1`` for vLLM or
            ``http://localhost:11434/v1`` for Ollama; OpenAI's when None.
        api_key: Bearer token. Required for OpenAI; local servers get a placeholder.
        timeout: Seconds per attempt.
        max_retries: SDK retries of transient failures.
        temperature: Sampling temperature; the server's default when None.
        max_tokens: Cap on generated tokens; the server's default when None.
        client: An ``openai.AsyncOpenAI`` to use instead of building one.
        tools: Offer tools to the server. ``False`` for a server or chat template without
            tool support (llama-cpp-python's default ``chatml`` format, say): the agent then
            answers from injected memory alone. Either way, tool calls a model writes as
            text are read as tool calls, never passed on as the answer.

    A stream the server breaks off (killed, connection lost) after it has sent text ends
    with what was said and ``finish_reason="interrupted"`` instead of raising.

    Raises:
        ConfigurationError: An argument cannot work (no API key for OpenAI, bad URL...).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        temperature: float | None = None,
        max_tokens: int | None = None,
        client: openai.AsyncOpenAI | None = None,
        tools: bool = True,
    ) -> None:
        self.model = model
        self.temperature = temperature
        self.tools = tools
        self.chat = OpenAIChatClient(
            model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            max_tokens=max_tokens,
            client=client,
            purpose="chat model",
        )

    @property
    def base_url(self) -> str:
        """The server's ``/v1`` URL."""
        return self.chat.base_url

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self.model!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.chat.aclose()

    def _request(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        options: dict[str, Any] = {}
        if tools and self.tools:
            options["tools"] = [t.to_openai() for t in tools]
        if self.temperature is not None:
            options["temperature"] = self.temperature
        return [m.to_dict() for m in messages], options

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> ModelResponse:
        """The whole answer at once."""
        wire, options = self._request(messages, tools)
        response = await self.chat.create(wire, **options)
        if not response.choices:
            raise ProviderOutputError(f"{self!r} answered without choices")
        choice = response.choices[0]
        calls = tuple(
            ToolCall(c.id, c.function.name, c.function.arguments or "{}")
            for c in choice.message.tool_calls or []
            if c.type == "function"
        )
        usage = response.usage
        content = without_memory_blocks(choice.message.content or "")
        if not calls:
            calls = tool_calls_in_text(content)
            content = "" if calls else content
        return ModelResponse(
            content=content,
            tool_calls=calls,
            usage=Usage(usage.prompt_tokens, usage.completion_tokens, 1)
            if usage
            else Usage(calls=1),
            finish_reason=choice.finish_reason,
        )

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[ModelChunk]:
        """The answer as it is generated; the final chunk carries the whole response."""
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        usage = Usage()
        finish: str | None = None
        wire, options = self._request(messages, tools)
        try:
            async with self.chat.stream(wire, **options) as chunks:
                async for chunk in chunks:
                    if chunk.usage is not None:
                        usage = Usage(chunk.usage.prompt_tokens, chunk.usage.completion_tokens, 1)
                    for choice in chunk.choices:
                        finish = choice.finish_reason or finish
                        _collect_calls(calls, choice.delta.tool_calls or [])
                        if choice.delta.content:
                            text.append(choice.delta.content)
                            yield ModelChunk(text=choice.delta.content)
        except ProviderHTTPError:  # the connection broke; a malformed chunk still raises
            if not text or calls:
                raise  # nothing to give back, or a tool call cut in half
            finish = "interrupted"  # the answer so far is the answer, marked as cut off
        tool_calls = tuple(
            ToolCall(c["id"], c["name"], c["arguments"] or "{}") for _, c in sorted(calls.items())
        )
        content = without_memory_blocks("".join(text))
        if not tool_calls and finish != "interrupted":
            tool_calls = tool_calls_in_text(content)
            content = "" if tool_calls else content
        response = ModelResponse(content, tool_calls, usage, finish)
        yield ModelChunk(response=response)


def _collect_calls(calls: dict[int, dict[str, str]], deltas: Sequence[Any]) -> None:
    for delta in deltas:
        call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
        if delta.id:
            call["id"] = delta.id
        if delta.function is not None:
            call["name"] += delta.function.name or ""
            call["arguments"] += delta.function.arguments or ""
