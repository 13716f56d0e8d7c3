"""Rerankers: the :class:`Reranker` protocol, a local cross-encoder and ``/rerank`` servers.

The second ranking pass of ``search(..., rerank=...)``; :mod:`memhub.engine.rerank` uses
one, :class:`memhub.memory.services.Services` builds it once from the settings. Importing
this package loads no model runtime nor HTTP client: the provider classes load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memhub._lazy import lazy_names
from memhub.rerank.base import Reranker
from memhub.rerank.factory import known_rerankers, reranker_from_settings

if TYPE_CHECKING:
    from memhub.rerank.cross_encoder import CrossEncoderReranker
    from memhub.rerank.http import HttpReranker

__all__ = [
    "CrossEncoderReranker",
    "HttpReranker",
    "Reranker",
    "known_rerankers",
    "reranker_from_settings",
]

#: Public names whose modules import heavy dependencies: loaded on first attribute access.
_LAZY = {
    "CrossEncoderReranker": "memhub.rerank.cross_encoder",
    "HttpReranker": "memhub.rerank.http",
}

__getattr__, __dir__ = lazy_names(__name__, _LAZY)
