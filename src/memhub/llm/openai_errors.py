"""The ``openai`` SDK's exceptions as memhub's error tree: one translation for every client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import openai

from memhub.errors import ProviderError, ProviderHTTPError, ProviderOutputError

__all__ = ["excerpt", "translate_openai_errors"]

_EXCERPT = 300


def excerpt(value: object) -> str:
    """A short, printable piece of a response body for an error message."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "..."


@contextmanager
def translate_openai_errors(where: str, timeout: float | None = None) -> Iterator[None]:
    """Re-raise what the SDK raises (after its own retries) as ``Provider*Error``.

    Args:
        where: Names the model and server in every message, e.g. ``"LLM 'x' at http://…"``.
        timeout: The per-attempt timeout, quoted when the server did not answer in time.
    """
    try:
        yield
    except openai.APITimeoutError as exc:  # before APIConnectionError, its base class
        within = f" within {timeout} s" if timeout is not None else " in time"
        raise ProviderHTTPError(f"{where} did not answer{within}") from exc
    except openai.APIConnectionError as exc:
        raise ProviderHTTPError(f"cannot reach {where}: {exc}") from exc
    except openai.APIStatusError as exc:
        raise ProviderHTTPError(
            f"{where} answered HTTP {exc.status_code}: {excerpt(exc.body or exc.message)}",
            status_code=exc.status_code,
        ) from exc
    except (openai.APIResponseValidationError, json.JSONDecodeError) as exc:
        raise ProviderOutputError(f"{where} sent a malformed response: {exc}") from exc
    except openai.OpenAIError as exc:
        raise ProviderError(f"{where} failed: {exc}") from exc
