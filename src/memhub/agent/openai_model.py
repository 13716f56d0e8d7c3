"""``OpenAIChatModel``: agents on any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama...).

The ``openai`` SDK is imported only here, and ``memhub.agent`` imports this module only when
the class is first asked for; SDK errors are translated into memhub's error tree.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import openai

from memhub.agent.model import ModelChunk, ModelResponse, ToolCall, ToolSpec, Usage
from memhub.errors import ProviderOutputError
from memhub.llm.openai_errors import translate_openai_errors
from memhub.messages import Message

__all__ = ["OpenAIChatModel"]

OPENAI_BASE_URL = "https://api.openai.com/v1"


class OpenAIChatModel:
    """A :class:`~memhub.agent.ChatModel` over ``/v1/chat/completions``, tool calls included.

    Args:
        model: The model name as the server knows it (``gpt-4o-mini``, ``qwen2.5:7b``...).
        base_url: The server's ``/v1`` URL, e.g. ``http://localhost:8000/v1`` for vLLM or
            ``http://localhost:11434/v1`` for Ollama; OpenAI's when None.
        api_key: Bearer token; local servers get ``"not-needed"``.
        timeout: Seconds per attempt.
        max_retries: SDK retries of transient failures.
        temperature: Sampling temperature; the server's default when None.
        max_tokens: Cap on generated tokens; the server's default when None.
        client: An ``openai.AsyncOpenAI`` to use instead of building one.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        temperature: float | None = None,
        max_tokens: int | None = None,
        client: openai.AsyncOpenAI | None = None,
    ) -> None:
        self.model = model
        self.base_url = (base_url or OPENAI_BASE_URL).rstrip("/")
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._client = client or openai.AsyncOpenAI(
            api_key=api_key or "not-needed",
            base_url=self.base_url,
            timeout=timeout,
            max_retries=max_retries,
        )

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self.model!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()

    def _request(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], stream: bool
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_dict() for m in messages],
        }
        if tools:
            request["tools"] = [t.to_openai() for t in tools]
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.max_tokens is not None:
            request["max_tokens"] = self.max_tokens
        if stream:
            request["stream"] = True
            request["stream_options"] = {"include_usage": True}
        return request

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> ModelResponse:
        """The whole answer at once."""
        with translate_openai_errors(f"chat model {self.model!r} at {self.base_url}"):
            response = await self._client.chat.completions.create(
                **self._request(messages, tools, stream=False)
            )
        if not response.choices:
            raise ProviderOutputError(f"{self!r} answered without choices")
        choice = response.choices[0]
        calls = tuple(
            ToolCall(c.id, c.function.name, c.function.arguments or "{}")
            for c in choice.message.tool_calls or []
            if c.type == "function"
        )
        usage = response.usage
        return ModelResponse(
            content=choice.message.content or "",
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
        with translate_openai_errors(f"chat model {self.model!r} at {self.base_url}"):
            chunks = await self._client.chat.completions.create(
                **self._request(messages, tools, stream=True)
            )
            try:
                async for chunk in chunks:
                    if chunk.usage is not None:
                        usage = Usage(chunk.usage.prompt_tokens, chunk.usage.completion_tokens, 1)
                    for choice in chunk.choices:
                        finish = choice.finish_reason or finish
                        _collect_calls(calls, choice.delta.tool_calls or [])
                        if choice.delta.content:
                            text.append(choice.delta.content)
                            yield ModelChunk(text=choice.delta.content)
            finally:
                await chunks.close()  # an abandoned stream must not keep its connection
        tool_calls = tuple(
            ToolCall(c["id"], c["name"], c["arguments"] or "{}") for _, c in sorted(calls.items())
        )
        response = ModelResponse("".join(text), tool_calls, usage, finish)
        yield ModelChunk(response=response)


def _collect_calls(calls: dict[int, dict[str, str]], deltas: Sequence[Any]) -> None:
    for delta in deltas:
        call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
        if delta.id:
            call["id"] = delta.id
        if delta.function is not None:
            call["name"] += delta.function.name or ""
            call["arguments"] += delta.function.arguments or ""


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage(calls=1)
    return Usage(usage.prompt_tokens, usage.completion_tokens, 1)
