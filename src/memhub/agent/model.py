"""The chat model contract of agents: one protocol, two methods, plain data in and out.

Any OpenAI-compatible endpoint fits through :class:`memhub.agent.OpenAIChatModel`; tests and
other providers implement :class:`ChatModel` directly.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from memhub.errors import ProviderOutputError
from memhub.llm.base import Usage
from memhub.messages import AIMessage, Message

__all__ = [
    "ChatModel",
    "ModelChunk",
    "ModelResponse",
    "ToolCall",
    "ToolSpec",
    "Usage",
]


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it: a name, a description and a JSON schema of arguments."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_openai(self) -> dict[str, Any]:
        """OpenAI's ``tools=[...]`` entry."""
        function = {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
        }
        return {"type": "function", "function": function}


@dataclass(frozen=True)
class ToolCall:
    """The model asks for ``name`` to be called with ``arguments`` (a JSON object text)."""

    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict; raises :class:`ProviderOutputError` if they are not."""
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError as exc:
            raise ProviderOutputError(
                f"tool call {self.name!r} has arguments that are not JSON", raw=self.arguments
            ) from exc
        if not isinstance(value, dict):
            raise ProviderOutputError(
                f"tool call {self.name!r} arguments are not a JSON object", raw=self.arguments
            )
        return value


@dataclass(frozen=True)
class ModelResponse:
    """One complete answer of the model: text, tool calls, or both."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None

    def as_message(self) -> AIMessage:
        """The assistant message to append to the transcript."""
        if not self.tool_calls:
            return AIMessage(content=self.content)
        calls = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in self.tool_calls
        ]
        return AIMessage(content=self.content, tool_calls=calls)


@dataclass(frozen=True)
class ModelChunk:
    """A piece of a streamed answer: text as it arrives; the last chunk carries ``response``."""

    text: str = ""
    response: ModelResponse | None = None


@runtime_checkable
class ChatModel(Protocol):
    """A chat model. ``messages`` are memhub messages; ``tools`` may be empty."""

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> ModelResponse:
        """The whole answer at once."""
        ...

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[ModelChunk]:
        """The answer as it is generated; the final chunk has ``response`` set."""
        ...
