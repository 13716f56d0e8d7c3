"""LLM adapter for any OpenAI-compatible chat server: OpenAI, vLLM, Ollama, llama.cpp, LM Studio.

Requests go through :class:`~memhub.llm.openai_chat.OpenAIChatClient`, the one chat client
memhub has; this module adds structured output and its fallbacks.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Literal, get_args

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from openai.types.chat.completion_create_params import ResponseFormat

from memhub.errors import (
    ConfigurationError,
    ProviderHTTPError,
    ProviderOutputError,
    UsageError,
)
from memhub.llm.base import BaseLLM, ChatMessage, Completion, OutputSchema, Usage
from memhub.llm.openai_chat import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    OPENAI_BASE_URL,
    OpenAIChatClient,
)
from memhub.llm.openai_errors import excerpt

__all__ = ["OPENAI_BASE_URL", "OpenAICompatibleLLM", "StructuredOutputMode"]

log = logging.getLogger(__name__)

StructuredOutputMode = Literal["auto", "json_schema", "json_object", "none"]
_Mode = Literal["json_schema", "json_object", "none"]

# What "auto" tries next when a server rejects a response_format.
_FALLBACK: dict[_Mode, _Mode] = {"json_schema": "json_object", "json_object": "none"}
_REJECTION_MARKERS = ("response_format", "json_schema", "json_object")


class OpenAICompatibleLLM(BaseLLM):
    """An ``LLM`` talking to an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Transient failures are retried by :class:`~memhub.llm.openai_chat.OpenAIChatClient`;
    a call fails after at most about ``(max_retries + 1) * timeout`` plus backoff.

    Args:
        model: The model name as the server knows it.
        base_url: The server's ``/v1`` URL; OpenAI's when ``None``.
        api_key: Bearer token. Required for OpenAI; local servers get ``"not-needed"``.
        timeout: Seconds each attempt may take before it is abandoned.
        max_retries: Retries of transient failures, on top of the first attempt.
        structured_output: How JSON answers are enforced: ``"json_schema"`` (server-side
            schema), ``"json_object"`` (server-side JSON mode), ``"none"`` (prompt only), or
            ``"auto"``: start with ``json_schema`` and step down, once per client, when the
            server rejects the ``response_format``.
        temperature: Default sampling temperature.
        max_tokens: Cap on generated tokens per call; the server's default if ``None``.

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
        structured_output: StructuredOutputMode = "auto",
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> None:
        super().__init__(model, temperature=temperature)
        if structured_output not in get_args(StructuredOutputMode):
            raise ConfigurationError(
                f"structured_output must be one of {get_args(StructuredOutputMode)}, "
                f"got {structured_output!r}"
            )
        self.chat = OpenAIChatClient(
            model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            max_tokens=max_tokens,
        )
        self._auto = structured_output == "auto"
        self._mode: _Mode = "json_schema" if structured_output == "auto" else structured_output
        self._confirmed = False  # has the server accepted the current mode once?

    @property
    def base_url(self) -> str:
        """The server's ``/v1`` URL."""
        return self.chat.base_url

    @property
    def structured_output(self) -> _Mode:
        """The enforcement mode in use now (``"auto"`` resolves to one of the others)."""
        return self._mode

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLM(model={self.model_name!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self.chat.aclose()

    async def _complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float,
        output_schema: OutputSchema | None,
    ) -> Completion:
        retries: int | None = None
        while True:
            mode: _Mode = self._mode if output_schema is not None else "none"
            # Until the server has taken this response_format once, a failure is sent only
            # once: llama-cpp-python answers an unknown format with HTTP 500, which the SDK
            # would otherwise retry with backoff before memhub could step down.
            untried = self._auto and mode != "none" and not self._confirmed
            try:
                response = await self.chat.create(
                    _to_sdk_messages(messages),
                    retries=0 if untried else retries,
                    temperature=temperature,
                    **_response_format(mode, output_schema),
                )
            except ProviderHTTPError as exc:
                if self._fall_back(mode, exc):
                    continue
                if untried and _retryable(exc) and self.chat.max_retries > 0:
                    # not a rejection but a fault: the remaining retries, as usual
                    self._confirmed = True
                    retries = self.chat.max_retries - 1
                    continue
                raise
            if mode != "none":
                self._confirmed = True
            return _to_completion(response)

    def _fall_back(self, mode: _Mode, exc: ProviderHTTPError) -> bool:
        """Step ``auto`` down one mode if ``exc`` rejects the response_format; say if it did."""
        if not self._auto or mode == "none" or not _rejects_response_format(exc):
            return False
        if self._mode == mode:  # a concurrent call may have stepped down already
            self._mode = _FALLBACK[mode]
            self._confirmed = False
            log.warning(
                "%r rejected response_format %s (%s); using %s for this client's life",
                self,
                mode,
                exc,
                self._mode,
            )
        return True


def _response_format(mode: _Mode, schema: OutputSchema | None) -> dict[str, ResponseFormat]:
    """The ``response_format`` request field for ``mode``, or no field at all."""
    if schema is None or mode == "none":
        return {}
    if mode == "json_object":
        return {"response_format": {"type": "json_object"}}
    # strict=False: OpenAI's strict mode refuses common pydantic schemas (defaults, optional
    # fields without "required"), and local servers enforce the schema either way.
    return {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": schema.name, "schema": schema.schema, "strict": False},
        }
    }


def _retryable(exc: ProviderHTTPError) -> bool:
    # What the SDK retries itself: no status (timeout, refused), 408, 409, 429, 5xx.
    status = exc.status_code
    return status is None or status in (408, 409, 429) or status >= 500


def _rejects_response_format(exc: ProviderHTTPError) -> bool:
    # vLLM and OpenAI answer 400, FastAPI servers 422, llama-cpp-python 0.3 answers 500 (its
    # pydantic error: "'response_format', 'type' ... Input should be 'text' or 'json_object'
    # ... input: 'json_schema'"); only a body that names the field counts as a rejection.
    if exc.status_code not in (400, 422, 500):
        return False
    cause = exc.__cause__
    detail = str(exc)
    if isinstance(cause, openai.APIStatusError):
        detail += json.dumps(cause.body, default=str)
    return any(marker in detail.lower() for marker in _REJECTION_MARKERS)


def _to_sdk_messages(messages: Sequence[ChatMessage]) -> list[ChatCompletionMessageParam]:
    result: list[ChatCompletionMessageParam] = []
    for message in messages:
        role, content = message["role"], message["content"]
        if role == "system":
            result.append({"role": "system", "content": content})
        elif role == "assistant":
            result.append({"role": "assistant", "content": content})
        elif role == "user":
            result.append({"role": "user", "content": content})
        else:
            raise UsageError(f"unsupported chat role {role!r}; use system, user or assistant")
    return result


def _to_completion(response: object) -> Completion:
    # Without strict validation the SDK hands back the body text of a non-JSON response and
    # builds models without checking required fields, so the shape is checked here.
    if not isinstance(response, ChatCompletion) or not getattr(response, "choices", None):
        raise ProviderOutputError(
            f"the LLM server did not return a chat completion: {excerpt(response)}",
            raw=response if isinstance(response, str) else None,
        )
    choice = response.choices[0]
    message = getattr(choice, "message", None)
    text = getattr(message, "content", None) or ""
    usage = getattr(response, "usage", None)
    return Completion(
        text=text,
        usage=Usage(
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            calls=1,
        ),
        finish_reason=getattr(choice, "finish_reason", None),
    )
