"""The reranker the settings name (``MEMHUB_RERANKER``): a local cross-encoder or a
``/rerank`` server.

Nothing is loaded here: a cross-encoder loads its model on first use.
"""

from __future__ import annotations

from memhub.config import MemhubSettings
from memhub.errors import ConfigurationError
from memhub.rerank.base import Reranker

__all__ = ["known_rerankers", "reranker_from_settings"]

_LOCAL = ("cross-encoder", "cross_encoder", "local")
_SERVED = ("tei", "cohere", "vllm", "jina")


def known_rerankers() -> tuple[str, ...]:
    """The names ``MEMHUB_RERANKER`` takes besides ``none`` (and unset): no reranker."""
    return (*_LOCAL, *_SERVED)


def reranker_from_settings(settings: MemhubSettings) -> Reranker | None:
    """The reranker the settings configure, or None (``MEMHUB_RERANKER`` unset or ``none``).

    ``cross-encoder`` runs the directory ``MEMHUB_RERANKER_MODEL`` in-process
    (``MEMHUB_EMBEDDER_THREADS`` threads); ``tei``, ``cohere``, ``vllm`` and ``jina`` call
    ``MEMHUB_RERANKER_BASE_URL`` in that server's shape, sending ``MEMHUB_RERANKER_MODEL``
    and ``MEMHUB_RERANKER_API_KEY`` if set.

    Raises:
        ConfigurationError: An unknown kind, or a setting it needs is missing.
    """
    kind = (settings.reranker or "").strip().lower()
    if not kind or kind == "none":
        return None
    model = settings.reranker_model
    if kind in _LOCAL:
        if not model:
            raise ConfigurationError(
                "MEMHUB_RERANKER=cross-encoder needs MEMHUB_RERANKER_MODEL, the directory"
            )
        from memhub.rerank.cross_encoder import CrossEncoderReranker

        return CrossEncoderReranker(model, threads=settings.embedder_threads)
    if kind in _SERVED:
        if not settings.reranker_base_url:
            raise ConfigurationError(
                f"MEMHUB_RERANKER={kind} needs MEMHUB_RERANKER_BASE_URL (the server's root)"
            )
        from memhub.rerank.http import HttpReranker

        key = settings.reranker_api_key
        return HttpReranker(
            settings.reranker_base_url,
            model=model,
            api="tei" if kind == "tei" else "cohere",
            api_key=None if key is None else key.get_secret_value(),
        )
    raise ConfigurationError(
        f"unknown reranker {settings.reranker!r}; known: cross-encoder, tei, cohere, vllm, jina"
    )
