"""The one client for OpenAI-compatible ``/v1/chat/completions``: consolidation and agents.

Settings checks, defaults, the token-limit parameter's name and SDK error translation live
here once; :class:`~memhub.llm.OpenAICompatibleLLM` and ``memhub.agent.OpenAIChatModel`` only
shape requests and read answers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import openai
from openai import AsyncStream
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from memhub.errors import ConfigurationError
from memhub.llm.openai_errors import translate_openai_errors

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "OPENAI_BASE_URL",
    "OpenAIChatClient",
]

OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 3
# Local servers ignore the bearer token, but the SDK refuses to send none.
_PLACEHOLDER_KEY = "not-needed"


class OpenAIChatClient:
    """An OpenAI-compatible chat endpoint, a model on it, and how to call it.

    Transient failures (429, 408, 409, 5xx, timeouts, refused connections) are retried by the
    SDK with exponential backoff and jitter, honouring ``Retry-After``; ``timeout`` bounds each
    attempt. What still fails is raised as :class:`~memhub.errors.ProviderHTTPError` (or
    ``ProviderOutputError`` for a malformed body), naming the model and the server.

    Args:
        model: The model name as the server knows it.
        base_url: The server's ``/v1`` URL; OpenAI's when ``None``.
        api_key: Bearer token. Required for OpenAI; local servers get a placeholder.
        timeout: Seconds each attempt may take.
        max_retries: Retries of transient failures, on top of the first attempt.
        max_tokens: Cap on generated tokens per call; the server's default if ``None``.
        client: An ``openai.AsyncOpenAI`` to send through instead of building one (its own
            timeout and retries then apply).
        purpose: Names the client in error messages (``"LLM"``, ``"chat model"``).

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
        max_tokens: int | None = None,
        client: openai.AsyncOpenAI | None = None,
        purpose: str = "LLM",
    ) -> None:
        _check_settings(model, base_url, timeout, max_retries, max_tokens)
        self.model = model
        self.base_url = (base_url or OPENAI_BASE_URL).rstrip("/")
        if client is None and api_key is None and self.base_url == OPENAI_BASE_URL:
            # The SDK would read OPENAI_API_KEY itself; memhub reads the environment only in
            # from_env(), so the key must be passed in.
            raise ConfigurationError(
                "OpenAI needs an api_key; pass api_key=..., e.g. os.environ['OPENAI_API_KEY']"
            )
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self._where = f"{purpose} {model!r} at {self.base_url}"
        self._client = client or openai.AsyncOpenAI(
            api_key=api_key or _PLACEHOLDER_KEY,
            base_url=self.base_url,
            timeout=timeout,
            max_retries=max_retries,
        )

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()

    async def create(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        retries: int | None = None,
        **options: Any,
    ) -> ChatCompletion:
        """Send one chat request and return the whole completion.

        Args:
            messages: The conversation, as OpenAI message dicts.
            retries: Retries for this request instead of the client's: ``0`` for a request
                whose failure may say what the server cannot do (a rejected
                ``response_format``) rather than report a fault.
            **options: Further request fields (``temperature``, ``tools``, ``response_format``).

        Raises:
            ProviderHTTPError: The server failed or did not answer in time (after retries).
            ProviderOutputError: The body is not JSON the SDK can read.
        """
        client = self._client
        if retries is not None:
            client = client.with_options(max_retries=retries)
        with translate_openai_errors(self._where, self.timeout):
            response: ChatCompletion = await client.chat.completions.create(
                **self._request(messages, options)
            )
        return response

    @asynccontextmanager
    async def stream(
        self, messages: Sequence[Mapping[str, Any]], **options: Any
    ) -> AsyncIterator[AsyncStream[ChatCompletionChunk]]:
        """Send one streamed chat request; the last chunk carries the usage.

        The stream is closed on exit, even when it is abandoned half-read, so it does not keep
        its connection; errors while reading are translated like :meth:`create`'s.
        """
        request = self._request(messages, options)
        request |= {"stream": True, "stream_options": {"include_usage": True}}
        with translate_openai_errors(self._where, self.timeout):
            chunks: AsyncStream[ChatCompletionChunk] = await self._client.chat.completions.create(
                **request
            )
            try:
                yield chunks
            finally:
                await chunks.close()

    def _request(
        self, messages: Sequence[Mapping[str, Any]], options: Mapping[str, Any]
    ) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if self.max_tokens is not None:
            # OpenAI's reasoning models reject max_tokens; local servers may not know the
            # newer name.
            limit = "max_completion_tokens" if self.base_url == OPENAI_BASE_URL else "max_tokens"
            request[limit] = self.max_tokens
        request.update(options)
        return request


def _check_settings(
    model: str,
    base_url: str | None,
    timeout: float,
    max_retries: int,
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
    if max_tokens is not None and max_tokens <= 0:
        raise ConfigurationError(f"LLM max_tokens must be positive, got {max_tokens!r}")
