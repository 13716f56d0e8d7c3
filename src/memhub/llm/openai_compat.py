"""LLM adapter for any OpenAI-compatible chat server: OpenAI, vLLM, Ollama, llama.cpp, LM Studio.

Built on the ``openai`` SDK, imported only here; its exceptions are translated at this boundary.
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
from memhub.llm.openai_errors import excerpt, translate_openai_errors

__all__ = ["OPENAI_BASE_URL", "OpenAICompatibleLLM", "StructuredOutputMode"]

log = logging.getLogger(__name__)

StructuredOutputMode = Literal["auto", "json_schema", "json_object", "none"]
_Mode = Literal["json_schema", "json_object", "none"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
# What "auto" tries next when a server rejects a response_format.
_FALLBACK: dict[_Mode, _Mode] = {"json_schema": "json_object", "json_object": "none"}
_REJECTION_MARKERS = ("response_format", "json_schema", "json_object")


class OpenAICompatibleLLM(BaseLLM):
    """An ``LLM`` talking to an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Transient failures (429, 408, 409, 5xx, timeouts, refused connections) are retried by the
    SDK with exponential backoff and jitter, honouring ``Retry-After``; ``timeout`` bounds
    each attempt, so a call fails after at most about ``(max_retries + 1) * timeout`` plus
    backoff.

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
        timeout: float = 60.0,
        max_retries: int = 3,
        structured_output: StructuredOutputMode = "auto",
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> None:
        super().__init__(model, temperature=temperature)
        _check_settings(model, base_url, timeout, max_retries, structured_output, max_tokens)
        self.base_url = (base_url or OPENAI_BASE_URL).rstrip("/")
        if api_key is None and self.base_url == OPENAI_BASE_URL:
            # The SDK would read OPENAI_API_KEY itself; memhub reads the environment only in
            # from_env(), so the key must be passed in.
            raise ConfigurationError(
                "OpenAI needs an api_key; pass api_key=..., e.g. os.environ['OPENAI_API_KEY']"
            )
        self.timeout = timeout
        self.max_tokens = max_tokens
        self._auto = structured_output == "auto"
        self._mode: _Mode = "json_schema" if structured_output == "auto" else structured_output
        self._client = openai.AsyncOpenAI(
            api_key=api_key or "not-needed",
            base_url=self.base_url,
            timeout=timeout,
            max_retries=max_retries,
        )

    @property
    def structured_output(self) -> _Mode:
        """The enforcement mode in use now (``"auto"`` resolves to one of the others)."""
        return self._mode

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLM(model={self.model_name!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()

    async def _complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float,
        output_schema: OutputSchema | None,
    ) -> Completion:
        while True:
            mode: _Mode = self._mode if output_schema is not None else "none"
            try:
                with translate_openai_errors(
                    f"LLM {self.model_name!r} at {self.base_url}", self.timeout
                ):
                    response = await self._client.chat.completions.create(
                        model=self.model_name,
                        messages=_to_sdk_messages(messages),
                        temperature=temperature,
                        response_format=_response_format(mode, output_schema),
                        max_tokens=self._limit_as("max_tokens"),
                        max_completion_tokens=self._limit_as("max_completion_tokens"),
                    )
            except ProviderHTTPError as exc:
                if not self._fall_back(mode, exc):
                    raise
                continue
            return _to_completion(response)

    def _limit_as(self, parameter: str) -> int | openai.Omit:
        # OpenAI's reasoning models reject max_tokens; local servers may not know the new name.
        wanted = "max_completion_tokens" if self.base_url == OPENAI_BASE_URL else "max_tokens"
        if self.max_tokens is None or parameter != wanted:
            return openai.omit
        return self.max_tokens

    def _fall_back(self, mode: _Mode, exc: ProviderHTTPError) -> bool:
        """Step ``auto`` down one mode if ``exc`` rejects the response_format; say if it did."""
        if not self._auto or mode == "none" or not _rejects_response_format(exc):
            return False
        if self._mode == mode:  # a concurrent call may have stepped down already
            self._mode = _FALLBACK[mode]
            log.warning(
                "%r rejected response_format %s (%s); using %s from now on",
                self,
                mode,
                exc,
                self._mode,
            )
        return True


def _check_settings(
    model: str,
    base_url: str | None,
    timeout: float,
    max_retries: int,
    structured_output: str,
    max_tokens: int | None,
) -> None:
    if not model:
        raise ConfigurationError("an LLM model name is required, e.g. model='qwen2.5:7b'")
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise ConfigurationError(f"LLM base_url must start with http:// or https://: {base_url!r}")
    if timeout <= 0:
        raise ConfigurationError(f"LLM timeout must be positive seconds, got {timeout!r}")
    if max_retries < 0:
        raise ConfigurationError(f"LLM max_retries must be >= 0, got {max_retries!r}")
    if structured_output not in get_args(StructuredOutputMode):
        raise ConfigurationError(
            f"structured_output must be one of {get_args(StructuredOutputMode)}, "
            f"got {structured_output!r}"
        )
    if max_tokens is not None and max_tokens <= 0:
        raise ConfigurationError(f"LLM max_tokens must be positive, got {max_tokens!r}")


def _response_format(mode: _Mode, schema: OutputSchema | None) -> ResponseFormat | openai.Omit:
    if schema is None or mode == "none":
        return openai.omit
    if mode == "json_object":
        return {"type": "json_object"}
    # strict=False: OpenAI's strict mode refuses common pydantic schemas (defaults, optional
    # fields without "required"), and local servers enforce the schema either way.
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.name, "schema": schema.schema, "strict": False},
    }


def _rejects_response_format(exc: ProviderHTTPError) -> bool:
    if exc.status_code == 422:
        return True
    if exc.status_code != 400:
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
