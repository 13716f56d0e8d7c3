"""The LLM contract memhub depends on, its value types, and the template every adapter fills.

``BaseLLM.generate_structured`` owns prompting for JSON, tolerant parsing, the one repair
retry and usage accounting; an adapter implements only ``_complete`` (one chat call).
"""

from __future__ import annotations

import json
import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, Literal, Protocol, Self, TypedDict, TypeVar, runtime_checkable

from pydantic import BaseModel

from memhub.errors import ProviderOutputError
from memhub.llm.parsing import parse_structured

__all__ = [
    "LLM",
    "BaseLLM",
    "ChatMessage",
    "Completion",
    "OutputSchema",
    "StructuredResult",
    "UnusableAnswerError",
    "Usage",
]

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)


class ChatMessage(TypedDict):
    """One chat turn, in the shape every OpenAI-compatible server accepts."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class Usage:
    """Tokens spent and requests made; add two to total them.

    Attributes:
        prompt_tokens: Input tokens, as reported by the server (0 if it reports none).
        completion_tokens: Output tokens, as reported by the server.
        calls: Completion requests that returned, including repair calls.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.calls + other.calls,
        )


@dataclass(frozen=True)
class Completion:
    """The text of one chat completion and what it cost.

    Attributes:
        text: The assistant's content ("" if it sent none).
        usage: Tokens of this one call, with ``calls=1``.
        finish_reason: Why generation stopped (``"stop"``, ``"length"``...), if reported.
    """

    text: str
    usage: Usage
    finish_reason: str | None = None


class UnusableAnswerError(ProviderOutputError):
    """The model answered twice (first try and repair) and neither answer validates.

    Attributes:
        usage: What the two calls cost: they were made, so they are counted.
        raw: The last answer.
    """

    def __init__(self, message: str, *, raw: str, usage: Usage) -> None:
        super().__init__(message, raw=raw)
        self.usage = usage


@dataclass(frozen=True)
class StructuredResult(Generic[T]):
    """A validated answer, what it cost, and the text it was parsed from.

    Attributes:
        value: The validated response model.
        usage: Usage summed over every call it took (the first one and a repair, if any).
        raw: The completion text the value was parsed from.
    """

    value: T
    usage: Usage
    raw: str


@dataclass(frozen=True)
class OutputSchema:
    """The JSON shape an adapter should ask its server to enforce, if it can.

    Attributes:
        name: A schema name (``[a-zA-Z0-9_-]``, as OpenAI requires).
        schema: The JSON schema of the response model.
    """

    name: str
    schema: dict[str, Any]

    @classmethod
    def for_model(cls, model: type[BaseModel]) -> OutputSchema:
        """Build the schema of a pydantic model."""
        return cls(name=model.__name__[:64], schema=model.model_json_schema())


@runtime_checkable
class LLM(Protocol):
    """What memhub needs from a language model: validated structured answers."""

    model_name: str

    async def generate_structured(
        self,
        messages: Sequence[ChatMessage],
        response_model: type[T],
        *,
        temperature: float | None = None,
    ) -> StructuredResult[T]:
        """Answer ``messages`` with an instance of ``response_model``."""
        ...

    async def aclose(self) -> None:
        """Release connections; the instance is unusable afterwards."""
        ...


