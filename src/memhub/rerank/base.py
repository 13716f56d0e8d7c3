"""The contract every reranker meets: scores for (query, passage) pairs.

I/O-free: nothing here imports a model runtime or an HTTP client.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

__all__ = ["Reranker"]


@runtime_checkable
class Reranker(Protocol):
    """Scores (query, passage) pairs; a higher score is more relevant.

    Scores may be relevances in [0, 1] or logits; the search that uses them
    (:func:`memhub.engine.rerank.rerank_scored`) tells the two apart.
    """

    async def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score per passage, in order."""
        ...

    async def aclose(self) -> None:
        """Release the reranker's resources (a loaded session, pooled connections)."""
        ...
