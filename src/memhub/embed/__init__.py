"""Embedders: the :class:`Embedder` protocol, the in-process default and OpenAI-compatible servers.

Importing this package loads no model runtime or SDK; the provider classes load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memhub._lazy import lazy_names
from memhub.embed.base import Embedder
from memhub.embed.factory import create_embedder, known_providers

if TYPE_CHECKING:
    from memhub.embed.onnx_minilm import MiniLMEmbedder
    from memhub.embed.openai_compat import OpenAIEmbedder

__all__ = ["Embedder", "MiniLMEmbedder", "OpenAIEmbedder", "create_embedder", "known_providers"]

#: Public names whose modules import heavy dependencies: loaded on first attribute access.
_LAZY = {
    "MiniLMEmbedder": "memhub.embed.onnx_minilm",
    "OpenAIEmbedder": "memhub.embed.openai_compat",
}

__getattr__, __dir__ = lazy_names(__name__, _LAZY)