class BaseLLM(ABC):
    """Template for adapters: subclasses implement ``_complete`` and, if needed, ``aclose``.

    Args:
        model_name: The model to ask, as the server names it.
        temperature: Sampling temperature used when a call does not pass one.
    """

    def __init__(self, model_name: str, *, temperature: float = 0.0) -> None:
        self.model_name = model_name
        self.temperature = temperature

    @abstractmethod
    async def _complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float,
        output_schema: OutputSchema | None,
    ) -> Completion:
        """Make one chat request and return its text.

        Args:
            messages: The conversation to send.
            temperature: Sampling temperature.
            output_schema: The JSON shape expected, to enforce server-side where supported;
                ``None`` for free text.

        Raises:
            ProviderHTTPError: The server failed or did not answer in time (after retries).
            ProviderOutputError: The server's response is not a usable chat completion.
        """

    async def complete(
        self, messages: Sequence[ChatMessage], *, temperature: float | None = None
    ) -> Completion:
        """Return the model's free-text answer to ``messages``.

        Args:
            messages: The conversation to send.
            temperature: Sampling temperature; the client's default if ``None``.

        Raises:
            ProviderHTTPError: The server failed or did not answer in time (after retries).
            ProviderOutputError: The server's response is not a usable chat completion.
        """
        return await self._complete(
            messages, temperature=self._temperature(temperature), output_schema=None
        )

    async def generate_structured(
        self,
        messages: Sequence[ChatMessage],
        response_model: type[T],
        *,
        temperature: float | None = None,
    ) -> StructuredResult[T]:
        """Answer ``messages`` with a validated instance of ``response_model``.

        The schema is stated in the prompt and, where the server supports it, enforced by
        the server. Output that does not validate gets one repair request showing the model
        its output and the validation error.

        Args:
            messages: The conversation to send.
            response_model: The pydantic model the answer must satisfy.
            temperature: Sampling temperature; the client's default if ``None``.

        Returns:
            The value, usage summed over all calls, and the raw text it was parsed from.

        Raises:
            ProviderHTTPError: The server failed or did not answer in time (after retries).
            ProviderOutputError: The output did not validate, even after the repair request;
                ``raw`` holds the last output.
        """
        schema = OutputSchema.for_model(response_model)
        prompt = with_schema_instruction(messages, schema)
        chosen = self._temperature(temperature)
        first = await self._complete(prompt, temperature=chosen, output_schema=schema)
        try:
            value = parse_structured(first.text, response_model)
        except ProviderOutputError as exc:
            log.info(
                "%s: output is not a valid %s (%s); asking once for a repair",
                self.model_name,
                response_model.__name__,
                exc,
            )
            repair = repair_messages(prompt, first.text, str(exc))
            second = await self._complete(repair, temperature=chosen, output_schema=schema)
            usage = first.usage + second.usage
            return StructuredResult(
                _parse_repaired(second, response_model, self.model_name, usage),
                usage,
                second.text,
            )
        return StructuredResult(value, first.usage, first.text)

    async def aclose(self) -> None:
        """Release connections; the instance is unusable afterwards."""
        return None  # adapters without connections have nothing to release

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _temperature(self, temperature: float | None) -> float:
        return self.temperature if temperature is None else temperature


def _parse_repaired(
    completion: Completion, response_model: type[T], model_name: str, usage: Usage
) -> T:
    try:
        return parse_structured(completion.text, response_model)
    except ProviderOutputError as exc:
        raise UnusableAnswerError(
            f"{model_name} did not produce a valid {response_model.__name__} "
            f"even after a repair request: {exc}",
            raw=completion.text,
            usage=usage,
        ) from exc


def with_schema_instruction(
    messages: Sequence[ChatMessage], schema: OutputSchema
) -> list[ChatMessage]:
    """Return ``messages`` with an instruction to answer as JSON of ``schema``.

    The instruction joins the first system message, or becomes one, because some chat
    templates reject a system message anywhere but first. It is added even when the server
    enforces the schema: the model writes better values when it sees the field
    descriptions, and prompt-only servers need it anyway.
    """
    instruction = (
        "Respond with a single JSON object that conforms to this JSON schema, "
        "and nothing else (no prose, no code fences):\n"
        + json.dumps(schema.schema, ensure_ascii=False)
    )
    result = list(messages)
    if result and result[0]["role"] == "system":
        result[0] = {"role": "system", "content": f"{result[0]['content']}\n\n{instruction}"}
    else:
        result.insert(0, {"role": "system", "content": instruction})
    return result


def repair_messages(
    prompt: Sequence[ChatMessage], bad_output: str, error: str
) -> list[ChatMessage]:
    """Return the conversation that asks the model to correct its unusable output."""
    return [
        *prompt,
        {"role": "assistant", "content": bad_output},
        {
            "role": "user",
            "content": (
                "Your reply could not be used: "
                f"{error}\nReply again with only the corrected JSON object that conforms "
                "to the schema: no explanation, no code fences."
            ),
        },
    ]
