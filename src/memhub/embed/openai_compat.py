"""Embeddings from any server that speaks OpenAI's ``/v1/embeddings``: OpenAI, vLLM, Ollama, TEI.

The ``openai`` SDK does the HTTP, the retries (exponential backoff, honouring Retry-After)
and the timeout; this module batches, checks the answer and translates the SDK's errors.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import openai

from memhub.embed.base import check_texts, empty_matrix, normalise_rows
from memhub.errors import ConfigurationError, ProviderHTTPError, ProviderOutputError, UsageError

__all__ = ["OpenAIEmbedder"]

logger = logging.getLogger(__name__)

#: Local servers (vLLM, Ollama, TEI) ignore the key, but the SDK refuses to start without one.
_PLACEHOLDER_KEY = "not-needed"
_PROBE_TEXT = "dimension probe"


class OpenAIEmbedder:
    """An embedder backed by an OpenAI-compatible embeddings endpoint.

    The vector length is fixed per database, so it must be known before the database is
    created. Pass ``dimension`` when you know it; otherwise call :meth:`probe_dimension`
    once (it embeds one short text), or let the first :meth:`embed` learn it. Until then
    :attr:`dimension` raises :class:`~memhub.ConfigurationError`.

    Args:
        model: The model name the server expects; recorded in the database as
            :attr:`model_name`.
        base_url: The API root, ending in ``/v1`` (e.g. ``http://localhost:8000/v1`` for
            vLLM). ``None`` means the SDK's default: ``OPENAI_BASE_URL`` or OpenAI itself.
        api_key: The bearer token. ``None`` means ``OPENAI_API_KEY`` if set, else a
            placeholder that local servers accept.
        dimension: The expected vector length; answers of another length are refused.
        batch_size: Texts per request.
        timeout: Seconds per HTTP attempt.
        max_retries: Retries after a connection error, a timeout, 408, 409, 429 or 5xx.
        send_dimensions: Also send ``dimensions`` in each request, so models that can
            shorten their vectors (OpenAI's text-embedding-3-*) return ``dimension`` values.
            Off by default: many local servers reject the parameter.

    Raises:
        UsageError: An argument is out of range.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        dimension: int | None = None,
        batch_size: int = 128,
        timeout: float = 30.0,
        max_retries: int = 3,
        *,
        send_dimensions: bool = False,
    ) -> None:
        _check_arguments(model, dimension, batch_size, timeout, max_retries, send_dimensions)
        if api_key is None:
            api_key = os.environ.get("OPENAI_API_KEY") or _PLACEHOLDER_KEY
        self._model = model
        self._dimension = dimension
        self._batch_size = batch_size
        self._send_dimensions = send_dimensions
        self._client = openai.AsyncOpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self._model!r}, base_url={self.base_url!r})"

    @property
    def base_url(self) -> str:
        """The server's API root (OpenAI's, or ``OPENAI_BASE_URL``, when none was given)."""
        return str(self._client.base_url)

    @property
    def dimension(self) -> int:
        """The vector length.

        Raises:
            ConfigurationError: It is not known yet: pass ``dimension=`` or await
                :meth:`probe_dimension` first.
        """
        if self._dimension is None:
            raise ConfigurationError(
                f"the dimension of {self._model!r} is not known yet; pass dimension= "
                "or await probe_dimension() first"
            )
        return self._dimension

    @property
    def model_name(self) -> str:
        """The model name given at construction."""
        return self._model

    async def probe_dimension(self) -> int:
        """Return the vector length, asking the server with one short text if not yet known.

        Raises:
            ProviderHTTPError: The server failed or could not be reached.
            ProviderOutputError: Its answer was unusable.
        """
        if self._dimension is None:
            await self.embed([_PROBE_TEXT])
        return self.dimension

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed texts, ``batch_size`` per request, one request at a time.

        Args:
            texts: The texts, in order.

        Returns:
            float32 array of shape ``(len(texts), dimension)`` with unit-length rows.

        Raises:
            UsageError: ``texts`` is a bare string or holds non-strings.
            ConfigurationError: The dimension is unknown and ``texts`` is empty.
            ProviderHTTPError: The server failed after the retries, or could not be reached.
            ProviderOutputError: Its answer was unusable (wrong count, wrong length, not JSON).
        """
        items = check_texts(texts)
        if not items:
            return empty_matrix(self.dimension)
        parts = [
            await self._embed_batch(items[start : start + self._batch_size])
            for start in range(0, len(items), self._batch_size)
        ]
        return np.concatenate(parts)

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()

    async def _embed_batch(self, batch: list[str]) -> npt.NDArray[np.float32]:
        extra: dict[str, Any] = {}
        if self._send_dimensions and self._dimension is not None:
            extra["dimensions"] = self._dimension
        with _translate_sdk_errors(self._model):
            # "float" explicitly: the SDK would ask for base64, which not every server speaks.
            response = await self._client.embeddings.create(
                model=self._model, input=batch, encoding_format="float", **extra
            )
        matrix = _to_matrix(response, len(batch), self._model)
        if self._dimension is None:
            self._dimension = matrix.shape[1]
            logger.info("learned dimension %s of embedding model %s", self._dimension, self._model)
        elif matrix.shape[1] != self._dimension:
            raise ProviderOutputError(
                f"{self._model!r} returned vectors of length {matrix.shape[1]}, "
                f"expected {self._dimension}"
            )
        return normalise_rows(matrix)


def _check_arguments(
    model: str,
    dimension: int | None,
    batch_size: int,
    timeout: float,
    max_retries: int,
    send_dimensions: bool,
) -> None:
    if not model:
        raise UsageError("model must name the embedding model the server serves")
    if dimension is not None and dimension < 1:
        raise UsageError(f"dimension must be positive, got {dimension}")
    if send_dimensions and dimension is None:
        raise UsageError("send_dimensions=True needs dimension=")
    if batch_size < 1:
        raise UsageError(f"batch_size must be at least 1, got {batch_size}")
    if timeout <= 0:
        raise UsageError(f"timeout must be positive, got {timeout}")
    if max_retries < 0:
        raise UsageError(f"max_retries must not be negative, got {max_retries}")


@contextlib.contextmanager
def _translate_sdk_errors(model: str) -> Iterator[None]:
    """Turn the openai SDK's exceptions into memhub's provider errors."""
    try:
        yield
    except openai.APIStatusError as exc:
        raise ProviderHTTPError(
            f"embedding server answered {exc.status_code} for {model!r}: {exc.message}",
            status_code=exc.status_code,
        ) from exc
    except openai.APIConnectionError as exc:  # includes APITimeoutError
        raise ProviderHTTPError(f"embedding server unreachable for {model!r}: {exc}") from exc
    except openai.APIResponseValidationError as exc:
        raise ProviderOutputError(
            f"embedding server sent an invalid answer for {model!r}: {exc}"
        ) from exc
    except openai.APIError as exc:  # any other failure of the exchange itself
        raise ProviderHTTPError(f"embedding request failed for {model!r}: {exc}") from exc
    except ValueError as exc:  # the SDK lets json.JSONDecodeError through for a broken body
        raise ProviderOutputError(
            f"embedding server sent a body that is not JSON for {model!r}: {exc}"
        ) from exc


def _to_matrix(response: Any, expected_rows: int, model: str) -> npt.NDArray[np.float64]:
    """Check an embeddings response and return its vectors in input order."""
    # The SDK builds response objects without validating them, so anything may be missing.
    data = getattr(response, "data", None)
    if not isinstance(data, list) or len(data) != expected_rows:
        count = len(data) if isinstance(data, list) else None
        raise ProviderOutputError(
            f"{model!r} returned {count} embeddings for {expected_rows} texts", raw=repr(response)
        )
    # Servers may answer out of order; "index" says which input each vector belongs to.
    # With as many items as texts, equal sets mean every index appears exactly once.
    if {getattr(item, "index", None) for item in data} != set(range(expected_rows)):
        raise ProviderOutputError(
            f"{model!r} returned embeddings whose indices are not 0..{expected_rows - 1}",
            raw=repr(response),
        )
    ordered = sorted(data, key=lambda item: int(item.index))
    try:
        matrix = np.array([item.embedding for item in ordered], dtype=np.float64)
    except (AttributeError, TypeError, ValueError) as exc:
        raise ProviderOutputError(
            f"{model!r} returned embeddings that are not lists of numbers of one length",
            raw=repr(response),
        ) from exc
    if matrix.ndim != 2 or matrix.shape[1] == 0 or not np.isfinite(matrix).all():
        raise ProviderOutputError(
            f"{model!r} returned empty or non-finite embeddings", raw=repr(response)
        )
    return matrix
